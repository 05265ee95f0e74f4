// The run command's parse: program name → collective, the flag table's tokens (option-parser.ts, the parser of every
// command) → resolveOptions(), -h → help text; and the command line of a child that reruns the same options.
// Pure: no I/O.
import { UsageError } from '../core/errors.js';
import {
  ACTIONS,
  flagName,
  FLAGS,
  type FlagSpec,
  GROUPS,
  type OptionField,
  type ResolvedOptions,
  type ValueFlag,
} from './flags.js';
import { COLLECTIVES, PROGRAMS, type CollectiveName } from '../core/types.js';
import { flagHelp, optionSpecs, tokenize, type OptionSpec } from './option-parser.js';
import { asText, FIELD_NAMES, parseCollective, resolveOptions, type OptionInput } from './resolve.js';

/** The run command's options: every flag of the table, then -h and --version. */
export const RUN_OPTIONS: readonly OptionSpec[] = Object.freeze(optionSpecs([...FLAGS, ...ACTIONS]));

export type ParsedCommand =
  { kind: 'help'; text: string } | { kind: 'version' } | { kind: 'run'; options: ResolvedOptions };

const PERF_RE = /^(.+?)_perf(?:_[A-Za-z0-9]+)?$/; // nccl-tests NAME_SUFFIX builds: all_reduce_perf_mpi

/** Binary name as run (`/usr/bin/all_reduce_perf`, `collbench.js`) → bare name. */
export function programBase(program: string): string {
  const base = program.split(/[\\/]/).pop() ?? program;
  return base.replace(/\.(?:[cm]?js|ts|exe)$/i, '');
}

/**
 * The collective a `<name>_perf` binary runs, or null for any other name (the `collbench` front
 * end, which takes the collective as its first word). A `*_perf` name with an unknown collective
 * is a UsageError.
 */
export function collectiveFromProgram(program: string): CollectiveName | null {
  const m = PERF_RE.exec(programBase(program));
  if (!m) return null;
  if ((COLLECTIVES as readonly string[]).includes(m[1]!)) return parseCollective(m[1]!);
  throw new UsageError(`unknown collective binary '${programBase(program)}'; valid: ${PROGRAMS.join(', ')}`);
}

/** --help text: nccl-tests' flags with their letters and long names, grouped, with defaults. */
export function helpText(program: string, collective: CollectiveName | null): string {
  const base = programBase(program);
  const isPerf = PERF_RE.test(base);
  const usage = isPerf ? `USAGE: ${base} [options]` : `USAGE: ${base} [run] ${collective ?? '<collective>'} [options]`;
  const out: string[] = [usage];
  if (!isPerf && collective === null) out.push(`  collectives: ${COLLECTIVES.join(' ')} (or their *_perf names)`);
  out.push('  Flags are those of nccl-tests (getopt syntax: -b8, -b 8, --minbytes=8, --minbytes 8).');
  out.push('  Sizes take a K, M or G suffix, 1024-based (128K, 1.5G, 1GB); integers may be 0x hex.');
  out.push(...flagHelp([...FLAGS, ...ACTIONS], GROUPS));
  out.push('', '[NCCL] = NCCL (GPU) backend only, [gloo] = gloo backend only; other backends refuse it.');
  if (!isPerf) out.push(`Other commands: ${base} help <command>; environment variables: ${base} help env.`);
  return `${out.join('\n')}\n`;
}

/**
 * Parses the arguments of one invocation (`argv` without node and script). `program` is the name it
 * was run as: `<collective>_perf` runs that collective; any other name (`collbench`) takes the
 * collective as first word: `collbench all_reduce -b 8`, `collbench run all_reduce -b 8`.
 * Throws UsageError for anything wrong; the result's options are frozen.
 */
