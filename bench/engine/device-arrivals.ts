// Arrivals on the device's clock (NCCL with -I; native/src/core/device_arrivals.h): the native loop returns, per rank,
// its stream's time from a reference event to each iteration's -I mark, and the host time of that reference (the middle
// of the window it completed in). Here they become arrivals on each process's host clock, and the processes' clock
// alignment (numbers/lateness.ts) is spread over their ranks: the one lateness rule names a GPU as it names a process.
import type { ClockAlignment } from '../numbers/lateness.js';

/** Device arrivals placed on their process's host clock (µs), and how sure the placement is. */
export interface HostArrivals {
  arrivalsUs: number[][];
  /** The widest reference window's half-width over the ranks (µs): the placement's uncertainty. */
  referenceUs: number;
}

/**
 * `sinceRefUs`: rank × iteration, the device time from the rank's reference to its stream reaching the iteration;
 * `refs`: per rank [host time of the reference (µs), half-width of the window it completed in]. Each GPU keeps its
 * own reference: the device clocks of two GPUs are never compared directly.
 */
export function deviceArrivalsOnHost(
  sinceRefUs: readonly (readonly number[])[],
  refs: readonly (readonly number[])[],
): HostArrivals {
  if (refs.length !== sinceRefUs.length) {
    throw new Error(`device arrivals: ${sinceRefUs.length} rank rows but ${refs.length} references`);
  }
  return {
    arrivalsUs: sinceRefUs.map((row, r) => row.map((t) => refs[r]![0]! + t)),
    referenceUs: Math.max(0, ...refs.map((ref) => ref[1]!)),
  };
}

/** The processes' clock alignment for their ranks (`localRanks` consecutive ranks per process share its clock), its
 *  uncertainty widened by the device references' (the two add as independent errors). */
export function rankClock(clock: ClockAlignment, localRanks: number, referenceUs: number): ClockAlignment {
  return {
    method: clock.method,
    offsetsUs: clock.offsetsUs.flatMap((offset) => new Array<number>(localRanks).fill(offset)),
    uncertaintyUs: Math.hypot(clock.uncertaintyUs, referenceUs),
  };
}
