// The benchmark that `collbench compare … -- <program> <args…>` runs for every combination (an nccl-tests name or
// `collbench [run] <collective>`), parsed with the program's own option parser so that a bad flag is refused before
// anything runs, and turned into a child's argument array (never a shell).
import { basename } from 'node:path';
import { UsageError } from '../core/errors.js';
import { PROGRAMS, type CollectiveName } from '../core/types.js';
import type { ResolvedOptions } from '../config/flags.js';
import { collectiveFromProgram, parseCommandLine, programBase } from '../config/run-options.js';
import { crowdingRefusal } from '../launch/mpirun.js';
import type { ProgramSpec } from './program-spec.js';
import { isReplayProgram, parseReplayProgram } from './replay.js';
import type { Combination } from './settings.js';

function unknown(word: string): UsageError {
  return new UsageError(
    `compare: unknown program '${word}' after --; give one of ${PROGRAMS.join(', ')}, or collbench <collective>`,
  );
}

/** Output flags compare sets itself (-J) or that would make every combination overwrite one file. */
const OWN_OUTPUTS: [keyof ResolvedOptions, string][] = [
  ['jsonFile', '-J'],
  ['csvFile', '--csv'],
  ['mdFile', '--md'],
  ['junitFile', '--junit'],
  ['htmlFile', '--html'],
];

function parsed(args: string[], program: string, shown = basename(program)): ResolvedOptions {
  let p;
  try {
    p = parseCommandLine(args, program);
  } catch (e) {
    if (e instanceof UsageError) throw new UsageError(`compare: ${shown}: ${e.message}`, e.flag);
    throw e;
  }
  if (p.kind !== 'run')
    throw new UsageError(`compare: the program's arguments ask for --${p.kind}; give a benchmark to run`);
  return p.options;
}

/** Parses `<program> <args…>` (the words after --). Throws UsageError (exit 2) on anything it cannot run. */
export function parseProgram(words: readonly string[]): ProgramSpec {
  if (words.length === 0) {
    throw new UsageError(
      'compare: no program after --; e.g. collbench compare --env NCCL_ALGO=Ring,Tree -- all_reduce_perf -b 8 -e 128M -f 2',
    );
  }
  if (isReplayProgram(words)) return parseReplayProgram(words);
  const first = words[0]!;
  const base = programBase(first);
  let collective: CollectiveName | null;
  let args: string[];
  let options: ResolvedOptions;
  if (base === 'collbench') {
    const rest = words.slice(1);
    options = parsed(rest, 'collbench');
    collective = options.collective;
    args = rest;
  } else {
    try {
      collective = collectiveFromProgram(base);
    } catch {
      throw unknown(first);
    }
    if (collective === null) throw unknown(first);
    options = parsed(words.slice(1), base);
    args = [collective, ...words.slice(1)];
  }
  for (const [field, flag] of OWN_OUTPUTS) {
    if (options[field] !== null) {
      throw UsageError.forFlag(
        flag,
        `compare writes each run's report itself; give compare's own --json/--csv/--md/--html/--junit (before --) instead`,
      );
    }
  }
  if (options.runCycles === 0) throw UsageError.forFlag('-N', 'compare needs runs that end; -N 0 runs forever');
  const crowded = crowdingRefusal(options); // once here, not once per run
  if (crowded !== null) throw new UsageError(crowded, '--np');
  return { words: [...words], collective, args, options };
}

/** Checks one combination's arguments with the program's parser (e.g. --gloo-algo without --backend gloo). */
export function checkCombination(p: ProgramSpec, c: Combination): ResolvedOptions | null {
  if (c.args.length === 0 || p.options === null) return p.options; // a replay's: checkReplayProgram
  try {
    return parsed([...p.args, ...c.args], 'collbench', basename(p.words[0]!));
  } catch (e) {
    if (e instanceof UsageError) throw new UsageError(`${e.message} (in combination ${c.id}: ${c.label})`, e.flag);
    throw e;
  }
}

/** The child's words after the script: [collective, args…, extra…, --force -J path] (--force: the report folder
 *  is compare's own; a kept --reports-dir may hold an earlier comparison's files). */
export function childWords(
  p: ProgramSpec,
  c: Combination,
  reportPath: string,
  extra: readonly string[] = [],
): string[] {
  return [...p.args, ...c.args, ...extra, '--force', '-J', reportPath];
}
