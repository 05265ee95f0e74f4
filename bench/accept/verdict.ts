// The verdict of `collbench accept` as a document (what -J writes, schema/collbench-accept.v1.schema.json), as the
// text table printed at the end, and as JUnit XML (--junit: one test case per check row, failures for failing
// ones), in the style of the run exporter (bench/report/exporters/junit.ts, whose xmlEscape it shares).
import { formatSize } from '../config/sizes.js';
import { lateRankName } from '../core/ranks.js';
import { xmlEscape } from '../report/exporters/junit.js';
import type { LateEvidence } from './evaluate.js';
import type { Interval } from '../numbers/stats.js';

export type Change = 'regression' | 'improvement' | 'unchanged';

/** Slower beyond the tolerance and significantly so (the interval above 1): a regression. Faster likewise: an
 *  improvement. A regression needs both, large enough to matter and beyond noise. */
export function classifyRatio(r: Interval, tolerance: number): Change {
  if (r.lo > 1 && r.estimate > 1 + tolerance) return 'regression';
  if (r.hi < 1 && r.estimate < 1 / (1 + tolerance)) return 'improvement';
  return 'unchanged';
}

export const ACCEPT_KIND = 'collbench-accept';
export const ACCEPT_SCHEMA_VERSION = 1;

export type Verdict = 'pass' | 'fail' | 'error';

export interface BaselineSize {
  sizeBytes: number;
  baselineMedianUs: number;
  medianUs: number;
  ratio: number;
  low: number;
  high: number;
  change: Change;
}

/** One row of the verdict: one threshold (or the baseline comparison) of one check of the profile. */
export interface CheckRow {
  id: string;
  collective: string;
  /** minBusBw, maxTime, maxCv, wrong, baseline, or run (a check whose runs failed before any figure) */
  check: string;
  status: 'pass' | 'fail';
  minBytes: number;
  maxBytes: number;
  placement: string;
  /** the deciding figure and where (the worst size of the deciding run; baseline: the largest time ratio) */
  measured: number | null;
  unit: string;
  sizeBytes: number | null;
  /** what had to hold: `>= 5 GB/s`, or the baseline comparison with its interval */
  threshold: string;
  attempts: { pass: number; of: number; run: number; passed: number };
  late: LateEvidence | null;
  baseline?: { tolerance: number; level: number; sizes: BaselineSize[] };
  error?: string;
}

export interface AcceptDocument {
  kind: typeof ACCEPT_KIND;
  schemaVersion: typeof ACCEPT_SCHEMA_VERSION;
  verdict: Verdict;
  exitCode: number;
  startTime: string;
  endTime: string;
  argv: string[];
  profile: { name: string; path: string };
  world: { nranks: number; backend: string; host: string } | null;
  baseline: {
    path: string;
    createdAt: string;
    host: string;
    tolerance: number;
    alpha: number;
    comparisons: number;
  } | null;
  savedBaseline: string | null;
  checks: CheckRow[];
  errors: string[];
}

const num = (v: number | null, unit: string): string => {
  if (v === null || Number.isNaN(v)) return 'n/a';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : Math.abs(v) >= 1 ? 2 : 3;
  return `${v.toFixed(digits)} ${unit}`.trimEnd();
};

export const range = (r: { minBytes: number; maxBytes: number }): string =>
  r.minBytes === r.maxBytes ? `${formatSize(r.minBytes)} B` : `${formatSize(r.minBytes)}-${formatSize(r.maxBytes)} B`;

export function measuredText(r: CheckRow): string {
  if (r.error) return 'error';
  if (r.check === 'baseline') return r.measured === null ? 'n/a' : `x${r.measured.toFixed(2)} time`;
  const figure = r.check === 'wrong' && r.measured !== null ? `${r.measured} ${r.unit}` : num(r.measured, r.unit);
  return figure + (r.sizeBytes !== null ? ` @${formatSize(r.sizeBytes)}` : '');
}

export function lateText(l: LateEvidence): string {
  return `${lateRankName(l)} arrived late in ${l.rowHalves} of ${l.of} row-halves (+${num(l.medianLateUs, 'us')} median)`;
}

