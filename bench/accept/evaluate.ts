// The verdict of one acceptance check from its runs' reports (pure): per threshold, each run's worst size, judged on
// the median per-iteration time (robust to one descheduled iteration; docs/accept.md), k-of-n attempts decided as
// soon as possible, and the late-rank evidence of the runs.
import { PLACEMENTS, type ReportDocument, type ReportHalf } from '../report/schema.js';
import type { ProfileCheck } from './profile.js';

export type ThresholdName = 'minBusBw' | 'maxTime' | 'maxCv' | 'wrong';

export interface Threshold {
  name: ThresholdName;
  limit: number;
  unit: string;
  /** measured meets the limit */
  holds: (measured: number) => boolean;
  /** the figure of one run: its worst size */
  measure: (halves: SizedHalf[]) => { value: number; sizeBytes: number | null };
  /** sorts runs best first */
  better: (a: number, b: number) => number;
  /** what must hold, for the table */
  text: string;
}

/** One row of a run: `sizeBytes` as the profile asks for it (-b/-e/-f; the run may round it per collective, as nccl-tests
 *  does: all_gather of 8 B on 2 ranks moves 0 B), `actualBytes` as the run moved it. */
export interface SizedHalf {
  sizeBytes: number;
  actualBytes: number;
  half: ReportHalf;
  other: ReportHalf;
}

/** The median per-iteration time of a half (the table's mean time when the run had no per-iteration samples). */
export function medianTimeUs(h: ReportHalf): number | null {
  return h.perIter?.stats.p50 ?? h.timeUs;
}

/** nccl-tests' busbw of the median time: busbw × mean time / median time. */
export function medianBusBwGBps(h: ReportHalf): number | null {
  const p50 = medianTimeUs(h);
  if (h.busBwGBps === null || h.timeUs === null || p50 === null || !(p50 > 0)) return h.busBwGBps;
  return (h.busBwGBps * h.timeUs) / p50;
}

const worst = (
  halves: SizedHalf[],
  pick: (h: ReportHalf) => number | null | undefined,
  high: boolean,
): { value: number; sizeBytes: number | null } => {
  let best: { value: number; sizeBytes: number | null } = { value: high ? -Infinity : Infinity, sizeBytes: null };
  for (const h of halves) {
    const v = pick(h.half);
    // a figure the run could not produce (not finite, no per-iteration timing) counts as failing
    const value = v === null || v === undefined || !Number.isFinite(v) ? (high ? Infinity : -Infinity) : v;
    if (high ? value > best.value : value < best.value) best = { value, sizeBytes: h.sizeBytes };
  }
  return best;
};

export function thresholdsOf(c: ProfileCheck): Threshold[] {
  const out: Threshold[] = [];
  if (c.minBusBwGBps !== null) {
    const limit = c.minBusBwGBps;
    out.push({
      name: 'minBusBw',
      limit,
      unit: 'GB/s',
      text: `>= ${limit} GB/s`,
      holds: (m) => m >= limit,
      // a 0-byte row has no bandwidth to speak of
      measure: (h) =>
        worst(
          h.filter((x) => x.actualBytes > 0),
          medianBusBwGBps,
          false,
        ),
      better: (a, b) => b - a,
    });
  }
  if (c.maxTimeUs !== null) {
    const limit = c.maxTimeUs;
    out.push({
      name: 'maxTime',
      limit,
      unit: 'us',
      text: `<= ${limit} us`,
      holds: (m) => m <= limit,
      measure: (h) => worst(h, medianTimeUs, true),
      better: (a, b) => a - b,
    });
  }
  if (c.maxCvPct !== null) {
    const limit = c.maxCvPct;
    out.push({
      name: 'maxCv',
      limit,
      unit: '%',
      text: `<= ${limit} %`,
      holds: (m) => m <= limit,
      measure: (h) => worst(h, (x) => x.perIter?.stats.cvPct, true),
      better: (a, b) => a - b,
    });
  }
  if (c.wrong) {
    out.push({
      name: 'wrong',
      limit: 0,
      unit: 'elements',
      text: '0 wrong',
      holds: (m) => m === 0,
      measure: (h) => {
        // both halves: a corrupted in-place result is as wrong as an out-of-place one
        let total = 0,
          at: number | null = null;
        for (const x of h) {
          const w = (x.half.wrong ?? 0) + (x.other.wrong ?? 0);
          if (w > 0 && at === null) at = x.sizeBytes;
          total += w;
        }
        return { value: total, sizeBytes: at };
      },
      better: (a, b) => a - b,
    });
  }
  return out;
}

