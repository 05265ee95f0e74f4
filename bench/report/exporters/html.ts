// `--html FILE` and `collbench report … --html`: one self-contained HTML page (inline CSS and SVG, no script, no
// network) with busbw and time against size, and rank × size heatmaps of time and of lateness where the report has
// them. Charts are vega-lite specs rendered to SVG by vega in Node.
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { formatGbps, slowLinkLines } from '../../backends/nccl-links.js';
import { PLACEMENTS, type ReportDocument, type ReportLinks } from '../schema.js';
import { medianOf } from '../../numbers/stats.js';

/** One input run, reduced to what the charts and summaries need (from a collbench or nccl-tests JSON). */
export interface ChartRun {
  label: string;
  source: string; // file the run came from ('' for the live run)
  facts: [string, string][]; // name → value lines of the run summary table
  points: ChartPoint[];
  heat: HeatCell[]; // empty when the run has no per-rank samples
  heatCase: string | null; // which sweep and placement the heatmap shows
  lateHeat?: LateHeatCell[]; // v2 reports of several processes: who the others waited for
  links?: ReportLinks; // --links (nccl): the link verdict and the rank × peer matrix
  details?: [string, string][]; // extra provenance shown folded (env, versions)
}

export interface ChartPoint {
  series: string; // legend entry: "<label> out-of-place [float sum]"
  placement: string;
  sizeBytes: number;
  busBwGBps: number | null;
  timeUs: number | null;
}

export interface HeatCell {
  rank: number;
  sizeBytes: number;
  relative: number;
  meanUs: number;
}
/** Share of a row-half's iterations in which `rank` arrived last by more than the margin (numbers/lateness.ts). */
export interface LateHeatCell {
  rank: number;
  sizeBytes: number;
  share: number;
}

/** Mean over -N cycles of the same series and size, so a line never zigzags back. */
export function meanBySeriesAndSize(points: ChartPoint[]): ChartPoint[] {
  const groups = new Map<string, ChartPoint[]>();
  for (const p of points) {
    const k = `${p.series}\u0000${p.sizeBytes}`;
    (groups.get(k) ?? groups.set(k, []).get(k)!).push(p);
  }
  const avg = (xs: (number | null)[]): number | null => {
    const v = xs.filter((x): x is number => x !== null);
    return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
  };
  return [...groups.values()].map((g) => ({
    ...g[0]!,
    busBwGBps: avg(g.map((p) => p.busBwGBps)),
    timeUs: avg(g.map((p) => p.timeUs)),
  }));
}