export function parseCommandLine(argv: readonly string[], program: string): ParsedCommand {
  const perfCollective = collectiveFromProgram(program);
  const tokens = tokenize(argv, RUN_OPTIONS);
  const positionals = [...tokens.positionals];

  let collective: CollectiveName | null = perfCollective;
  if (perfCollective === null) {
    if (positionals[0] === 'run') positionals.shift();
    const word = positionals.shift();
    if (word !== undefined) {
      try {
        collective = parseCollective(word);
      } catch (err) {
        if (tokens.stop === undefined) throw err; // --help / --version still win over a bad word
      }
    }
  }
  if (tokens.stop === 'help') return { kind: 'help', text: helpText(program, collective) };
  if (tokens.stop === 'version') return { kind: 'version' };

  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (see --help)`);
  if (collective === null) {
    throw new UsageError(
      `missing collective: ${programBase(program)} [run] <collective> [options]; valid: ${COLLECTIVES.join(', ')}`,
    );
  }

  const input: OptionInput = {
    collective,
    program: perfCollective !== null ? programBase(program) : `${collective}_perf`,
  };
  const set = input as unknown as Record<string, string | boolean>;
  for (const [field, value] of tokens.values) set[field] = value;
  return { kind: 'run', options: resolveOptions(input, FIELD_NAMES) };
}

/** A flag's value as the command line writes it (`--long=value`), or null when it is the default. */
function flagArgument(f: ValueFlag, value: unknown): string | null {
  if (value === f.default || value === null) return null;
  switch (f.kind) {
    case 'switch':
      return value ? `--${f.long}` : null;
    case 'bool':
      return `--${f.long}=${value ? 1 : 0}`;
    case 'list': {
      const items = value as readonly string[];
      const def = f.default as readonly string[];
      if (items.length === def.length && items.every((v, i) => v === def[i])) return null;
      if (items.length === f.choices!.length && items.every((v, i) => v === f.choices![i])) return `--${f.long}=all`;
      if (items.length === 1) return `--${f.long}=${items[0]}`;
      throw new Error(`${flagName(f)}: ${items.join(',')} cannot be written as one command-line value`);
    }
    default:
      return `--${f.long}=${asText(value)}`;
  }
}

/**
 * The command line of a child that runs these very options (what --np starts under mpirun or as local
 * processes): the collective word (unless the program's name says it), then every flag that is not at its
 * default, in long form, leaving out the `omit` fields (the launch's own --np, --hosts, --oversubscribe). Built from
 * the parsed options, never by editing the typed words, so a child reads exactly what the parent resolved.
 */
export function childArguments(
  options: ResolvedOptions,
  programNamesCollective: boolean,
  omit: readonly OptionField[] = ['np', 'hosts', 'oversubscribe'],
): string[] {
  const out: string[] = programNamesCollective ? [] : [options.collective];
  for (const f of FLAGS) {
    if (omit.includes(f.field)) continue;
    const arg = flagArgument(f, options[f.field]);
    if (arg !== null) out.push(arg);
  }
  return out;
}

/**
 * The flags of a command that runs the engine itself (replay, workload), as given, split: its own words, rendered back
 * as typed (`--long`, `--long=value`) for its children under --np, and the run flags, which go through the run's
 * parser (cross-checked exactly as for a run) and come back resolved.
 */
export function splitRunFlags(
  command: string,
  ordered: readonly { field: string; value: unknown }[],
  table: readonly FlagSpec[],
  ownFields: ReadonlySet<string>,
): { own: string[]; run: ResolvedOptions } {
  const words = (own: boolean): string[] =>
    ordered
      .filter((t) => ownFields.has(t.field) === own)
      .map((t) => {
        const f = table.find((x) => x.kind !== 'action' && x.field === t.field)!;
        return t.value === true ? `--${f.long}` : `--${f.long}=${asText(t.value)}`;
      });
  const parsed = parseCommandLine(['all_reduce', ...words(false)], 'collbench');
  if (parsed.kind !== 'run') throw new UsageError(`${command}: see --help`);
  return { own: words(true), run: parsed.options };
}