/** The rows of the check's size range from one report (one per size of the sweep, in order), the profile's placement
 *  first, the other half beside it. */
export function sizedHalves(doc: ReportDocument, c: ProfileCheck): SizedHalf[] {
  const key = PLACEMENTS.find((p) => p.label === c.placement)!.key;
  const otherKey = key === 'outOfPlace' ? 'inPlace' : 'outOfPlace';
  return doc.rows.map((r, i) => ({
    sizeBytes: c.sizes[i] ?? r.sizeBytes,
    actualBytes: r.sizeBytes,
    half: r[key],
    other: r[otherKey],
  }));
}

export interface AttemptFigure {
  value: number;
  sizeBytes: number | null;
  holds: boolean;
}

export interface ThresholdResult {
  name: ThresholdName;
  status: 'pass' | 'fail';
  /** The figure that decides: the `pass`-th best run's (all runs failing: the best one's). */
  measured: number;
  sizeBytes: number | null;
  threshold: string;
  limit: number;
  unit: string;
  passed: number;
  attempts: AttemptFigure[];
}

/** Per threshold, one figure per run so far. */
export function judge(c: ProfileCheck, docs: readonly ReportDocument[]): ThresholdResult[] {
  return thresholdsOf(c).map((t) => {
    const figures = docs.map((d): AttemptFigure => {
      const m = t.measure(sizedHalves(d, c));
      return { ...m, holds: t.holds(m.value) };
    });
    const passed = figures.filter((f) => f.holds).length;
    const ranked = [...figures].sort((a, b) => t.better(a.value, b.value));
    const decisive = ranked[Math.min(c.attempts.pass, ranked.length) - 1] ?? { value: NaN, sizeBytes: null };
    return {
      name: t.name,
      status: passed >= c.attempts.pass ? 'pass' : 'fail',
      measured: decisive.value,
      sizeBytes: decisive.sizeBytes,
      threshold: t.text,
      limit: t.limit,
      unit: t.unit,
      passed,
      attempts: figures,
    };
  });
}

/** More runs can change nothing: every threshold has its passes, or one can no longer get them. */
export function decided(c: ProfileCheck, results: readonly ThresholdResult[], runs: number): boolean {
  if (runs >= c.attempts.of) return true;
  const left = c.attempts.of - runs;
  return results.every((r) => r.passed >= c.attempts.pass) || results.some((r) => r.passed + left < c.attempts.pass);
}

export interface LateEvidence {
  rank: number;
  host: string;
  rowHalves: number;
  of: number;
  medianLateUs: number;
  device?: number;
  bus?: string; // from device arrivals (NCCL -I 1): the rank's GPU
}

/** The rank named late in most of the check's row-halves (both placements, every run), when one was named at all. */
export function lateEvidence(docs: readonly ReportDocument[]): LateEvidence | null {
  const byRank = new Map<number, { host: string; device?: number; bus?: string; lateUs: number[] }>();
  let of = 0;
  for (const d of docs) {
    for (const r of d.rows) {
      for (const h of [r.outOfPlace, r.inPlace]) {
        if (h.late === undefined) continue; // a v1 report: no evidence either way
        of++;
        if (!h.late) continue;
        const e = byRank.get(h.late.rank) ?? { host: h.late.host, device: h.late.device, bus: h.late.bus, lateUs: [] };
        e.lateUs.push(h.late.medianLateUs);
        byRank.set(h.late.rank, e);
      }
    }
  }
  let best: LateEvidence | null = null;
  for (const [rank, e] of byRank) {
    if (best && e.lateUs.length <= best.rowHalves) continue;
    const sorted = [...e.lateUs].sort((a, b) => a - b);
    best = { rank, host: e.host, rowHalves: e.lateUs.length, of, medianLateUs: sorted[Math.floor(sorted.length / 2)]! };
    if (e.device !== undefined) {
      best.device = e.device;
      if (e.bus) best.bus = e.bus;
    }
  }
  return best;
}

/** Per size, the per-iteration samples (max over ranks) of every run, concatenated in run order. */
export function samplesBySize(c: ProfileCheck, docs: readonly ReportDocument[]): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const d of docs) {
    for (const s of sizedHalves(d, c)) {
      const samples = s.half.perIter?.samplesUs ?? [];
      out.set(s.sizeBytes, [...(out.get(s.sizeBytes) ?? []), ...samples]);
    }
  }
  return out;
}
