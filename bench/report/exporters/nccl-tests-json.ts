// `-J FILE --json-format nccl-tests`: the report in nccl-tests' own JSON layout ("version": 3), so that tools
// written for it keep working; its key order, bool-strings and padding, except that `env` holds only the filtered
// variables and numbers are plain JSON numbers (docs/nccl-tests-contract.md, "JSON (-J)").
import { formatTimestamp } from '../reporters/nccl-table.js';
import type { ReportDocument, ReportHalf, ReportRank } from '../schema.js';
import { cSprintf } from '../format.js';

const boolStr = (b: boolean): string => (b ? 'true' : 'false');
/** nccl-tests writes NaN as the string "nan"; null (a non-finite value in our document) likewise. */
const num = (x: number | null | undefined): number | string =>
  x === null || x === undefined || Number.isNaN(x) ? 'nan' : x;
const localTime = (iso: string | null): string => (iso === null ? '' : formatTimestamp(new Date(iso)));

/** One `config.devices` entry per process (nccl-tests parses only each process's first rank line). */
function devices(ranks: ReportRank[]): Record<string, unknown>[] {
  const seen = new Set<string>();
  const out: Record<string, unknown>[] = [];
  for (const r of ranks) {
    const key = `${r.host}\u0000${r.pid}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({
      rank: r.rank,
      group: r.group,
      pid: r.pid,
      hostname: r.host.split('.')[0],
      device: typeof r.device === 'number' ? r.device : -1,
      device_hex: r.pciBusId ?? (r.numaNode !== null ? `numa${r.numaNode}` : '-'),
      device_info: r.deviceName,
    });
  }
  return out;
}

/** Per-process rows of per-iteration times: the max over each process's ranks (nccl-tests' process rows). */
function perProcess(doc: ReportDocument, half: ReportHalf): number[][] {
  const rows = half.perIter?.perRank ?? [];
  const byProcess = new Map<string, number[]>();
  for (const r of rows) {
    const info = doc.ranks.find((k) => k.rank === r.rank);
    const key = info ? `${info.host}\u0000${info.pid}` : `rank${r.rank}`;
    const cur = byProcess.get(key);
    if (!cur) byProcess.set(key, [...r.samplesUs]);
    else for (let i = 0; i < cur.length; i++) cur[i] = Math.max(cur[i]!, r.samplesUs[i] ?? -Infinity);
  }
  return [...byProcess.values()];
}

function halfObject(half: ReportHalf, cpuTime: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (cpuTime) o.cpu_time = num(half.cpuTimeUs);
  else o.time = num(half.timeUs);
  o.alg_bw = num(half.algBwGBps);
  o.bus_bw = num(half.busBwGBps);
  o.nwrong = half.wrong;
  return o;
}

function perIterObject(doc: ReportDocument, half: ReportHalf): Record<string, unknown> | undefined {
  const p = half.perIter;
  if (!p) return undefined;
  const o: Record<string, unknown> = {
    skipped_iterations: p.skip,
    min_us: p.stats.min,
    max_us: p.stats.max,
    avg_us: p.stats.mean,
    p50_us: p.stats.p50,
    p95_us: p.stats.p95,
    p99_us: p.stats.p99,
    stdev_us: p.stats.stdev,
    cv_pct: p.stats.cvPct,
    times_us: p.samplesUs,
  };
  const procs = perProcess(doc, half);
  if (procs.length > 1) o.per_process_max_times_us = procs;
  return o;
}

export function ncclTestsJson(doc: ReportDocument): Record<string, unknown> {
  const o = doc.options as Record<string, number & boolean>;
  const cpuTime = Boolean(o.reportCpuTime);
  const config: Record<string, unknown> = {
    nthreads: o.nThreads ?? 1,
    ngpus: o.nGpus ?? 1,
    minimum_bytes: o.minBytes,
    maximum_bytes: o.maxBytes,
  };
  if (o.stepFactor > 1) config.step_factor = o.stepFactor;
  else config.step_bytes = o.stepBytes;
  Object.assign(config, {
    warmup_iters: o.warmupIters,
    iterations: o.iters,
    aggregated_iterations: o.aggIters,
    validation: o.check,
    graph: o.cudaGraph ?? 0,
    blocking_collectives: boolStr(o.blocking !== 0),
    per_iter_timing: boolStr(Boolean(o.perIterTiming)),
    per_iter_skip: o.perIterSkip,
    parallel_init: boolStr(Boolean(o.parallelInit)),
    devices: devices(doc.ranks),
  });
  const results = doc.rows.map((r) => {
    const res: Record<string, unknown> = {
      size: r.sizeBytes,
      count: r.count,
      type: r.type,
      redop: r.redop,
      root: cSprintf('%6i', r.root),
      out_of_place: halfObject(r.outOfPlace, cpuTime),
    };
    const oopIter = perIterObject(doc, r.outOfPlace);
    if (oopIter) res.out_of_place_per_iter = oopIter;
    res.in_place = halfObject(r.inPlace, cpuTime);
    const ipIter = perIterObject(doc, r.inPlace);
    if (ipIter) res.in_place_per_iter = ipIter;
    res.actual_iterations = o.iters;
    res.experiment_name = '';
    return res;
  });
  // While the run goes on, the footer objects describe the rows so far (nccl-tests closes its stream early too).
  const s = doc.summary;
  const outOfBounds = s
    ? s.outOfBounds
    : doc.rows.reduce(
        (n, r) => n + (r.outOfPlace.ranksWithWrong > 0 ? 1 : 0) + (r.inPlace.ranksWithWrong > 0 ? 1 : 0),
        0,
      );
  const bws = doc.rows
    .flatMap((r) => [r.outOfPlace.busBwGBps, r.inPlace.busBwGBps])
    .filter((x): x is number => x !== null);
  const avg = s ? s.avgBusBwGBps : bws.length ? bws.reduce((a, b) => a + b, 0) / bws.length : null;
  const out: Record<string, unknown> = {
    version: 3,
    start_time: localTime(doc.startTime),
    args: doc.argv,
    env: Object.entries(doc.provenance.env).map(([k, v]) => `${k}=${v}`),
    nccl_version: doc.provenance.versions.ncclRuntime ?? 0,
    config,
    results,
    out_of_bounds: { count: outOfBounds, okay: boolStr(outOfBounds === 0) },
    average_bus_bandwidth: {
      bandwidth: num(avg),
      okay: s?.minBwVerdict ? boolStr(s.minBwVerdict === 'OK') : 'unchecked',
    },
    errors: [''],
  };
  if (doc.endTime !== null) out.end_time = localTime(doc.endTime);
  return out;
}

export function renderNcclTestsJson(doc: ReportDocument): string {
  return `${JSON.stringify(ncclTestsJson(doc), null, 2)}\n`;
}
