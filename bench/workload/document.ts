// The result of `collbench workload` as a document (schema/collbench-workload.v1.schema.json) and its renderings:
// the text table on stdout, -J JSON, --csv (csv-stringify, one line per configuration) and --html (one page with the
// time-per-step chart drawn by vega-lite, as run reports' charts are).
import { stringify } from 'csv-stringify/sync';
import type { TopLevelSpec } from 'vega-lite';
import { SIGNIFICANCE_LEVEL } from '../numbers/stats.js';
import { htmlEscape, STYLE, toSvg } from '../report/exporters/html.js';
import {
  type ConfigurationSummary,
  type Overlap,
  type RepeatSamples,
  type Recommendation,
  type Spread,
} from './analyze.js';
import type { SequenceOp, WorkloadPlan } from './plan.js';

export const WORKLOAD_KIND = 'collbench-workload';
export const WORKLOAD_SCHEMA_VERSION = 1;

export interface WorkloadSettings {
  varies: string;
  repeats: number;
  steps: number;
  warmupSteps: number;
  computeMs: number;
  firstBucketMb?: number;
  check: boolean;
}

export interface WorkloadConfiguration {
  value: number;
  label: string;
  calls: number;
  bytesPerStep: number;
  busBytesPerStep: number;
  commUs: Spread;
  stepUs: Spread | null;
  computeUs: number | null;
  busBwGBps: number;
  overlapPct: number | null;
  overlap?: Overlap | null;
  wrong: number | null;
  ops: SequenceOp[];
  samples: { commUs: number[][]; stepUs: number[][] | null };
}

export interface WorkloadDocument {
  kind: typeof WORKLOAD_KIND;
  schemaVersion: typeof WORKLOAD_SCHEMA_VERSION;
  collbenchVersion: string;
  workload: WorkloadPlan['kind'];
  startTime: string;
  argv: string[];
  backend: { name: string; version: string };
  nranks: number;
  hosts: string[];
  model: { source: string; totalParams: number; parameters: number; blocks: number; dtype: string; world: number };
  settings: WorkloadSettings;
  configurations: WorkloadConfiguration[];
  recommendation: Recommendation;
  exitCode: number;
}

export function buildDocument(a: {
  plan: WorkloadPlan;
  settings: WorkloadSettings;
  summaries: ConfigurationSummary[];
  samples: RepeatSamples[][];
  recommendation: Recommendation;
  version: string;
  startTime: string;
  argv: string[];
  backend: { name: string; version: string };
  nranks: number;
  hosts: string[];
  exitCode: number;
}): WorkloadDocument {
  const { plan } = a;
  return {
    kind: WORKLOAD_KIND,
    schemaVersion: WORKLOAD_SCHEMA_VERSION,
    collbenchVersion: a.version,
    workload: plan.kind,
    startTime: a.startTime,
    argv: a.argv,
    backend: a.backend,
    nranks: a.nranks,
    hosts: a.hosts,
    model: {
      source: plan.model.source,
      totalParams: plan.model.totalParams,
      parameters: plan.model.params.length,
      blocks: plan.model.layers,
      dtype: plan.dtype,
      world: plan.world,
    },
    settings: a.settings,
    configurations: a.summaries.map((s, i) => ({
      value: s.value,
      label: s.label,
      calls: s.calls,
      bytesPerStep: s.bytesPerStep,
      busBytesPerStep: s.busBytesPerStep,
      commUs: s.comm,
      stepUs: s.step,
      computeUs: s.computeUs,
      busBwGBps: s.busBwGBps,
      overlapPct: s.overlapPct,
      overlap: s.overlap,
      wrong: a.settings.check ? s.wrong : null,
      ops: plan.configurations[i]!.ops,
      samples: {
        commUs: a.samples[i]!.map((r) => r.commUs),
        stepUs: a.samples[i]!.every((r) => r.stepUs !== null) ? a.samples[i]!.map((r) => r.stepUs!) : null,
      },
    })),
    recommendation: a.recommendation,
    exitCode: a.exitCode,
  };
}

const ms = (us: number | null | undefined): string =>
  us === null || us === undefined || !Number.isFinite(us) ? 'N/A' : (us / 1e3).toFixed(3);
const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

/** The overlap cell: a figure only when its interval lies above 0 (then with the interval), else what the interval says. */
export function overlapCell(c: Pick<WorkloadConfiguration, 'overlapPct' | 'overlap'>): string {
  const o = c.overlap;
  if (c.overlapPct === null || !o) return 'N/A';
  if (o.verdict === 'none') return 'none';
  if (o.verdict === 'noise') return 'within noise';
  return `${c.overlapPct.toFixed(0)} [${o.lo.toFixed(0)}, ${o.hi.toFixed(0)}]`;
}