/** A collbench report as a chart run. */
export function chartRunFromReport(doc: ReportDocument, label: string, source = ''): ChartRun {
  const caseOf = (r: ReportDocument['rows'][number]): string => `${r.type} ${r.redop || 'none'} root ${r.root}`;
  const cases = [...new Set(doc.rows.map(caseOf))];
  const points: ChartPoint[] = [];
  for (const r of doc.rows) {
    for (const { key, label: placement } of PLACEMENTS) {
      const h = r[key];
      points.push({
        series: `${label} ${placement}${cases.length > 1 ? ` [${caseOf(r)}]` : ''}`,
        placement,
        sizeBytes: r.sizeBytes,
        busBwGBps: h.busBwGBps,
        timeUs: doc.options.reportCpuTime === true ? h.cpuTimeUs : h.timeUs,
      });
    }
  }
  // Heatmap: out-of-place half of the first sweep, each rank's mean sample over the median rank's.
  const heat: HeatCell[] = [];
  const firstCase = cases[0] ?? null;
  for (const r of doc.rows) {
    if (caseOf(r) !== firstCase || r.cycle !== 0) continue;
    const perRank = r.outOfPlace.perIter?.perRank ?? [];
    if (perRank.length < 2) continue;
    const mid = medianOf(perRank.map((p) => p.stats.mean));
    for (const p of perRank) {
      heat.push({
        rank: p.rank,
        sizeBytes: r.sizeBytes,
        meanUs: p.stats.mean,
        relative: mid > 0 ? p.stats.mean / mid : 1,
      });
    }
  }
  // Lateness: the same sweep and placement, every rank's share of iterations it arrived last (v2 reports).
  const lateHeat: LateHeatCell[] = [];
  for (const r of doc.rows) {
    if (caseOf(r) !== firstCase || r.cycle !== 0) continue;
    (r.outOfPlace.lastShare ?? []).forEach((share, process) => {
      lateHeat.push({ rank: doc.ranks[process]?.rank ?? process, sizeBytes: r.sizeBytes, share });
    });
  }
  const p = doc.provenance;
  const hosts = [...new Set(doc.ranks.map((k) => k.host))];
  return {
    label,
    source,
    points,
    heat,
    lateHeat,
    ...(doc.links ? { links: doc.links } : {}),
    heatCase: heat.length ? `${firstCase}, out-of-place` : null,
    facts: [
      ['program', doc.program],
      ['backend', doc.world.backend],
      ['ranks', `${doc.world.nranks} on ${hosts.join(', ') || '?'}`],
      ['started', doc.startTime],
      ['status', doc.status + (doc.summary ? `, exit ${doc.summary.exitCode}` : '')],
      ['avg busbw', doc.summary?.avgBusBwGBps != null ? `${doc.summary.avgBusBwGBps.toPrecision(4)} GB/s` : 'n/a'],
      ['collbench', `${p.collbench.version} (Node ${p.node.version})`],
      ['rerun', doc.rerun],
    ],
    details: [
      ['library', p.backend.libraryVersion],
      ...Object.entries(p.versions).map(([k, v]): [string, string] => [k, String(v)]),
      [
        'host',
        `${p.host.hostname}: ${p.host.distro ?? p.host.platform} ${p.host.osRelease} ${p.host.arch}, ` +
          `${p.host.cpuCount} × ${p.host.cpuModel}, ${(p.host.memoryBytes / 2 ** 30).toFixed(1)} GiB`,
      ],
      ...Object.entries(p.env).map(([k, v]): [string, string] => [k, v]),
    ],
  };
}

interface NcclTestsHalf {
  time?: number | string;
  cpu_time?: number | string;
  bus_bw?: number | string;
}
interface NcclTestsPerIter {
  times_us?: number[];
  per_process_max_times_us?: number[][];
  skipped_iterations?: number;
}
interface NcclTestsResult {
  size: number;
  type?: string;
  redop?: string;
  root?: string | number;
  out_of_place?: NcclTestsHalf;
  in_place?: NcclTestsHalf;
  out_of_place_per_iter?: NcclTestsPerIter;
}

/** True for a document in nccl-tests' -J layout ("version": 3). */
export function isNcclTestsJson(
  x: unknown,
): x is { version: number; results: NcclTestsResult[] } & Record<string, unknown> {
  const o = x as { version?: unknown; results?: unknown };
  return (
    typeof o === 'object' &&
    o !== null &&
    o.version === 3 &&
    Array.isArray(o.results) &&
    o.results.every((r) => typeof r === 'object' && r !== null && Number.isInteger((r as { size?: unknown }).size))
  );
}

/** An nccl-tests (or collbench --json-format nccl-tests) file as a chart run, to overlay it on collbench runs. */
export function chartRunFromNcclTests(
  j: { results: NcclTestsResult[] } & Record<string, unknown>,
  label: string,
  source = '',
): ChartRun {
  const n = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const caseOf = (r: NcclTestsResult): string =>
    `${r.type ?? '?'} ${r.redop ?? '?'} root ${String(r.root ?? '').trim()}`;
  const cases = [...new Set(j.results.map(caseOf))];
  const points: ChartPoint[] = [];
  const heat: HeatCell[] = [];
  for (const r of j.results) {
    for (const [key, placement] of [
      ['out_of_place', 'out-of-place'],
      ['in_place', 'in-place'],
    ] as const) {
      const h = r[key];
      if (!h) continue;
      points.push({
        series: `${label} ${placement}${cases.length > 1 ? ` [${caseOf(r)}]` : ''}`,
        placement,
        sizeBytes: r.size,
        busBwGBps: n(h.bus_bw),
        timeUs: n(h.time ?? h.cpu_time),
      });
    }
    const procs = r.out_of_place_per_iter?.per_process_max_times_us;
    if (caseOf(r) === cases[0] && Array.isArray(procs) && procs.length > 1) {
      const skip = r.out_of_place_per_iter?.skipped_iterations ?? 0;
      const means = procs.map((t) => {
        const s = t.slice(skip);
        return s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
      });
      const mid = medianOf(means);
      means.forEach((m, rank) => heat.push({ rank, sizeBytes: r.size, meanUs: m, relative: mid > 0 ? m / mid : 1 }));
    }
  }
  const cfg = (j.config ?? {}) as Record<string, unknown>;
  const devices = Array.isArray(cfg.devices) ? (cfg.devices as { hostname?: string }[]) : [];
  return {
    label,
    source,
    points,
    heat,
    heatCase: heat.length ? `${cases[0]}, out-of-place, per process` : null,
    facts: [
      ['format', 'nccl-tests JSON (version 3)'],
      ['started', typeof j.start_time === 'string' ? j.start_time : '?'],
      ['processes', `${devices.length} on ${[...new Set(devices.map((d) => d.hostname))].join(', ') || '?'}`],
      ['command', Array.isArray(j.args) ? (j.args as string[]).join(' ') : '?'],
    ],
  };
}

