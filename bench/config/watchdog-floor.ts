// The default watchdog's floor (engine/watchdog.ts): 120 s, or COLLBENCH_WATCHDOG_MIN_S. Below the backends, so that
// they arm the same limit around start-up (MPI_Init) as the run's waits get.
import { UsageError } from '../core/errors.js';
import { ENV } from '../core/environment.js';

export const DEFAULT_MIN_SEC = 120;

/** COLLBENCH_WATCHDOG_MIN_S (a whole number of seconds ≥ 1), else DEFAULT_MIN_SEC; a bad value is a UsageError. */
export function watchdogFloorSec(env: NodeJS.ProcessEnv = process.env): number {
  const v = env[ENV.WATCHDOG_MIN_S];
  if (v !== undefined && v !== '' && !/^[1-9]\d*$/.test(v.trim())) {
    throw new UsageError(`${ENV.WATCHDOG_MIN_S}: '${v}' is not a whole number of seconds ≥ 1`);
  }
  return v ? Number(v) : DEFAULT_MIN_SEC;
}