/** What `none` and `within noise` in the overlap column rest on: each configuration's interval. */
function overlapNotes(doc: WorkloadDocument): string[] {
  const of = (verdict: Overlap['verdict']): WorkloadConfiguration[] =>
    doc.configurations.filter((c) => c.overlap?.verdict === verdict);
  const list = (cs: WorkloadConfiguration[]): string =>
    cs.map((c) => `${c.label} [${c.overlap!.lo.toFixed(0)}, ${c.overlap!.hi.toFixed(0)}] %`).join(', ');
  const level = (cs: WorkloadConfiguration[]): string => `${Math.round(cs[0]!.overlap!.level * 100)}%`;
  const out: string[] = [];
  const noise = of('noise'),
    none = of('none');
  if (noise.length) {
    out.push(
      `# overlap within noise (${level(noise)} bootstrap interval over the repeats contains 0): ${list(noise)}; ` +
        "the step with compute differs from communication + compute by less than the repeats' spread",
    );
  }
  if (none.length) {
    out.push(
      `# overlap none (${level(none)} interval below 0): ${list(none)}; the step with compute took longer than ` +
        "communication + compute together: nothing hidden, and something added (e.g. ranks' compute not ending together)",
    );
  }
  return out;
}

/** The recommendation in one line per comparison, as the text output and the HTML page print it. */
export function recommendationLines(doc: WorkloadDocument): string[] {
  const r = doc.recommendation;
  const what = r.metric === 'step' ? 'time per step with the stand-in compute' : 'communication time per step';
  const lines = [`# Recommended ${doc.settings.varies}: ${r.label} (lowest median ${what})`];
  if (r.margins.length > 0) {
    lines.push(
      `#   each other one: its median over ${r.label}'s with a 95% bootstrap interval; p: one-sided Mann-Whitney over the ` +
        `repeats; significant: Holm-corrected over ${r.margins.length} at ${SIGNIFICANCE_LEVEL} and the interval above 1`,
    );
  }
  for (const m of r.margins) {
    const ci = m.lo !== null && m.hi !== null ? ` [${m.lo.toFixed(2)}, ${m.hi.toFixed(2)}]` : '';
    lines.push(
      `#   ${m.label}: ${m.ratio.toFixed(2)}x${ci}, p=${m.p.toPrecision(2)}, ` +
        (m.significant ? 'significantly slower' : 'no significant difference'),
    );
  }
  if (r.margins.length > 0 && r.margins.every((m) => !m.significant)) {
    lines.push(
      `#   No configuration is significantly slower than ${r.label} here: any of them will do, or rerun with more --repeats.`,
    );
  }
  return lines;
}