// ---------------------------------------------------------------------------------------------------
// Charts

/** vega expression labelling a byte count with binary units (8, 1K, 32M, 2G). */
const SIZE_LABEL =
  "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + 'G' : " +
  "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + 'M' : " +
  "datum.value >= 1024 ? format(datum.value / 1024, '~g') + 'K' : format(datum.value, '~g')";

const silentLogger = {
  level(): number {
    return 0;
  },
  error() {
    return this;
  },
  warn() {
    return this;
  },
  info() {
    return this;
  },
  debug() {
    return this;
  },
};

export async function toSvg(spec: TopLevelSpec): Promise<string> {
  const vg = compile(spec, { logger: silentLogger as never }).spec;
  const view = new vega.View(vega.parse(vg), { renderer: 'none', logLevel: vega.None });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function lineSpec(
  points: ChartPoint[],
  field: 'busBwGBps' | 'timeUs',
  title: string,
  yTitle: string,
  yLog: boolean,
): TopLevelSpec {
  const values = points
    .filter((p) => p.sizeBytes > 0 && p[field] !== null && (!yLog || p[field]! > 0))
    .map((p) => ({ series: p.series, placement: p.placement, size: p.sizeBytes, y: p[field] }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width: 640,
    height: 320,
    background: 'white',
    data: { values },
    mark: { type: 'line', point: true, strokeWidth: 1.5 },
    encoding: {
      x: {
        field: 'size',
        type: 'quantitative',
        title: 'size (bytes, log2)',
        scale: { type: 'log', base: 2, nice: false },
        axis: { labelExpr: SIZE_LABEL, tickCount: 12 },
      },
      y: { field: 'y', type: 'quantitative', title: yTitle, scale: yLog ? { type: 'log' } : { zero: true } },
      color: {
        field: 'series',
        type: 'nominal',
        title: 'series',
        legend: { labelLimit: 400, orient: 'bottom', columns: 2 },
      },
      strokeDash: {
        field: 'placement',
        type: 'nominal',
        title: 'placement',
        legend: null,
        scale: {
          domain: ['out-of-place', 'in-place'],
          range: [
            [1, 0],
            [6, 3],
          ],
        },
      },
    },
  } as TopLevelSpec;
}

function lateHeatSpec(run: ChartRun): TopLevelSpec {
  const cells = run.lateHeat ?? [];
  const sizes = [...new Set(cells.map((c) => c.sizeBytes))].sort((a, b) => a - b);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `${run.label}: who the others waited for`,
      subtitle: 'share of iterations each rank arrived last, out-of-place',
    },
    background: 'white',
    data: { values: cells.map((c) => ({ rank: c.rank, size: c.sizeBytes, share: c.share })) },
    mark: { type: 'rect' },
    width: { step: 28 },
    height: { step: 18 },
    encoding: {
      x: {
        field: 'size',
        type: 'ordinal',
        sort: sizes,
        title: 'size (bytes)',
        axis: { labelExpr: SIZE_LABEL, labelAngle: -45 },
      },
      y: { field: 'rank', type: 'ordinal', title: 'rank' },
      color: {
        field: 'share',
        type: 'quantitative',
        title: 'last share',
        scale: { scheme: 'oranges', domain: [0, 1] },
      },
    },
  } as TopLevelSpec;
}

