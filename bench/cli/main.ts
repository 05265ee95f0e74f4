// The command-line entry: parse, launch (directly, or re-executed under mpirun for --np), run, and
// map every failure to one line on stderr and a documented exit code. The only place that chooses
// exit codes (DESIGN.md §1).
import { writeSync } from 'node:fs';
import { basename } from 'node:path';
import { hostname } from 'node:os';
import { runSuite, type RunIO } from '../commands/run.js';
import { EXIT, UsageError } from '../config/errors.js';
import { underMpiLauncher } from '../launch/environment.js';
import { mpirunPlan, runUnderMpirun } from '../launch/mpirun.js';
import { launchGlooRanks } from '../launch/local-ranks.js';
import { isNativeError } from '../native/binding.js';
import { BackendUnavailableError, builtBackends } from '../native/loader.js';
import { OutputError } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { PlanError } from '../collectives/alltoallv-plan.js';
import { VERSION } from '../version.js';
import { collectiveFromProgram, parseCommandLine } from './options.js';

/** Line-at-a-time output straight to the file descriptors, so nothing is lost on exit. */
export const stdio: RunIO = {
  out: (line) => { writeSync(1, line + '\n'); },
  err: (line) => { writeSync(2, line + '\n'); },
};

export function programName(scriptPath: string): string {
  return basename(scriptPath).replace(/\.(js|ts|mjs)$/, '');
}

type Subcommand = (args: string[], scriptPath: string, io: RunIO) => Promise<number>;

/** `collbench <word> …` commands that do something other than run one benchmark (loaded on demand). */
const SUBCOMMANDS: Record<string, Subcommand | undefined> = {
  // reads reports: overlays runs into Markdown / HTML charts
  report: async (args, _script, io) => (await import('../commands/report.js')).reportCommand(args, io),
  // one child per NCCL_ALGO/NCCL_PROTO/MCA setting, with a verdict per size
  compare: async (args, script, io) => (await import('../commands/compare.js')).compareCommand(args, script, io),
  // what this installation can run here
  info: async (args, _script, io) => (await import('../commands/info.js')).infoCommand(args, io),
  // the self-contained tarball for nodes without Node.js
  bundle: async (args, _script, io) => (await import('../commands/bundle.js')).bundleCommand(args, io),
};

export async function main(argv: string[], scriptPath: string, io: RunIO = stdio): Promise<number> {
  const program = programName(scriptPath);
  try {
    const subcommand = collectiveFromProgram(program) === null ? SUBCOMMANDS[argv[0]] : undefined;
    if (subcommand) return await subcommand(argv.slice(1), scriptPath, io);
    const parsed = parseCommandLine(argv, program);
    if (parsed.kind === 'help') { io.out(parsed.text); return EXIT.OK; }
    if (parsed.kind === 'version') { io.out(`collbench ${VERSION}`); return EXIT.OK; }
    const options = parsed.options;
    if (options.np !== null) {
      if (underMpiLauncher()) throw new UsageError('--np: already running under an MPI launcher; drop --np or mpirun');
      if ((options.backend ?? builtBackends()[0]) === 'gloo') {
        process.env[ARGV_ENV] ??= JSON.stringify([scriptPath, ...argv]);
        return await launchGlooRanks(options, [process.execPath, ...process.execArgv, scriptPath], argv);
      }
      const plan = mpirunPlan({
        np: options.np, hosts: options.hosts, program: [process.execPath, ...process.execArgv, scriptPath], argv,
      });
      process.env[ARGV_ENV] ??= JSON.stringify([scriptPath, ...argv]); // reports record the command as typed
      return await runUnderMpirun(plan);
    }
    const outcome = await runSuite(options, io, { argv: [scriptPath, ...argv] });
    return outcome.exitCode;
  } catch (e) {
    return reportFailure(e, program, io);
  }
}

export function reportFailure(e: unknown, program: string, io: RunIO): number {
  const host = hostname().split('.')[0];
  if (e instanceof UsageError || e instanceof PlanError) {
    io.err(`${program}: ${e.message}`);
    return EXIT.USAGE;
  }
  if (e instanceof BackendUnavailableError || e instanceof OutputError) {
    io.err(`${program}: ${e.message}`);
    return EXIT.ENVIRONMENT;
  }
  if (isNativeError(e) && e.code === 'TIMEOUT') {
    // A backend's own -T (nccl: the completion wait aborted its communicators), as nccl-tests prints it.
    io.err(`${host}: ${e.message} at ${e.site}`);
    return EXIT.TIMEOUT;
  }
  if (isNativeError(e)) {
    io.err(`${host}: ${e.backend} failure ${e.code} at ${e.site}: ${e.message}`);
    return EXIT.BACKEND;
  }
  io.err(`${program}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return EXIT.INTERNAL;
}
