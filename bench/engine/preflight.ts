// What a run checks once, before the --np launcher or this process's run starts anything: the watchdog's floor, the
// backend chosen, the flags only a backend that cannot run here implements, the driver's refusals, the --np job's
// refusals and the output paths. The launcher (launch-ranks.ts) and the run (bring-up.ts) use its result.
import type { BackendDriver } from '../backends/driver.js';
import { selectBackend, type BackendRecord } from '../backends/registry.js';
import { flagLabel, unsupportedFlag } from '../config/resolve.js';
import { watchdogFloorSec } from '../config/watchdog-floor.js';
import { BackendUnavailableError, UsageError } from '../core/errors.js';
import type { ResolvedOptions } from '../config/flags.js';
import { launcherRank, underMpiLauncher } from '../launch/launcher.js';
import { jobRefusal } from '../launch/mpirun.js';
import type { NativeBackend } from '../native/binding.js';
import { checkOutputPaths, outputSpecs, type OutputSpec } from '../report/outputs.js';

/** A run that passed its checks: the backend it runs on, its module and driver, and its outputs. */
export interface Preflight {
  record: BackendRecord;
  module: NativeBackend;
  driver: BackendDriver;
  /** The stderr line that says a preferred backend was passed over, for this process to print (rank 0 of the run
   *  prints it), or null. */
  passedOver: string | null;
  outputs: OutputSpec[];
  /** The default watchdog's floor (s): COLLBENCH_WATCHDOG_MIN_S, else 120. */
  watchdogMinSec: number;
}

/**
 * Everything that would refuse the run, checked once, in this order: --np under an MPI launcher; a bad
 * COLLBENCH_WATCHDOG_MIN_S (refused here once, not by every rank of an --np job as its watchdog starts); the backend
 * (the one asked for, or the first that can run here); a flag only a backend that cannot run here implements (-G, -R,
 * … on a machine with libnccl and no GPU: exit 5); the driver's refusals; --np's hosts, slots and Gloo store; the
 * output paths, by the process that writes them (the launcher, or rank 0: ranks on other hosts may not see its folder).
 */
export function preflight(options: ResolvedOptions, env: NodeJS.ProcessEnv = process.env): Preflight {
  const launching = options.np !== null;
  if (launching && underMpiLauncher(env))
    throw new UsageError('--np: already running under an MPI launcher; drop --np or mpirun');
  const watchdogMinSec = watchdogFloorSec(env);
  const { record, module, passedOver, fallbackFrom } = selectBackend(
    options.backend,
    { ncclLib: options.ncclLib },
    env,
  );
  const gpuOnly = fallbackFrom === null ? null : unsupportedFlag(options, record.name);
  if (gpuOnly !== null) {
    throw new BackendUnavailableError(
      `${flagLabel(gpuOnly)} needs the ${gpuOnly.backends!.join(' or ')} backend, ` +
        `which cannot run here: ${fallbackFrom!.why}`,
    );
  }
  const driver = record.createDriver(env);
  driver.validate(options);
  const refused = launching ? jobRefusal(options, record.launcher, env) : null;
  if (refused !== null) throw new UsageError(refused.line, refused.flag);
  const outputs = outputSpecs(options);
  const rankZero = (launcherRank(env) ?? 0) === 0;
  if (launching || rankZero) checkOutputPaths(outputs, { force: options.force });
  return { record, module, driver, passedOver: launching || !rankZero ? null : passedOver, outputs, watchdogMinSec };
}