/** The table printed at the end of `collbench accept`, then one line per named late rank and per error. */
export function renderVerdictText(d: AcceptDocument): string[] {
  const head = ['check', 'sizes', 'test', 'measured', 'threshold / baseline', 'runs', 'result'];
  const rows = d.checks.map((r) => [
    r.id,
    range(r),
    r.check,
    measuredText(r),
    r.threshold,
    `${r.attempts.passed}/${r.attempts.run} (need ${r.attempts.pass} of ${r.attempts.of})`,
    r.status.toUpperCase(),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => `# ${cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd();
  const out = [
    `# collbench accept: profile ${d.profile.name}` +
      (d.world ? `, ${d.world.nranks} ranks, ${d.world.backend}, host ${d.world.host}` : ''),
  ];
  if (d.baseline) {
    out.push(
      `# baseline ${d.baseline.path} (${d.baseline.createdAt}, host ${d.baseline.host}): a size regresses when its ` +
        `time ratio's ${(100 * (1 - d.baseline.alpha / Math.max(1, d.baseline.comparisons))).toFixed(2)}% interval lies above 1 ` +
        `and the ratio exceeds ${(1 + d.baseline.tolerance).toFixed(2)}`,
    );
  }
  out.push(line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line));
  const named = new Set<string>();
  for (const r of d.checks) {
    if (r.late && r.status === 'fail' && !named.has(r.id)) {
      named.add(r.id);
      out.push(`# ${r.id}: ${lateText(r.late)}`);
    }
    for (const s of r.baseline?.sizes ?? []) {
      if (s.change === 'regression') {
        out.push(
          `# ${r.id}: ${formatSize(s.sizeBytes)} B is x${s.ratio.toFixed(2)} slower [${s.low.toFixed(2)}, ${s.high.toFixed(2)}]` +
            ` (median ${num(s.medianUs, 'us')}, baseline ${num(s.baselineMedianUs, 'us')})`,
        );
      }
    }
    if (r.error) out.push(`# ${r.id}: ${r.error}`);
  }
  for (const e of d.errors) out.push(`# error: ${e}`);
  out.push(
    `# verdict: ${d.verdict.toUpperCase()} (${d.checks.filter((c) => c.status === 'pass').length} of ${d.checks.length} checks passed)`,
  );
  return out;
}

export function renderVerdictJson(d: AcceptDocument): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}

const attr = (name: string, v: string | number): string => ` ${name}="${xmlEscape(String(v))}"`;

export function renderVerdictJunit(d: AcceptDocument): string {
  const failures = d.checks.filter((c) => c.status === 'fail' && !c.error).length;
  const errors = d.checks.filter((c) => c.error).length;
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(
    `<testsuites${attr('name', `collbench accept ${d.profile.name}`)}${attr('tests', d.checks.length)}` +
      `${attr('failures', failures)}${attr('errors', errors)}>`,
  );
  out.push(
    `  <testsuite${attr('name', `accept ${d.profile.name}`)}${attr('tests', d.checks.length)}${attr('failures', failures)}` +
      `${attr('errors', errors)}${attr('timestamp', d.startTime)}${attr('hostname', d.world?.host ?? '')}>`,
  );
  out.push('    <properties>');
  out.push(`      <property${attr('name', 'verdict')}${attr('value', d.verdict)}/>`);
  if (d.world) out.push(`      <property${attr('name', 'backend')}${attr('value', d.world.backend)}/>`);
  if (d.world) out.push(`      <property${attr('name', 'nranks')}${attr('value', d.world.nranks)}/>`);
  if (d.baseline) out.push(`      <property${attr('name', 'baseline')}${attr('value', d.baseline.path)}/>`);
  out.push('    </properties>');
  for (const r of d.checks) {
    out.push(
      `    <testcase${attr('name', `${r.id} ${r.check}`)}${attr('classname', `collbench.accept.${r.collective}`)}>`,
    );
    const said =
      `${r.check} ${range(r)}: measured ${measuredText(r)}, required ${r.threshold}` +
      (r.late ? `; ${lateText(r.late)}` : '');
    if (r.error)
      out.push(`      <error${attr('message', r.error)}${attr('type', 'run')}>${xmlEscape(r.error)}</error>`);
    else if (r.status === 'fail')
      out.push(`      <failure${attr('message', said)}${attr('type', r.check)}>${xmlEscape(said)}</failure>`);
    out.push(`      <system-out>${xmlEscape(said)}</system-out>`);
    out.push('    </testcase>');
  }
  out.push('  </testsuite>');
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
