// The command-line entry: parse, launch (directly, or re-executed under mpirun for --np), run, and
// map every failure to one line on stderr and a documented exit code. The only place that chooses
// exit codes (docs/architecture.md, "commands/ and cli/").
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
import { commandList, unknownWordLine } from './command-words.js';
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

/** `collbench <word> …` commands that do something other than run one benchmark (loaded on demand). */
const SUBCOMMANDS: Record<string, Subcommand | undefined> = {
  // reads reports: overlays runs into Markdown / HTML charts
  report: async (args, _script, io) => (await import('../commands/report.js')).reportCommand(args, io),
  // one child per NCCL_ALGO/NCCL_PROTO/MCA setting, with a verdict per size
  compare: async (args, script, io) => (await import('../compare/command.js')).compareCommand(args, script, io),
  // cluster acceptance: a profile's checks, a baseline, a pass/fail verdict
  accept: async (args, script, io) => (await import('../accept/command.js')).acceptCommand(args, script, io),
  // the collectives one training step issues (DDP buckets, FSDP shards) per configuration, and a recommendation
  workload: async (args, script, io) =>
    (await import('../workload/command.js')).workloadCommand(args, script, io, () => process.exit(EXIT.TIMEOUT)),
  // what a real job issued (NCCL call log, PyTorch execution trace, flight-recorder dump), replayed step by step
  replay: async (args, script, io) =>
    (await import('../replay/command.js')).replayCommand(args, script, io, () => process.exit(EXIT.TIMEOUT)),
  // what this installation can run here
  info: async (args, _script, io) => (await import('../commands/info.js')).infoCommand(args, io),
  // names the slow host or link: whole job, per-host groups, pairwise rounds, re-tests (child jobs under mpirun)
  locate: async (args, script, io) => (await import('../locate/command.js')).locateCommand(args, script, io),
  // the self-contained tarball for nodes without Node.js
  bundle: async (args, _script, io) => (await import('../commands/bundle.js')).bundleCommand(args, io),
  // `help` (the run's flags), `help env` (the environment variables), `help <command>` (as `<command> --help`)
  help: async (args, script, io) => {
    if (args.length > 1) throw new UsageError(`help: one word at most: env or a command, got '${args.join(' ')}'`);
    const word = args[0];
    if (word === 'env') {
      io.out(environmentText().replace(/\n$/, ''));
      return EXIT.OK;
    }
    const command = word === undefined || word === 'run' ? undefined : SUBCOMMANDS[word];
    if (word !== undefined && word !== 'run' && (command === undefined || word === 'help')) {
      throw new UsageError(
        `help: unknown topic '${word}'; valid: env, run, ${Object.keys(SUBCOMMANDS)
          .filter((k) => k !== 'help')
          .join(', ')}`,
      );
    }
    if (command) return command(['--help'], script, io);
    if (word === undefined) io.out(commandList(programBase(script)));
    const parsed = parseCommandLine(['--help'], programBase(script));
    if (parsed.kind === 'help') io.out(parsed.text);
    return EXIT.OK;
  },
};

export async function main(argv: string[], scriptPath: string, io: IO = stdio): Promise<number> {
  const program = programBase(scriptPath);
  try {
    const frontEnd = collectiveFromProgram(program) === null;
    const subcommand = frontEnd ? SUBCOMMANDS[argv[0]] : undefined;
    if (subcommand) return await subcommand(argv.slice(1), scriptPath, io);
    if (frontEnd && argv.length === 0) {
      io.out(commandList(program).trimEnd());
      return EXIT.OK;
    }
    const unknown = frontEnd ? unknownWordLine(argv[0], ['run', ...Object.keys(SUBCOMMANDS)]) : null;
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
