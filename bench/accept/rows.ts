// A check's runs turned into the rows of the acceptance verdict: each threshold judged over the attempts, and the
// comparison with a saved baseline size by size (the bootstrap interval of the ratio of medians at the verdict's
// Bonferroni level). Pure: the runs themselves come from accept/runs.ts.
import { formatSize } from '../config/sizes.js';
import type { ReportDocument } from '../report/schema.js';
import type { BaselineCheck } from './baseline.js';
import { lateEvidence, samplesBySize, type ThresholdResult } from './evaluate.js';
import { linksRow } from './links.js';
import type { ProfileCheck } from './profile.js';
import { medianOf, medianRatioInterval, seedOf } from '../numbers/stats.js';
import { classifyRatio, type BaselineSize, type CheckRow } from './verdict.js';

/** What the runs of one check gave. */
export interface CheckRuns {
  check: ProfileCheck;
  docs: ReportDocument[];
  results: ThresholdResult[];
  error: { line: string; exitCode: number } | null;
}

/** Per size: this run's samples against the baseline's, the interval at the Bonferroni level of the whole verdict. */
function compareSizes(runs: CheckRuns, base: BaselineCheck, level: number, tolerance: number): BaselineSize[] {
  const now = samplesBySize(runs.check, runs.docs);
  return base.sizes.map((b) => {
    const cur = now.get(b.sizeBytes) ?? [];
    if (cur.length === 0) {
      return {
        sizeBytes: b.sizeBytes,
        baselineMedianUs: medianOf(b.samplesUs),
        medianUs: NaN,
        ratio: NaN,
        low: NaN,
        high: NaN,
        change: 'unchanged',
      };
    }
    const r = medianRatioInterval(cur, b.samplesUs, level, seedOf(`${runs.check.id} ${b.sizeBytes}`));
    return {
      sizeBytes: b.sizeBytes,
      baselineMedianUs: medianOf(b.samplesUs),
      medianUs: medianOf(cur),
      ratio: r.estimate,
      low: r.lo,
      high: r.hi,
      change: classifyRatio(r, tolerance),
    };
  });
}

export function checkRows(
  runs: CheckRuns,
  baseline: { check: BaselineCheck; level: number; tolerance: number } | null,
): CheckRow[] {
  const c = runs.check;
  const late = lateEvidence(runs.docs);
  const common = {
    id: c.id,
    collective: c.collective,
    minBytes: c.minBytes,
    maxBytes: c.maxBytes,
    placement: c.placement,
    late,
  };
  const attempts = (passed: number) => ({ pass: c.attempts.pass, of: c.attempts.of, run: runs.docs.length, passed });
  const rows: CheckRow[] = runs.results.map((r) => ({
    ...common,
    check: r.name,
    status: runs.error ? 'fail' : r.status,
    measured: runs.docs.length ? r.measured : null,
    unit: r.unit,
    sizeBytes: r.sizeBytes,
    threshold: r.threshold,
    attempts: attempts(r.passed),
  }));
  if (c.links && !runs.error) rows.push(linksRow(c, runs.docs, common));
  if (baseline && !runs.error) {
    const sizes = compareSizes(runs, baseline.check, baseline.level, baseline.tolerance);
    const worst = sizes
      .filter((s) => Number.isFinite(s.ratio))
      .reduce<BaselineSize | null>((w, s) => (!w || s.ratio > w.ratio ? s : w), null);
    const regressed = sizes.some((s) => s.change === 'regression');
    rows.push({
      ...common,
      check: 'baseline',
      status: regressed ? 'fail' : 'pass',
      measured: worst?.ratio ?? null,
      unit: 'x',
      sizeBytes: worst?.sizeBytes ?? null,
      threshold: worst
        ? `x${(1 + baseline.tolerance).toFixed(2)} max; [${worst.low.toFixed(2)}, ${worst.high.toFixed(2)}] @${formatSize(worst.sizeBytes)}`
        : 'n/a',
      attempts: attempts(runs.docs.length),
      baseline: { tolerance: baseline.tolerance, level: baseline.level, sizes },
    });
  }
  if (runs.error) {
    const row: CheckRow = rows[0] ?? {
      ...common,
      check: 'run',
      status: 'fail',
      measured: null,
      unit: '',
      sizeBytes: null,
      threshold: 'the run completes',
      attempts: attempts(0),
    };
    row.error = runs.error.line;
    if (rows.length === 0) rows.push(row);
  }
  return rows;
}
