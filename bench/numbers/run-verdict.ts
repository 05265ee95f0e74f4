// The verdict of a run and its exit code: wrong elements found by the check, or an average bus bandwidth
// below nccl-tests' NCCL_TESTS_MIN_BW floor. Reporters print it; only cli/main.ts turns it into the
// process's exit status.
import { cAtof } from './c-numbers.js';
import { EXIT } from '../core/errors.js';

export type MinBwVerdict = 'OK' | 'FAILED';

/**
 * NCCL_TESTS_MIN_BW: null when unset (nccl-tests' sentinel -1 also means unset), else FAILED when
 * avgBusBw < 0.9 × value, OK otherwise (a NaN average compares false → OK, as in C). FAILED also makes
 * the exit status 7.
 */
export function minBwVerdict(avgBusBw: number, envValue: string | null | undefined): MinBwVerdict | null {
  if (envValue === undefined || envValue === null) return null;
  const min = cAtof(envValue);
  if (min === -1) return null;
  return avgBusBw < min * 0.9 ? 'FAILED' : 'OK';
}

/** --warn-busbw: a cycle (one pass over the sizes, -N / --duration) whose average busbw is below the threshold
 *  (exactly; NaN, a cycle without rows, is not below). */
export function cycleBelowWarnBusBw(avgBusBw: number, warnBusBw: number | null): boolean {
  return warnBusBw !== null && avgBusBw < warnBusBw;
}

/** The exit code of a finished run: 7 for wrong results, a missed bandwidth floor or a cycle below --warn-busbw, else 0. */
export function runExitCode(outOfBounds: number, verdict: MinBwVerdict | null, cyclesBelowWarnBusBw = 0): number {
  return outOfBounds > 0 || verdict === 'FAILED' || cyclesBelowWarnBusBw > 0 ? EXIT.WRONG_RESULTS : EXIT.OK;
}
