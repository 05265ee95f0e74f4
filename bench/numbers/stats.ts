// The statistics the run and the features share: the median, -I's per-iteration summary, seeded bootstrap intervals
// (one Interval type), the Mann-Whitney U test (exact for small samples) with Holm's correction, the Bonferroni level.
// Built on simple-statistics; the methods and their sources: docs/developing.md.
import { errorFunction, median, quantile, sampleWithReplacement, wilcoxonRankSum } from 'simple-statistics';

/** A small, fast, seedable PRNG (mulberry32): uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function medianOf(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : median(xs as number[]);
}

/** The q-quantile (simple-statistics' interpolation), NaN for no samples. */
export function quantileOf(xs: readonly number[], q: number): number {
  return xs.length === 0 ? Number.NaN : quantile(xs as number[], q);
}

/** A percentile-bootstrap interval: the one interval type (compare, locate, accept, workload, the side-by-side). */
export interface Interval {
  estimate: number; // the statistic of the data itself (bootstrapRatio: median(a) / median(b))
  lo: number; // the interval's bounds, at `level`
  hi: number;
  level: number;
  resamples: number;
}

/**
 * median(a) / median(b) with a percentile-bootstrap interval at `level`: both samples resampled with replacement
 * (simple-statistics' sampleWithReplacement, fed the seeded generator), the interval the (1 − level)/2 and
 * (1 + level)/2 quantiles of the resampled ratios. Null when either side has fewer than `minSamples` values (default 2:
 * one run proves nothing) or a median is not positive.
 */
export function bootstrapRatio(
  a: readonly number[],
  b: readonly number[],
  opts: { level?: number; resamples?: number; seed?: number; minSamples?: number } = {},
): Interval | null {
  const level = opts.level ?? 0.95;
  const resamples = opts.resamples ?? 4000;
  const minSamples = opts.minSamples ?? 2;
  if (a.length < Math.max(1, minSamples) || b.length < Math.max(1, minSamples)) return null;
  const ratio = medianOf(a) / medianOf(b);
  if (!(ratio > 0) || !Number.isFinite(ratio)) return null;
  const rand = seededRandom(opts.seed ?? 1);
  const xs = [...a],
    ys = [...b];
  const [lo, hi] = percentileInterval(
    resamples,
    level,
    () => median(sampleWithReplacement(xs, xs.length, rand)) / median(sampleWithReplacement(ys, ys.length, rand)),
  );
  return { estimate: ratio, lo, hi, level, resamples };
}

/** The (1 − level)/2 and (1 + level)/2 quantiles of `resamples` draws of a bootstrap statistic. */
function percentileInterval(resamples: number, level: number, draw: () => number): [number, number] {
  const values = Array.from({ length: resamples }, draw).filter((v) => Number.isFinite(v));
  if (values.length === 0) return [Number.NaN, Number.NaN];
  return quantile(values, [(1 - level) / 2, (1 + level) / 2]) as [number, number];
}

/**
 * Any statistic of paired observations (rows measured together, e.g. one repeat's several times) with a percentile-
 * bootstrap interval at `level`: whole rows resampled with replacement, so what was measured together stays together.
 * Null with fewer than 2 rows or when the statistic of the data is not finite.
 */
export function bootstrapPaired<T>(
  rows: readonly T[],
  statistic: (rows: T[]) => number,
  opts: { level?: number; resamples?: number; seed?: number } = {},
): Interval | null {
  const level = opts.level ?? 0.95;
  const resamples = opts.resamples ?? 4000;
  if (rows.length < 2) return null;
  const estimate = statistic([...rows]);
  if (!Number.isFinite(estimate)) return null;
  const rand = seededRandom(opts.seed ?? 1);
  const all = [...rows];
  const [lo, hi] = percentileInterval(resamples, level, () => statistic(sampleWithReplacement(all, all.length, rand)));
  return { estimate, lo, hi, level, resamples };
}

