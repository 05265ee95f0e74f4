// The late-rank rule: from when every process started each timed iteration, name the process that arrived last in
// most iterations by more than the noise (op times point at the wrong rank: a late rank waits least). Clocks are
// shared on one kernel, else aligned from barrier exits (docs/reliability.md, "Late ranks"); GPUs' device arrivals are
// placed on their host's clock first (the end of this file).
import { medianOf } from './stats.js';

export type ClockMethod = 'shared-clock' | 'barrier-aligned';

export interface ClockAlignment {
  method: ClockMethod;
  /** Per process: subtract from its readings to put them on rank 0's clock (µs). */
  offsetsUs: number[];
  /** Standard error of the offsets (µs): 0 for a shared clock. */
  uncertaintyUs: number;
}

/** The lateness rule's constants (docs/reliability.md, "Late ranks", explains them; published in every JSON report). */
export const LATE_RULE = {
  /** A rank counts as late in an iteration only when it arrived after the others' median arrival by more than
   *  this, µs: scheduler wake-ups and the collective's own exit order stay below it on an idle host. */
  floorUs: 50,
  /** ... and by more than this fraction of that iteration's time (the wait for it included): the others waited longer
   *  than the op itself took. A collective's exit order lets some ranks leave (and so arrive at the next op) a part of
   *  an op later than others, the same rank every time; on an oversubscribed host that part reached 60 % of the op. */
  iterationFraction: 0.5,
  /** ... and by more than this many clock uncertainties (barrier-aligned clocks). */
  uncertainties: 4,
  /** Named only when late in more than this fraction of the iterations. */
  majority: 0.5,
} as const;

/** One named late process of one row-half. */
export interface LateProcess {
  process: number;
  /** Iterations in which it arrived last by more than the margin, over all iterations. */
  lastFraction: number;
  /** Median over those iterations of its arrival after the others' median arrival (µs). */
  medianLateUs: number;
  /** The median over iterations of each iteration's margin (µs). */
  marginUs: number;
  lastCount: number;
  iterations: number;
}

/**
 * Offsets of each process's clock against process 0 from `samples` (process × round readings taken on leaving
 * successive barriers). `sameClock`: every process runs on one kernel (equal boot ids), so nothing is estimated.
 */
export function alignClocks(samples: readonly (readonly number[])[], sameClock: boolean): ClockAlignment {
  const n = samples.length;
  if (sameClock || n <= 1) return { method: 'shared-clock', offsetsUs: new Array<number>(n).fill(0), uncertaintyUs: 0 };
  const ref = samples[0]!;
  let uncertaintyUs = 0;
  const offsetsUs = samples.map((row, p) => {
    if (p === 0) return 0;
    const diffs = row.map((t, k) => t - ref[k]!);
    const offset = medianOf(diffs);
    // The median's standard error: the spread of single rounds (median absolute deviation, scaled to a standard
    // deviation for normal noise) times 1.2533 / sqrt(rounds).
    const spread = 1.4826 * medianOf(diffs.map((d) => Math.abs(d - offset)));
    uncertaintyUs = Math.max(uncertaintyUs, (1.2533 * spread) / Math.sqrt(diffs.length));
    return offset;
  });
  return { method: 'barrier-aligned', offsetsUs, uncertaintyUs };
}

/** The margin a rank must be late by, in an iteration that took `iterationUs` as the others saw it. */
export function lateMarginUs(iterationUs: number, clock: ClockAlignment): number {
  return Math.max(
    LATE_RULE.floorUs,
    LATE_RULE.iterationFraction * iterationUs,
    LATE_RULE.uncertainties * clock.uncertaintyUs,
  );
}

/** What one row-half's arrivals say: per process, the share of iterations it arrived last by more than the margin,
 *  and the process named late (null when none was, in more than LATE_RULE.majority of them). */
export interface ArrivalEvidence {
  lastShare: number[];
  late: LateProcess | null;
}

/**
 * Who the others waited for in one row-half. `arrivals`: process × iteration start times, each on its own clock (µs).
 */
export function arrivalEvidence(
  arrivals: readonly (readonly number[])[],
  clock: ClockAlignment,
): ArrivalEvidence | null {
  const procs = arrivals.length;
  const iterations = procs > 0 ? arrivals[0]!.length : 0;
  if (procs < 2 || iterations < 1) return null;
  const aligned = arrivals.map((row, p) => row.map((t) => t - (clock.offsetsUs[p] ?? 0)));
  // Iteration i as the others see it: from the earliest arrival at i to the earliest at i + 1 (it contains the wait
  // for the last arriver and the op itself); the last iteration, which has no successor, takes the median.
  const earliest = Array.from({ length: iterations }, (_, i) => Math.min(...aligned.map((r) => r[i]!)));
  const steps = earliest.slice(1).map((t, i) => t - earliest[i]!);
  const typicalStep = steps.length > 0 ? medianOf(steps) : 0;
  const margins = earliest.map((_, i) => lateMarginUs(steps[i] ?? typicalStep, clock));
  const lastCounts = new Array<number>(procs).fill(0);
  const lateness: number[][] = Array.from({ length: procs }, () => []);
  for (let i = 0; i < iterations; i++) {
    let last = 0;
    for (let p = 1; p < procs; p++) if (aligned[p]![i]! > aligned[last]![i]!) last = p;
    const others = aligned.filter((_, p) => p !== last).map((r) => r[i]!);
    const late = aligned[last]![i]! - medianOf(others);
    if (late > margins[i]!) {
      lastCounts[last]! += 1;
      lateness[last]!.push(late);
    }
  }
  const marginUs = medianOf(margins);
  let top = 0;
  for (let p = 1; p < procs; p++) if (lastCounts[p]! > lastCounts[top]!) top = p;
  const lastFraction = lastCounts[top]! / iterations;
  const lastShare = lastCounts.map((c) => c / iterations);
  if (lastFraction <= LATE_RULE.majority) return { lastShare, late: null };
  return {
    lastShare,
    late: {
      process: top,
      lastFraction,
      medianLateUs: medianOf(lateness[top]!),
      marginUs,
      lastCount: lastCounts[top]!,
      iterations,
    },
  };
}

/** A duration for a comment line: `850 us`, `1.4 ms`, `2.1 s`. */
export function formatLateUs(us: number): string {
  // Two significant digits, never in exponent form (toPrecision(2) writes 150 as "1.5e+2").
  if (us >= 1e6) return `${Number((us / 1e6).toPrecision(2))} s`;
  if (us >= 1e3) return `${Number((us / 1e3).toPrecision(2))} ms`;
  return `${Math.round(us)} us`;
}

// Arrivals on the device's clock (NCCL with -I; native/src/core/device_arrivals.h): each iteration's -I mark against a
// reference event placed on its process's host clock, so that the one rule above names a GPU as it names a process.

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
