// The command-line entry: the commands (their one-line summaries, the list `collbench` prints, the line for a
// mistyped first word), then parse, launch (directly, or re-executed under mpirun for --np), run, and map every
// failure to one line on stderr and a documented exit code. The only place that chooses exit codes
// (docs/architecture.md, "commands/ and cli/").
import { writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostname } from 'node:os';
import { runCommand } from '../commands/run.js';
import { PlanError } from '../collectives/alltoallv-plan.js';
import { collectiveFromProgram, parseCommandLine, programBase } from '../config/run-options.js';
import { environmentText } from '../core/environment.js';
import { EnvironmentError, EXIT, UsageError } from '../core/errors.js';
import type { IO } from '../core/io.js';
import { launchedRankLabel } from '../launch/launcher.js';
import { COLLECTIVES } from '../core/types.js';
import { isNativeError } from '../native/binding.js';

/** One line to a file descriptor; a reader that went away (`| head`) ends the process quietly with 141, as
 *  SIGPIPE ends a C program (nccl-tests), instead of an "internal error" stack trace. */
function writeLine(fd: number, line: string): void {
  try {
    writeSync(fd, line + '\n');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EPIPE') process.exit(128 + 13);
    throw e;
  }
}

/** Line-at-a-time output straight to the file descriptors, so nothing is lost on exit. */
export const stdio: IO = {
  out: (line) => {
    writeLine(1, line);
  },
  err: (line) => {
    writeLine(2, line);
  },
};

type Subcommand = (args: string[], scriptPath: string, io: IO) => Promise<number>;

/** One command of the front end: what it does in one line (`collbench` and `collbench help` list it) and its entry,
 *  loaded on demand (none for `run`, the default: one benchmark, as nccl-tests runs it). */
interface Command {
  summary: string;
  entry?: Subcommand;
}

/** Every command of the front end, in the order `collbench` lists them. */
const COMMANDS: Readonly<Record<string, Command>> = {
  run: {
    summary: 'one benchmark, as nccl-tests runs it: collbench [run] <collective> [flags] (or all_reduce_perf [flags])',
  },
  compare: {
    summary: 'one run per NCCL_ALGO/NCCL_PROTO/--mca/--gloo-algo setting, a verdict per size',
    entry: async (args, script, io) => (await import('../compare/command.js')).compareCommand(args, script, io),
  },
  accept: {
    summary: "cluster acceptance: a profile's checks, a baseline, a pass/fail verdict",
    entry: async (args, script, io) => (await import('../accept/command.js')).acceptCommand(args, script, io),
  },
  locate: {
    // whole job, per-host groups, pairwise rounds, re-tests (child jobs under mpirun)
    summary: 'names the slow host or link of a multi-host job',
    entry: async (args, script, io) => (await import('../locate/command.js')).locateCommand(args, script, io),
  },
  workload: {
    // each configuration's time per step, and a recommendation
    summary: 'the collectives of a training step (DDP buckets, FSDP shards) per configuration',
    entry: async (args, script, io) =>
      (await import('../workload/command.js')).workloadCommand(args, script, io, () => process.exit(EXIT.TIMEOUT)),
  },
  replay: {
    summary: 'replays what a real job issued (NCCL call log, PyTorch trace, flight-recorder dump)',
    entry: async (args, script, io) =>
      (await import('../replay/command.js')).replayCommand(args, script, io, () => process.exit(EXIT.TIMEOUT)),
  },
  report: {
    summary: 'overlays reports (-J files, nccl-tests output) into Markdown and HTML charts',
    entry: async (args, _script, io) => (await import('../commands/report.js')).reportCommand(args, io),
  },
  info: {
    summary: 'what this installation can run here (backends, libraries, devices)',
    entry: async (args, _script, io) => (await import('../commands/info.js')).infoCommand(args, io),
  },
  bundle: {
    summary: 'a self-contained tarball for GPU nodes without Node.js',
    entry: async (args, _script, io) => (await import('../commands/bundle.js')).bundleCommand(args, io),
  },
  help: {
    summary: "help [<command>|env]: a command's flags, or the environment variables",
    entry: async (args, script, io) => {
      if (args.length > 1) throw new UsageError(`help: one word at most: env or a command, got '${args.join(' ')}'`);
      const word = args[0];
      if (word === 'env') {
        io.out(environmentText().replace(/\n$/, ''));
        return EXIT.OK;
      }
      const command = word === undefined || word === 'run' ? undefined : COMMANDS[word]?.entry;
      if (word !== undefined && word !== 'run' && (command === undefined || word === 'help')) {
        throw new UsageError(
          `help: unknown topic '${word}'; valid: env, ${COMMAND_WORDS.filter((k) => k !== 'help').join(', ')}`,
        );
      }
      if (command) return command(['--help'], script, io);
      if (word === undefined) io.out(commandList(programBase(script)));
      const parsed = parseCommandLine(['--help'], programBase(script));
      if (parsed.kind === 'help') io.out(parsed.text);
      return EXIT.OK;
    },
  },
};

