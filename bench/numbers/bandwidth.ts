// Bandwidth arithmetic of one row-half: algbw and busbw in GB/s (1e9 B/s), and the footer average.
// Mirrors nccl-tests' <Coll>GetBw (algBw = bytes / 1e9 / sec; busBw = algBw × factor) and the
// "Avg bus bandwidth" mean in src/common.cu (sum over printed halves / their count).
import { NEG_NAN } from './c-numbers.js';

/**
 * Algorithm bandwidth in GB/s for `bytes` moved in `timeUs` µs: bytes / 1e9 / (timeUs·1e-6).
 * Like nccl-tests we divide without a guard: a zero time gives Infinity (printed "inf"), and 0 bytes in
 * 0 µs gives the NaN x86 arithmetic produces (printed "-nan"), so a broken timer shows in the table
 * instead of being hidden behind a plausible 0.00.
 */
export function algBwGBps(bytes: number, timeUs: number): number {
  if (bytes === 0 && timeUs === 0) return NEG_NAN;
  return bytes / 1.0e9 / (timeUs * 1.0e-6);
}

/** Bus bandwidth: algbw × the collective's factor (e.g. 2(n−1)/n for all_reduce, §4). */
export function busBwGBps(algBw: number, factor: number): number {
  return algBw * factor;
}

/**
 * Footer "Avg bus bandwidth": arithmetic mean of busbw over every printed row-half, summed in print
 * order. With no halves nccl-tests computes 0/0 and prints "-nan" (x86); we return the same NaN.
 */
export function averageBusBw(busBws: readonly number[]): number {
  if (busBws.length === 0) return NEG_NAN;
  let sum = 0;
  for (const b of busBws) sum += b;
  return sum / busBws.length;
}
