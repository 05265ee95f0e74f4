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
import { isNativeError } from '../native/binding.js';
import { BackendUnavailableError } from '../native/loader.js';
import { PlanError } from '../collectives/alltoallv-plan.js';
import { VERSION } from '../version.js';
import { parseCommandLine } from './options.js';

/** Line-at-a-time output straight to the file descriptors, so nothing is lost on exit. */
export const stdio: RunIO = {
  out: (line) => { writeSync(1, line + '\n'); },
  err: (line) => { writeSync(2, line + '\n'); },
};

export function programName(scriptPath: string): string {
  return basename(scriptPath).replace(/\.(js|ts|mjs)$/, '');
}

export async function main(argv: string[], scriptPath: string, io: RunIO = stdio): Promise<number> {
  const program = programName(scriptPath);
  try {
    const parsed = parseCommandLine(argv, program);
    if (parsed.kind === 'help') { io.out(parsed.text); return EXIT.OK; }
    if (parsed.kind === 'version') { io.out(`collbench ${VERSION}`); return EXIT.OK; }
    const options = parsed.options;
    if (options.np !== null) {
      if (underMpiLauncher()) throw new UsageError('--np: already running under an MPI launcher; drop --np or mpirun');
      const plan = mpirunPlan({
        np: options.np, hosts: options.hosts, program: [process.execPath, ...process.execArgv, scriptPath], argv,
      });
      return await runUnderMpirun(plan);
    }
    const outcome = await runSuite(options, io);
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
  if (e instanceof BackendUnavailableError) {
    io.err(`${program}: ${e.message}`);
    return EXIT.ENVIRONMENT;
  }
  if (isNativeError(e)) {
    io.err(`${host}: ${e.backend} failure ${e.code} at ${e.site}: ${e.message}`);
    return EXIT.BACKEND;
  }
  io.err(`${program}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return EXIT.INTERNAL;
}
