// The result of `collbench replay` as a document (kind "collbench-replay", -J) and its renderings: the per-step
// table in nccl-tests' style (step, collective, type, count, bytes, group size, time median and p99, algbw, busbw,
// #wrong), then the totals: communication time per replayed iteration, each collective's share, the costliest steps;
// --csv one line per step (csv-stringify).
import { stringify } from 'csv-stringify/sync';
import { getCollective } from '../collectives/index.js';
import { algBwGBps, busBwGBps } from '../numbers/bandwidth.js';
import { medianOf } from '../numbers/stats.js';
import {
  REPLAY_KIND,
  REPLAY_SCHEMA_VERSION,
  type ReplayDocument,
  type ReplayOp,
  type TimeSpread,
  type TraceFormat,
} from '../report/replay-document.js';
import type { ReplayPlan } from './steps.js';

/** Median, 99th percentile (nearest rank), min and max of samples (µs). */
export function spread(xs: readonly number[]): TimeSpread {
  if (!xs.length) return { medianUs: Number.NaN, p99Us: Number.NaN, minUs: Number.NaN, maxUs: Number.NaN };
  const sorted = [...xs].sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)]!;
  return { medianUs: medianOf(sorted), p99Us: p99, minUs: sorted[0]!, maxUs: sorted[sorted.length - 1]! };
}

export interface DocumentInput {
  plan: ReplayPlan;
  format: TraceFormat;
  files: string[];
  stepUs: number[][];
  iterationUs: number[];
  gapUs: number;
  wrong: number[];
  check: boolean;
  firstWrong: string | null;
  iters: number;
  warmupIters: number;
  gaps: boolean;
  version: string;
  startTime: string;
  argv: string[];
  backend: { name: string; version: string };
  hosts: string[];
  exitCode: number;
}

export function buildDocument(i: DocumentInput): ReplayDocument {
  const ops: ReplayOp[] = i.plan.steps.map((s, k) => {
    const time = spread(i.stepUs[k] ?? []);
    const alg = algBwGBps(s.bytes, time.medianUs);
    return {
      step: s.index,
      collective: s.collective,
      recorded: s.name,
      dtype: s.dtype,
      recordedDtype: s.dtypeName,
      count: s.count,
      bytes: s.bytes,
      group: { id: s.group.id, size: s.group.size },
      root: s.root < 0 ? null : s.root,
      time,
      samplesUs: i.stepUs[k] ?? [],
      algBwGBps: alg,
      busBwGBps: busBwGBps(alg, getCollective(s.collective).busBwFactor(s.group.size)),
      wrong: i.check ? (i.wrong[k] ?? 0) : null,
      where: s.where,
    };
  });
  const sumUs = ops.reduce((a, o) => a + o.time.medianUs, 0);
  const byColl = new Map<string, { steps: number; timeUs: number }>();
  for (const o of ops) {
    const e = byColl.get(o.collective) ?? { steps: 0, timeUs: 0 };
    e.steps++;
    e.timeUs += o.time.medianUs;
    byColl.set(o.collective, e);
  }
  const shares = [...byColl]
    .map(([collective, e]) => ({ collective, ...e, percent: sumUs > 0 ? (100 * e.timeUs) / sumUs : 0 }))
    .sort((a, b) => b.timeUs - a.timeUs);
  const costliest = [...ops]
    .sort((a, b) => b.time.medianUs - a.time.medianUs)
    .slice(0, 5)
    .map((o) => o.step);
  return {
    kind: REPLAY_KIND,
    schemaVersion: REPLAY_SCHEMA_VERSION,
    version: i.version,
    startTime: i.startTime,
    argv: i.argv,
    format: i.format,
    files: i.files,
    nranks: i.plan.nranks,
    hosts: i.hosts,
    backend: i.backend,
    settings: { iters: i.iters, warmupIters: i.warmupIters, check: i.check, gaps: i.gaps },
    notes: i.plan.notes,
    ops,
    iteration: { time: spread(i.iterationUs), gapUs: i.gapUs, samplesUs: i.iterationUs },
    shares,
    costliest,
    firstWrong: i.firstWrong,
    exitCode: i.exitCode,
  };
}

const f2 = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : String(v));
const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : String(v));