/** The cells of a run's link matrix (sender × receiver, GB/s in SendWait), named links marked. */
export function linkCells(links: ReportLinks): { sender: number; receiver: number; gbps: number; named: boolean }[] {
  const m = links.matrix;
  if (!m) return [];
  const named = new Set(m.named.map(([s, r]) => `${s}>${r}`));
  return m.gbps.flatMap((row, sender) =>
    row.flatMap((v, receiver) =>
      v === null ? [] : [{ sender, receiver, gbps: v, named: named.has(`${sender}>${receiver}`) }],
    ),
  );
}

function linkHeatSpec(run: ChartRun): TopLevelSpec {
  const cells = linkCells(run.links!);
  const ranks = run.links!.matrix!.ranks;
  // Text readable on its cell: white on the dark (slow) half of the scale, black on the bright half.
  const rates = cells.map((c) => c.gbps);
  const mid = (Math.min(...rates) + Math.max(...rates)) / 2;
  const values = cells.map((c) => ({
    ...c,
    label: `${formatGbps(c.gbps)}${c.named ? '*' : ''}`,
    ink: c.gbps < mid ? 'white' : 'black',
  }));
  const axis = (field: 'sender' | 'receiver', title: string) => ({
    field,
    type: 'ordinal',
    title,
    scale: { domain: Array.from({ length: ranks }, (_, i) => i) },
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `${run.label}: send links, GB/s in SendWait`,
      subtitle: 'sender rank × receiver rank; * named slow',
    },
    background: 'white',
    data: { values },
    width: { step: ranks > 32 ? 12 : 28 },
    height: { step: ranks > 32 ? 12 : 22 },
    encoding: { x: axis('receiver', 'receiver rank'), y: axis('sender', 'sender rank') },
    layer: [
      {
        mark: { type: 'rect' },
        encoding: { color: { field: 'gbps', type: 'quantitative', title: 'GB/s', scale: { scheme: 'viridis' } } },
      },
      ...(ranks <= 32
        ? [
            {
              mark: { type: 'text', fontSize: 8 },
              encoding: {
                text: { field: 'label', type: 'nominal' },
                color: { condition: { test: "datum.ink === 'white'", value: 'white' }, value: 'black' },
              },
            },
          ]
        : []),
    ],
  } as TopLevelSpec;
}

function heatSpec(run: ChartRun): TopLevelSpec {
  const sizes = [...new Set(run.heat.map((c) => c.sizeBytes))].sort((a, b) => a - b);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `${run.label}: time per rank relative to the median rank`, subtitle: run.heatCase ?? '' },
    background: 'white',
    data: { values: run.heat.map((c) => ({ rank: c.rank, size: c.sizeBytes, relative: c.relative })) },
    mark: { type: 'rect' },
    width: { step: 28 },
    height: { step: 18 },
    encoding: {
      x: {
        field: 'size',
        type: 'ordinal',
        sort: sizes,
        title: 'size (bytes)',
        axis: { labelExpr: SIZE_LABEL, labelAngle: -45 },
      },
      y: { field: 'rank', type: 'ordinal', title: 'rank' },
      color: {
        field: 'relative',
        type: 'quantitative',
        title: 'time / median',
        scale: { scheme: 'blueorange', domainMid: 1 },
      },
    },
  } as TopLevelSpec;
}

export function htmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export const STYLE = `
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table.facts { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.9em; }
table.facts th, table.facts td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.facts td code { white-space: pre-wrap; word-break: break-all; }
figure { margin: 16px 0; } figcaption { font-size: 0.85em; color: #555; }
details { font-size: 0.85em; margin-bottom: 12px; }
`;

