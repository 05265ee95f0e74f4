// Statistics of `collbench accept --baseline`: is this run slower than the baseline, per size, beyond noise?
// A percentile bootstrap confidence interval of the ratio of medians (this run's median per-iteration time over
// the baseline's), seeded so the same samples always give the same interval; the level is Bonferroni-corrected
// over every size compared in one verdict, so a profile of many sizes does not raise false alarms by sheer number.
// A regression needs both: the interval lies above 1 (significant) and the ratio exceeds 1 + tolerance (large
// enough to matter). Medians, not means: one descheduled iteration on a shared machine moves a mean by 100×.
//
// Why simple-statistics: a small, dependency-free, maintained package whose median/quantile (quickselect) and
// sampleWithReplacement (taking our seeded random source) are exactly the pieces of a bootstrap; nothing here is a
// hand-written estimator. The random source is a 32-bit mulberry32 (a few lines): reproducibility is what matters,
// and the package accepts any () => [0, 1) function.
import { median, quantile, sampleWithReplacement } from 'simple-statistics';

/** mulberry32: a seeded uniform [0, 1) generator (period 2^32), enough for resampling. */
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

/** A stable 32-bit seed from a string (FNV-1a), so each size of each check has its own reproducible stream. */
export function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export interface RatioInterval {
  /** median(current) / median(baseline): > 1 is slower. */
  ratio: number;
  low: number;
  high: number;
  /** Two-sided confidence level of [low, high]. */
  level: number;
  resamples: number;
}

export const DEFAULT_RESAMPLES = 4000;

/**
 * Percentile bootstrap of median(current) / median(baseline): both samples resampled with replacement
 * `resamples` times; [low, high] are the (1 − level)/2 and (1 + level)/2 quantiles of the resampled ratios.
 */
export function medianRatioInterval(current: readonly number[], baseline: readonly number[], level: number, seed: number,
  resamples = DEFAULT_RESAMPLES): RatioInterval {
  if (current.length === 0 || baseline.length === 0) throw new RangeError('medianRatioInterval: empty sample');
  const rnd = seededRandom(seed);
  const cur = [...current], base = [...baseline];
  const ratios = new Array<number>(resamples);
  for (let i = 0; i < resamples; i++) {
    ratios[i] = median(sampleWithReplacement(cur, cur.length, rnd)) / median(sampleWithReplacement(base, base.length, rnd));
  }
  const [low, high] = quantile(ratios, [(1 - level) / 2, (1 + level) / 2]) as [number, number];
  return { ratio: median(cur) / median(base), low, high, level, resamples };
}

/** The per-comparison level that keeps the family-wise error rate at `alpha` over `m` comparisons (Bonferroni). */
export function bonferroniLevel(alpha: number, m: number): number {
  return 1 - alpha / Math.max(1, m);
}

export type Change = 'regression' | 'improvement' | 'unchanged';

/** Slower beyond the tolerance and significantly so: a regression. Faster likewise: an improvement. */
export function classifyRatio(r: RatioInterval, tolerance: number): Change {
  if (r.low > 1 && r.ratio > 1 + tolerance) return 'regression';
  if (r.high < 1 && r.ratio < 1 / (1 + tolerance)) return 'improvement';
  return 'unchanged';
}