/** The command words, in the order `collbench` lists them. */
export const COMMAND_WORDS: readonly string[] = Object.freeze(Object.keys(COMMANDS));

export async function main(argv: string[], scriptPath: string, io: IO = stdio): Promise<number> {
  const program = programBase(scriptPath);
  try {
    const frontEnd = collectiveFromProgram(program) === null;
    const subcommand = frontEnd ? COMMANDS[argv[0] ?? '']?.entry : undefined;
    if (subcommand) return await subcommand(argv.slice(1), scriptPath, io);
    if (frontEnd && argv.length === 0) {
      io.out(commandList(program).trimEnd());
      return EXIT.OK;
    }
    const unknown = frontEnd ? unknownWordLine(argv[0]) : null;
    if (unknown !== null) throw new UsageError(unknown);
    // -T expired: the backend's abort ends the job; this exit is for a backend without one.
    return await runCommand(argv, scriptPath, io, () => process.exit(EXIT.TIMEOUT));
  } catch (e: unknown) {
    const code = reportFailure(e, program, io);
    // One of several ranks: its exit ends the job (mpirun or the --np launcher ends the others, it does not wait for
    // them in a finalize: engine/bring-up.ts withBackend). A moment first, so that ranks failing alike say why too.
    if (code !== EXIT.USAGE && launchedRankLabel('', process.env) !== null) await sleep(FAILED_RANK_LINGER_MS);
    return code;
  }
}

/** How long a failed rank of several waits after its line before it exits (and the launcher ends the others). */
export const FAILED_RANK_LINGER_MS = 300;

export function reportFailure(e: unknown, program: string, io: IO, env: NodeJS.ProcessEnv = process.env): number {
  const host = hostname().split('.')[0];
  // One of several ranks: its line says which (bad input is the same on every rank and says nothing more).
  const rank = launchedRankLabel(host, env);
  const who = rank === null ? program : `${program}: ${rank}`;
  if (e instanceof UsageError || e instanceof PlanError) {
    io.err(`${program}: ${e.message}`);
    return EXIT.USAGE;
  }
  if (e instanceof EnvironmentError) {
    io.err(`${who}: ${e.message}`);
    return EXIT.ENVIRONMENT;
  }
  if (isNativeError(e) && e.code === 'TIMEOUT') {
    // A backend's own -T (nccl: the completion wait aborted its communicators), as nccl-tests prints it.
    io.err(`${host}: ${e.message} at ${e.site}`);
    return EXIT.TIMEOUT;
  }
  if (isNativeError(e)) {
    io.err(`${rank ?? host}: ${e.backend} failure ${e.code} at ${e.site}: ${e.message}`);
    return EXIT.BACKEND;
  }
  io.err(`${who}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return EXIT.INTERNAL;
}

/** The command list, as `collbench` and `collbench help` print it. */
export function commandList(program: string): string {
  const width = Math.max(...COMMAND_WORDS.map((c) => c.length));
  return [
    `USAGE: ${program} <command> [options]   (${program} help <command> for its flags)`,
    'Commands:',
    ...Object.entries(COMMANDS).map(([c, { summary: what }]) => `  ${c.padEnd(width)}  ${what}`),
    `Collectives: ${COLLECTIVES.join(' ')}`,
    '',
  ].join('\n');
}

/** Edit distance (insertions, deletions, substitutions) of two short words. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length]!;
}

/** The line for a first word that is no command and no collective, or null when it is one of them (or a flag). */
export function unknownWordLine(word: string | undefined): string | null {
  const commands = COMMAND_WORDS;
  if (word === undefined || word.startsWith('-')) return null;
  const bare = word.endsWith('_perf') ? word.slice(0, -'_perf'.length) : word;
  if (commands.includes(word) || (COLLECTIVES as readonly string[]).includes(bare)) return null;
  const near = [...commands, ...COLLECTIVES]
    .map((w) => ({ w, d: editDistance(bare.toLowerCase(), w) }))
    .filter(({ w, d }) => d <= Math.max(2, Math.floor(w.length / 3)))
    .sort((x, y) => x.d - y.d)[0];
  return (
    `unknown command or collective '${word}'${near ? ` (did you mean ${near.w}?)` : ''}; ` +
    `commands: ${commands.join(', ')}; ` +
    `collectives: ${COLLECTIVES.join(', ')}`
  );
}