/** The page: run summaries, busbw and time charts overlaying every run, a heatmap per run with per-rank data. */
export async function renderHtml(runs: ChartRun[], title: string): Promise<string> {
  const points = runs.flatMap((r) => meanBySeriesAndSize(r.points));
  const seriesCount = (field: 'busBwGBps' | 'timeUs'): number =>
    new Set(
      points
        .filter((p) => p.sizeBytes > 0 && p[field] !== null && (field === 'busBwGBps' || p[field]! > 0))
        .map((p) => p.series),
    ).size;
  const body: string[] = [`<h1>${htmlEscape(title)}</h1>`];
  for (const run of runs) {
    body.push(`<h2>${htmlEscape(run.label)}${run.source ? ` <small>(${htmlEscape(run.source)})</small>` : ''}</h2>`);
    body.push('<table class="facts">');
    for (const [k, v] of run.facts)
      body.push(`<tr><th>${htmlEscape(k)}</th><td><code>${htmlEscape(v)}</code></td></tr>`);
    body.push('</table>');
    if (run.details?.length) {
      body.push('<details><summary>versions, host and environment</summary><table class="facts">');
      for (const [k, v] of run.details)
        body.push(`<tr><th>${htmlEscape(k)}</th><td><code>${htmlEscape(v)}</code></td></tr>`);
      body.push('</table></details>');
    }
  }
  const figure = async (chart: string, series: number, spec: TopLevelSpec, caption: string): Promise<string> =>
    `<figure data-chart="${chart}" data-series="${series}">${await toSvg(spec)}<figcaption>${htmlEscape(caption)}</figcaption></figure>`;
  if (seriesCount('busBwGBps') === 0) {
    body.push('<p>No rows yet.</p>');
  } else {
    body.push('<h2>Bus bandwidth</h2>');
    body.push(
      await figure(
        'busbw',
        seriesCount('busBwGBps'),
        lineSpec(points, 'busBwGBps', 'Bus bandwidth vs size', 'busbw (GB/s)', false),
        "busbw = algbw × the collective's bus factor (nccl-tests PERFORMANCE.md); solid = out-of-place, dashed = in-place.",
      ),
    );
    body.push('<h2>Time</h2>');
    body.push(
      await figure(
        'time',
        seriesCount('timeUs'),
        lineSpec(points, 'timeUs', 'Time per operation vs size', 'time (us, log)', true),
        'Mean time per operation, combined over ranks as -a says.',
      ),
    );
  }
  const heatRuns = runs.filter((r) => r.heat.length > 0);
  if (heatRuns.length) body.push('<h2>Per-rank time</h2>');
  for (const run of heatRuns) {
    body.push(
      await figure(
        'heatmap',
        new Set(run.heat.map((c) => c.rank)).size,
        heatSpec(run),
        "Each rank's mean per-iteration time (-I 1 samples after -K) divided by the median rank's: above 1 (orange) is slower.",
      ),
    );
  }
  const lateRuns = runs.filter((r) => (r.lateHeat ?? []).length > 0);
  if (lateRuns.length) body.push('<h2>Late ranks</h2>');
  for (const run of lateRuns) {
    body.push(
      await figure(
        'lateness',
        new Set(run.lateHeat!.map((c) => c.rank)).size,
        lateHeatSpec(run),
        'Share of iterations in which each rank arrived last at the collective by more than the margin (the others waited ' +
          'for it): a rank that stays dark across sizes is the one the job waits for. Per-rank time cannot show this: a late ' +
          'rank spends the least time inside the collective.',
      ),
    );
  }
  const linkRuns = runs.filter((r) => r.links && linkCells(r.links).length > 0);
  if (linkRuns.length) body.push('<h2>Links</h2>');
  for (const run of linkRuns) {
    for (const line of slowLinkLines(run.links!)) body.push(`<p><code>${htmlEscape(line)}</code></p>`);
    body.push(
      await figure(
        'links',
        run.links!.matrix!.ranks,
        linkHeatSpec(run),
        "Each send link's rate while the network held its data (--links: bytes over the wall time in NCCL's SendWait " +
          'state, all channels of the pair): a dark cell among bright ones is the link that holds the ring back.',
      ),
    );
  }
  return (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>${htmlEscape(title)}</title>\n` +
    `<style>${STYLE}</style>\n</head>\n<body>\n${body.join('\n')}\n</body>\n</html>\n`
  );
}

/** `--html FILE` of a run: the same page for that one run. */
export function renderRunHtml(doc: ReportDocument): Promise<string> {
  return renderHtml(
    [chartRunFromReport(doc, doc.program)],
    `${doc.program}: ${doc.world.nranks} rank${doc.world.nranks === 1 ? '' : 's'}, ${doc.world.backend}`,
  );
}