export type Alternative = 'two-sided' | 'less' | 'greater';

/**
 * p-value of the Mann-Whitney U test (Wilcoxon rank-sum) of a against b; `less`: a tends to be smaller than b. Exact,
 * from the distribution of U (counted by the standard recursion), when neither side has more than 30 values and there
 * are no ties; else the normal approximation with tie and continuity corrections. With 3 values a side the smallest
 * two-sided p is 0.1: a rank test cannot call 3 runs against 3 significant at 0.05, which is the honest answer.
 */
export function mannWhitneyP(
  a: readonly number[],
  b: readonly number[],
  alternative: Alternative = 'two-sided',
): number {
  const n1 = a.length,
    n2 = b.length;
  if (n1 === 0 || n2 === 0) return 1;
  const u = wilcoxonRankSum(a as number[], b as number[]) - (n1 * (n1 + 1)) / 2; // U of a: pairs where a is larger
  const all = [...a, ...b].sort((x, y) => x - y);
  const tied = all.some((x, i) => i > 0 && x === all[i - 1]);
  const oneSided = (small: number): number => {
    // P(U <= small) under the null hypothesis
    if (!tied && n1 <= 30 && n2 <= 30) {
      const counts = uDistribution(n1, n2);
      const total = counts.reduce((sum, c) => sum + c, 0);
      let tail = 0;
      for (let k = 0; k <= Math.floor(small + 1e-9); k++) tail += counts[k] ?? 0;
      return tail / total;
    }
    const n = n1 + n2;
    let ties = 0;
    for (let i = 0; i < all.length;) {
      let j = i;
      while (j < all.length && all[j] === all[i]) j++;
      ties += (j - i) ** 3 - (j - i);
      i = j;
    }
    const sigma = Math.sqrt(((n1 * n2) / 12) * (n + 1 - ties / (n * (n - 1))));
    if (sigma === 0) return 1;
    return normalCdf((small - (n1 * n2) / 2 + 0.5) / sigma);
  };
  if (alternative === 'less') return Math.min(1, oneSided(u));
  if (alternative === 'greater') return Math.min(1, oneSided(n1 * n2 - u));
  return Math.min(1, 2 * oneSided(Math.min(u, n1 * n2 - u)));
}

/**
 * The smallest p mannWhitneyP can give (two-sided) for n1 values against n2: that of samples that do not overlap,
 * 2 / C(n1 + n2, n1) where it is exact. Above the level a test needs, no measurement could pass it: too few runs.
 */
export function smallestRankP(n1: number, n2: number): number {
  return mannWhitneyP(
    Array.from({ length: n1 }, (_, i) => i),
    Array.from({ length: n2 }, (_, i) => n1 + i),
  );
}

/** counts[k]: orderings of n1 + n2 distinct values with U = k, by f(n1, n2, k) = f(n1 − 1, n2, k − n2) + f(n1, n2 − 1, k). */
function uDistribution(n1: number, n2: number): number[] {
  let table: number[][] = Array.from({ length: n2 + 1 }, () => [1]); // n1 = 0: U = 0 only
  for (let i = 1; i <= n1; i++) {
    const next: number[][] = [[1]]; // n2 = 0
    for (let j = 1; j <= n2; j++) {
      const row = new Array<number>(i * j + 1).fill(0);
      table[j]!.forEach((c, k) => {
        row[k + j]! += c;
      }); // the largest value is from a: it beats all j of b
      next[j - 1]!.forEach((c, k) => {
        row[k]! += c;
      }); // the largest value is from b
      next.push(row);
    }
    table = next;
  }
  return table[n2]!;
}

/** Standard normal CDF, from simple-statistics' error function. */
export function normalCdf(z: number): number {
  return Math.min(1, Math.max(0, 0.5 * (1 + errorFunction(z / Math.SQRT2))));
}

/** The family-wise level of the significance tests (compare's, workload's): 5 %. */
export const SIGNIFICANCE_LEVEL = 0.05;

