// Statistics of `collbench accept --baseline`: is this run slower than the baseline, per size, beyond noise?
// A percentile bootstrap confidence interval of the ratio of medians (this run's median per-iteration time over
// the baseline's), seeded so the same samples always give the same interval; the level is Bonferroni-corrected
// over every size compared in one verdict, so a profile of many sizes does not raise false alarms by sheer number.
// A regression needs both: the interval lies above 1 (significant) and the ratio exceeds 1 + tolerance (large
// enough to matter). Medians, not means: one descheduled iteration on a shared machine moves a mean by 100×.
//
// The bootstrap itself is core/stats.ts (shared with compare and locate); this file holds accept's use of it.
import { bootstrapRatio } from '../core/stats.js';

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
 * Percentile bootstrap of median(current) / median(baseline) (core/stats.ts bootstrapRatio, one sample a side is
 * enough here: the samples are per-iteration times); [low, high] at `level`.
 */
export function medianRatioInterval(current: readonly number[], baseline: readonly number[], level: number, seed: number,
  resamples = DEFAULT_RESAMPLES): RatioInterval {
  if (current.length === 0 || baseline.length === 0) throw new RangeError('medianRatioInterval: empty sample');
  const r = bootstrapRatio(current, baseline, { level, seed, resamples, minSamples: 1 });
  if (!r) throw new RangeError('medianRatioInterval: a median is not positive');
  return { ratio: r.ratio, low: r.lo, high: r.hi, level, resamples };
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