export function renderText(doc: WorkloadDocument): string[] {
  const s = doc.settings;
  const head = [
    `# collbench workload ${doc.workload}: ${doc.model.source}; ${doc.model.dtype} gradients`,
    `# ${doc.nranks} ranks (${doc.workload === 'fsdp' ? `sharded over ${doc.model.world}` : 'replicated'}) on ${doc.backend.name} (${doc.backend.version})`,
    `# ${s.repeats} repeats x ${s.steps} steps (+${s.warmupSteps} untimed) per configuration, interleaved; ` +
      `stand-in compute ${s.computeMs} ms per step${s.firstBucketMb !== undefined ? `; first bucket ${s.firstBucketMb} MB` : ''}`,
    "# times: median over repeats of each repeat's median step (max over ranks), [min, max] over repeats",
  ];
  const cols = [s.varies, 'calls', 'MB/step', 'comm ms', '[min, max]', 'busbw GB/s', 'step ms', 'overlap %', '#wrong'];
  const rows = doc.configurations.map((c) => [
    c.label,
    String(c.calls),
    mb(c.bytesPerStep),
    ms(c.commUs.median),
    `[${ms(c.commUs.min)}, ${ms(c.commUs.max)}]`,
    c.busBwGBps.toFixed(2),
    ms(c.stepUs?.median),
    overlapCell(c),
    c.wrong === null ? 'N/A' : String(c.wrong),
  ]);
  const width = cols.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    '#  ' + cells.map((x, i) => (i === 0 ? x.padEnd(width[i]!) : x.padStart(width[i]!))).join('  ');
  // Configurations that issue exactly the same calls (every parameter above both caps; more blocks per unit than the
  // model has) measure the same thing twice: said, so that a difference between them reads as the noise it is.
  const key = (c: WorkloadConfiguration): string => JSON.stringify(c.ops.map((o) => [o.collective, o.bytes]));
  const same = doc.configurations.flatMap((c, i) => {
    const first = doc.configurations.findIndex((d) => key(d) === key(c));
    return first < i ? [`# ${s.varies} ${c.label} issues the same calls as ${doc.configurations[first]!.label}`] : [];
  });
  return [
    ...head,
    '#',
    line(cols),
    ...rows.map((r) => line(r).replace(/^# /, '  ')),
    '#',
    ...same,
    ...overlapNotes(doc),
    ...recommendationLines(doc),
  ];
}

export const WORKLOAD_CSV_COLUMNS = [
  'workload',
  'backend',
  'nranks',
  'dtype',
  'total_params',
  'varies',
  'value',
  'label',
  'calls',
  'bytes_per_step',
  'bus_bytes_per_step',
  'comm_us_median',
  'comm_us_min',
  'comm_us_max',
  'step_us_median',
  'compute_us',
  'busbw_gbps',
  'overlap_pct',
  'wrong',
  'recommended',
  'overlap_lo',
  'overlap_hi',
  'overlap_verdict',
] as const;

export function renderCsv(doc: WorkloadDocument): string {
  return stringify(
    doc.configurations.map((c) => [
      doc.workload,
      doc.backend.name,
      doc.nranks,
      doc.model.dtype,
      doc.model.totalParams,
      doc.settings.varies,
      c.value,
      c.label,
      c.calls,
      c.bytesPerStep,
      c.busBytesPerStep,
      c.commUs.median,
      c.commUs.min,
      c.commUs.max,
      c.stepUs?.median ?? null,
      c.computeUs,
      c.busBwGBps,
      c.overlapPct,
      c.wrong,
      c.value === doc.recommendation.value ? 1 : 0,
      c.overlap?.lo ?? null,
      c.overlap?.hi ?? null,
      c.overlap?.verdict ?? null,
    ]),
    { header: true, columns: [...WORKLOAD_CSV_COLUMNS], cast: { number: (n) => String(n) } },
  );
}

/** One page: the facts, the chart of time per step against the configuration, the recommendation. */
export async function renderHtml(doc: WorkloadDocument): Promise<string> {
  const values = doc.configurations.flatMap((c) => [
    ...c.commUs.perRepeat.map((us) => ({
      config: c.label,
      order: c.value,
      series: 'communication only',
      ms: us / 1e3,
    })),
    ...(c.stepUs?.perRepeat ?? []).map((us) => ({
      config: c.label,
      order: c.value,
      series: 'with stand-in compute',
      ms: us / 1e3,
    })),
  ]);
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `Time per ${doc.workload.toUpperCase()} step vs ${doc.settings.varies}`,
    width: 640,
    height: 320,
    background: 'white',
    data: { values },
    layer: [
      { mark: { type: 'point', opacity: 0.6 } },
      {
        mark: { type: 'line', strokeWidth: 1.5 },
        encoding: { y: { aggregate: 'median', field: 'ms', type: 'quantitative' } },
      },
    ],
    encoding: {
      x: { field: 'config', type: 'ordinal', title: doc.settings.varies, sort: { field: 'order' } },
      y: { field: 'ms', type: 'quantitative', title: 'time per step (ms)', scale: { zero: true } },
      color: { field: 'series', type: 'nominal', title: 'series', legend: { orient: 'bottom' } },
    },
  } as TopLevelSpec;
  const facts: [string, string][] = [
    ['model', doc.model.source],
    ['gradients', doc.model.dtype],
    ['ranks', `${doc.nranks} on ${doc.backend.name} (${doc.backend.version})`],
    ['repeats x steps', `${doc.settings.repeats} x ${doc.settings.steps}`],
    ['stand-in compute', `${doc.settings.computeMs} ms per step`],
    ['command', doc.argv.join(' ')],
  ];
  const table = (rows: string[][], head?: string[]): string =>
    `<table class="facts">${head ? `<tr>${head.map((h) => `<th>${htmlEscape(h)}</th>`).join('')}</tr>` : ''}` +
    rows
      .map(
        (r) =>
          `<tr>${r.map((x, i) => (head || i > 0 ? `<td>${htmlEscape(x)}</td>` : `<th>${htmlEscape(x)}</th>`)).join('')}</tr>`,
      )
      .join('') +
    '</table>';
  const title = `collbench workload ${doc.workload}`;
  const body = [
    `<h1>${htmlEscape(title)}</h1>`,
    table(facts.map(([k, v]) => [k, v])),
    `<figure data-chart="workload" data-series="${doc.configurations.length}">${await toSvg(spec)}` +
      "<figcaption>Each point is one repeat's median step (max over ranks); the line joins the medians over repeats.</figcaption></figure>",
    table(
      doc.configurations.map((c) => [
        c.label,
        String(c.calls),
        mb(c.bytesPerStep),
        ms(c.commUs.median),
        ms(c.stepUs?.median),
        c.busBwGBps.toFixed(2),
        c.wrong === null ? 'N/A' : String(c.wrong),
      ]),
      [doc.settings.varies, 'calls', 'MB/step', 'comm ms', 'step ms', 'busbw GB/s', '#wrong'],
    ),
    `<pre style="white-space: pre-wrap">${htmlEscape(recommendationLines(doc).join('\n'))}</pre>`,
  ];
  return (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<title>${htmlEscape(title)}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n${body.join('\n')}\n</body>\n</html>\n`
  );
}