/** Holm's step-down correction: which of the p-values are significant at family-wise level alpha. */
export function holm(pValues: readonly number[], alpha = SIGNIFICANCE_LEVEL): boolean[] {
  const order = pValues.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p);
  const out = new Array<boolean>(pValues.length).fill(false);
  for (let k = 0; k < order.length; k++) {
    if (order[k]!.p > alpha / (order.length - k)) break;
    out[order[k]!.i] = true;
  }
  return out;
}

/** A stable 32-bit seed from a string (FNV-1a), so each size of each check has its own reproducible stream. */
export function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export const DEFAULT_RESAMPLES = 4000;

/**
 * Percentile bootstrap of median(current) / median(baseline) (bootstrapRatio, one sample a side is enough here: the
 * samples are per-iteration times, `collbench accept --baseline`); [lo, hi] at `level`.
 */
export function medianRatioInterval(
  current: readonly number[],
  baseline: readonly number[],
  level: number,
  seed: number,
  resamples = DEFAULT_RESAMPLES,
): Interval {
  if (current.length === 0 || baseline.length === 0) throw new RangeError('medianRatioInterval: empty sample');
  const r = bootstrapRatio(current, baseline, { level, seed, resamples, minSamples: 1 });
  if (!r) throw new RangeError('medianRatioInterval: a median is not positive');
  return r;
}

/** The per-comparison level that keeps the family-wise error rate at `alpha` over `m` comparisons (Bonferroni). */
export function bonferroniLevel(alpha: number, m: number): number {
  return 1 - alpha / Math.max(1, m);
}

// ---- per-iteration times of one run (-I 1, -K skip): min, max, mean, p50, p95, p99, population stdev and cv%. Mirrors
// computeIterStats / percentileIndex / writePerIterReport in nccl-tests src/util.cu, including its summation over the
// *sorted* samples and its cv = 0 guard for mean <= 0.

export interface IterStats {
  n: number; // samples summarised (after the skip)
  min: number;
  max: number;
  mean: number;
  p50: number; // sorted[floor(n/2)]
  p95: number; // nearest rank
  p99: number; // nearest rank (= max when n < 100)
  stdev: number; // population standard deviation
  cvPct: number; // stdev / mean · 100 (0 when mean <= 0)
}

/** Nearest-rank index: min(n−1, ceil(n·p/100) − 1), computed in integers as nccl-tests does. */
export function percentileIndex(n: number, percentile: number): number {
  return Math.min(n - 1, Math.floor((n * percentile + 99) / 100) - 1);
}

/**
 * Statistics over samples[skip..]. Units are whatever the samples are in (µs from the native layer);
 * cvPct is unit-free. Throws RangeError when nothing is left to summarise (options validation keeps
 * -K within 0..n−1, so this is a caller bug).
 */
export function iterStats(samples: readonly number[], skip = 0): IterStats {
  if (!Number.isInteger(skip) || skip < 0) throw new RangeError(`iterStats: bad skip ${skip}`);
  const sorted = samples.slice(skip).sort((a, b) => (a > b ? 1 : a < b ? -1 : 0));
  const n = sorted.length;
  if (n === 0) throw new RangeError(`iterStats: no samples left after skipping ${skip} of ${samples.length}`);
  let sum = 0;
  for (const x of sorted) sum += x;
  const mean = sum / n;
  let variance = 0;
  for (const x of sorted) {
    const d = x - mean;
    variance += d * d;
  }
  const stdev = Math.sqrt(variance / n);
  return {
    n,
    min: sorted[0]!,
    max: sorted[n - 1]!,
    mean,
    p50: sorted[Math.floor(n / 2)]!,
    p95: sorted[percentileIndex(n, 95)]!,
    p99: sorted[percentileIndex(n, 99)]!,
    stdev,
    cvPct: mean > 0 ? (stdev / mean) * 100.0 : 0.0,
  };
}
