// Summary statistics of per-iteration times (-I 1, -K skip): min, max, mean, p50, p95, p99, population
// stdev and cv%. Mirrors computeIterStats / percentileIndex / writePerIterReport in nccl-tests
// src/util.cu, including its summation over the *sorted* samples and its cv = 0 guard for mean <= 0.

export interface IterStats {
  n: number;        // samples summarised (after the skip)
  min: number;
  max: number;
  mean: number;
  p50: number;      // sorted[floor(n/2)]
  p95: number;      // nearest rank
  p99: number;      // nearest rank (= max when n < 100)
  stdev: number;    // population standard deviation
  cvPct: number;    // stdev / mean · 100 (0 when mean <= 0)
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
