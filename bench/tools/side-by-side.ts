// Tool A against tool B, run interleaved round by round on the same machine (A B, B A, …), judged per size against a
// goal "A's median <= ratio x B's, or at most addedUs more": the one place for that judgement, shared by
// scripts/bench-overhead.ts (collbench vs plain MPI/Gloo loops) and vs-nccl-tests (collbench vs nccl-tests on a GPU).
// The statistics themselves (bootstrap interval, Mann-Whitney, Holm) are numbers/stats.ts.
import { bootstrapRatio, holm, mannWhitneyP } from '../numbers/stats.js';

export interface Goal {
  ratio: number; // A's median may be this many times B's …
  addedUs: number; // … or this many µs more
}

/** Linear-interpolation quantile (type 7): the spread columns of the side-by-side tables. */
export function linearQuantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q,
    lo = Math.floor(pos),
    hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export interface SizeResult {
  size: number;
  bytes: number;
  aUs: number[];
  bUs: number[];
  aMedian: number;
  bMedian: number;
  ratio: number;
  addedUs: number;
  ratioP25: number;
  ratioP75: number;
  ratioMin: number;
  ratioMax: number; // of the per-round ratios
  ciLo: number;
  ciHi: number; // 95 % bootstrap interval of the ratio of medians
  pBeyond: number; // one-sided Mann-Whitney: A slower than B plus the goal's allowance
  aOutliers: number;
  bOutliers: number;
  met: boolean;
  beyondNoise: boolean; // missed, and significantly so (Holm across the sizes, set by markBeyondNoise)
}

/** One size: A's and B's samples (round i of A beside round i of B), medians, spreads and the goal. */
export function analyseSize(
  size: number,
  bytes: number,
  aUs: number[],
  bUs: number[],
  goal: Goal,
  outlierFactor: number,
): SizeResult {
  const aMedian = linearQuantile(aUs, 0.5),
    bMedian = linearQuantile(bUs, 0.5);
  const ratios = aUs.map((a, i) => a / bUs[i]!).filter(Number.isFinite);
  const r = (q: number): number => (ratios.length ? linearQuantile(ratios, q) : NaN);
  const addedUs = aMedian - bMedian;
  const ci = bootstrapRatio(aUs, bUs);
  // The goal allows B's median plus max(ratio - 1, addedUs): shift every B sample by that and ask whether A is slower.
  const allowance = Math.max((goal.ratio - 1) * bMedian, goal.addedUs);
  return {
    size,
    bytes,
    aUs,
    bUs,
    aMedian,
    bMedian,
    ratio: aMedian / bMedian,
    addedUs,
    ratioP25: r(0.25),
    ratioP75: r(0.75),
    ratioMin: r(0),
    ratioMax: r(1),
    ciLo: ci?.lo ?? NaN,
    ciHi: ci?.hi ?? NaN,
    pBeyond: mannWhitneyP(
      aUs,
      bUs.map((t) => t + allowance),
      'greater',
    ),
    aOutliers: aUs.filter((t) => t > outlierFactor * aMedian).length,
    bOutliers: bUs.filter((t) => t > outlierFactor * bMedian).length,
    met: aMedian <= bMedian * goal.ratio || addedUs <= goal.addedUs,
    beyondNoise: false,
  };
}

/** Marks the misses that are beyond noise: significant after Holm's correction across the sizes given (α 0.05). */
export function markBeyondNoise(sizes: SizeResult[]): void {
  const significant = holm(sizes.map((s) => s.pBeyond));
  sizes.forEach((s, i) => {
    s.beyondNoise = !s.met && significant[i]!;
  });
}

/** Round r's order of two tools: A first in even rounds, B first in odd ones (A B, B A, A B, …). */
export function aFirst(round: number): boolean {
  return round % 2 === 0;
}
