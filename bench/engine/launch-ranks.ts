// `--np N [--hosts …]`: starts the ranks of one run. The backend registry says how (mpirun, or N local
// processes of this command for gloo); what every rank would refuse is checked first (preflight.ts), so a bad
// command fails once rather than N times; the children's command line is built from the parsed options.
import { childArguments } from '../config/run-options.js';
import type { ResolvedOptions } from '../config/flags.js';
import { localRanksPlan, runLocalRanks } from '../launch/local-ranks.js';
import { mpirunPlan, runUnderMpirun } from '../launch/mpirun.js';
import { VERDICT_DIR_ENV, verdictFolder } from '../launch/verdict-relay.js';
import { removeOrphanedTemps } from '../report/atomic-write.js';
import { ENV } from '../core/environment.js';
import { ARGV_ENV } from '../report/provenance.js';
import type { Preflight } from './preflight.js';

export interface LaunchContext {
  /** The command that runs one rank: node, its flags, this script. */
  program: string[];
  /** The script's name says the collective (all_reduce_perf), so the children need no collective word. */
  programNamesCollective: boolean;
  /** The command line as typed (script first): reports record it, not the children's. */
  typed: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** The children's arguments from the run options' (`collbench workload` puts its own words around them). */
  childArgs?: (runArgs: string[]) => string[];
  /** Files the children write besides the run options' outputs (`collbench workload`'s). */
  outputs?: readonly { path: string }[];
}

/** `checked`: the run's preflight (preflight.ts), made by the caller before it chose to launch. Rank 0 checks the
 *  outputs again in its own process, as a plain run does. */
export async function launchRanks(options: ResolvedOptions, ctx: LaunchContext, checked: Preflight): Promise<number> {
  const env = ctx.env ?? process.env;
  const { record, outputs } = checked;
  const localProcesses = record.launcher === 'local-processes' && options.hosts === null;
  // A rank that finishes with a failing verdict leaves it here and exits 0: a verdict is not a crash
  // (launch/verdict-relay.ts).
  const verdicts = verdictFolder();
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    [ARGV_ENV]: env[ARGV_ENV] ?? JSON.stringify(ctx.typed),
    [VERDICT_DIR_ENV]: verdicts.dir,
  };
  // mpirun hands the ranks a pipe for stderr: rank 0 learns here that the user sees a terminal, and draws its bar
  // (report/reporters/progress.ts) rather than the plain lines meant for logs.
  if (process.stderr.isTTY) childEnv[ENV.STDERR_TTY] = '1';
  else delete childEnv[ENV.STDERR_TTY];
  const args = ctx.childArgs
    ? ctx.childArgs(childArguments(options, true))
    : childArguments(options, ctx.programNamesCollective);
  const np = options.np!;
  let code: number;
  try {
    code = localProcesses
      ? await runLocalRanks(localRanksPlan({ np, program: ctx.program, args }), { env: childEnv })
      : await runUnderMpirun(
          mpirunPlan({
            np,
            hosts: options.hosts,
            oversubscribe: options.oversubscribe,
            program: ctx.program,
            args,
            env,
          }),
          childEnv,
        );
    if (code === 0) code = verdicts.verdict();
  } finally {
    verdicts.remove();
  }
  // The job is over: a rank killed while it replaced an output (SIGKILL between write and rename) leaves a temporary
  // file beside it that nothing else will remove (the outputs themselves stay valid: the old or the new document).
  for (const { path } of [...outputs, ...(ctx.outputs ?? [])]) removeOrphanedTemps(path);
  return code;
}