/** The text on stdout: nccl-tests-style header and rows, then the totals. */
export function renderText(doc: ReplayDocument): string[] {
  const out = [
    `# collbench replay: ${doc.files.length} ${doc.format} file${doc.files.length === 1 ? '' : 's'}, ${doc.ops.length} steps, ` +
      `${doc.nranks} ranks, ${doc.backend.name} (${doc.backend.version}), ${doc.settings.iters} iterations after ${doc.settings.warmupIters} warm-up`,
    ...doc.notes.map((n) => `# note: ${n}`),
    '#',
    `# ${'step'.padStart(5)} ${'collective'.padEnd(14)} ${'type'.padEnd(8)} ${'count'.padStart(12)} ${'size(B)'.padStart(12)} ` +
      `${'group'.padStart(5)} ${'time(us)'.padStart(10)} ${'p99(us)'.padStart(10)} ${'algbw'.padStart(8)} ${'busbw'.padStart(8)} ` +
      `${'#wrong'.padStart(6)}  recorded`,
    `# ${''.padStart(5)} ${''.padEnd(14)} ${''.padEnd(8)} ${'(elements)'.padStart(12)} ${''.padStart(12)} ${'(n)'.padStart(5)} ` +
      `${'median'.padStart(10)} ${''.padStart(10)} ${'(GB/s)'.padStart(8)} ${'(GB/s)'.padStart(8)} ${''.padStart(6)}`,
  ];
  for (const o of doc.ops) {
    out.push(
      `  ${String(o.step).padStart(5)} ${o.collective.padEnd(14)} ${o.dtype.padEnd(8)} ${String(o.count).padStart(12)} ` +
        `${String(o.bytes).padStart(12)} ${String(o.group.size).padStart(5)} ${f1(o.time.medianUs).padStart(10)} ${f1(o.time.p99Us).padStart(10)} ` +
        `${f2(o.algBwGBps).padStart(8)} ${f2(o.busBwGBps).padStart(8)} ${(o.wrong === null ? 'N/A' : String(o.wrong)).padStart(6)}  ` +
        `${o.recorded}${o.recordedDtype.toLowerCase() !== o.dtype ? ` (${o.recordedDtype})` : ''}`,
    );
  }
  const it = doc.iteration.time;
  const sumSteps = doc.ops.reduce((a, o) => a + o.time.medianUs, 0);
  out.push(
    '#',
    `# Communication per replayed iteration: ${f1(it.medianUs)} us median, ${f1(it.p99Us)} us p99 (whole sequence back to back` +
      `${doc.settings.gaps && doc.iteration.gapUs > 0 ? `, plus ${f1(doc.iteration.gapUs)} us of recorded gaps` : ''}); ` +
      `steps timed alone sum to ${f1(sumSteps)} us`,
    `# Share by collective: ${doc.shares.map((s) => `${s.collective} ${s.percent.toFixed(1)}% (${s.steps} step${s.steps === 1 ? '' : 's'})`).join(', ')}`,
    `# Costliest steps: ${doc.costliest
      .map((k) => {
        const o = doc.ops.find((x) => x.step === k)!;
        return `${k} ${o.collective} ${o.bytes} B ${f1(o.time.medianUs)} us`;
      })
      .join('; ')}`,
  );
  if (doc.firstWrong) out.push(`# Wrong result: ${doc.firstWrong}`);
  return out;
}

/** --csv: one line per step. */
export function renderCsv(doc: ReplayDocument): string {
  return stringify(
    doc.ops.map((o) => ({
      step: o.step,
      collective: o.collective,
      recorded: o.recorded,
      dtype: o.dtype,
      count: o.count,
      bytes: o.bytes,
      group_size: o.group.size,
      time_median_us: o.time.medianUs,
      time_p99_us: o.time.p99Us,
      algbw_gbps: o.algBwGBps,
      busbw_gbps: o.busBwGBps,
      wrong: o.wrong ?? '',
    })),
    { header: true },
  );
}

/** --dry-run: the checked steps, nothing run. */
export function planLines(plan: ReplayPlan, format: TraceFormat, files: number): string[] {
  const total = plan.steps.reduce((a, s) => a + s.bytes, 0);
  return [
    `# collbench replay --dry-run: ${files} ${format} file${files === 1 ? '' : 's'}, ${plan.nranks} ranks, ${plan.steps.length} steps, ${total} bytes per iteration`,
    ...plan.notes.map((n) => `# note: ${n}`),
    ...plan.steps.map(
      (s) =>
        `${String(s.index).padStart(5)}  ${s.collective.padEnd(14)} ${s.dtype.padEnd(8)} ${String(s.count).padStart(12)} ` +
        `${String(s.bytes).padStart(12)}  group ${s.group.id} (${s.group.size})  ${s.name}  ${s.where}`,
    ),
  ];
}
