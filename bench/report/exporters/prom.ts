// `--prom FILE`: the run as Prometheus text-format metrics, for node_exporter's textfile collector (which reads
// *.prom files from a directory on every scrape): the health monitor training teams write by hand. Built from the
// report document like every exporter (and so rewritten atomically after every row): the latest cycle's busbw, time
// and #wrong per collective, type, op, root, size and placement; per sweep the cycles completed, those below
// --warn-busbw, the last complete cycle's average busbw and when it ended. Rendered by prom-client (the Node
// ecosystem's Prometheus library) so names, label escaping and the exposition format are Prometheus' own.
import { Gauge, Registry } from 'prom-client';
import { averageBusBw } from '../../numbers/bandwidth.js';
import { cycleBelowWarnBusBw } from '../../numbers/run-verdict.js';
import { PLACEMENTS, type ReportDocument, type ReportRow } from '../schema.js';

const ROW_LABELS = ['collective', 'type', 'redop', 'root', 'size_bytes', 'placement'] as const;
const SWEEP_LABELS = ['collective', 'type', 'redop', 'root'] as const;

const sweepKey = (r: ReportRow): string => `${r.type}\u0000${r.redop}\u0000${r.root}`;

export async function renderProm(doc: ReportDocument): Promise<string> {
  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: readonly string[]) =>
    new Gauge({ name, help, labelNames: [...labelNames], registers: [registry] });
  const busbw = gauge(
    'collbench_busbw_gbps',
    'Bus bandwidth of the latest measurement of this size (GB/s, nccl-tests busbw)',
    ROW_LABELS,
  );
  const time = gauge(
    'collbench_time_us',
    'Time per operation of the latest measurement of this size (microseconds)',
    ROW_LABELS,
  );
  const wrong = gauge(
    'collbench_wrong_elements',
    'Wrong elements found by the check in the latest measurement (absent when not checked)',
    ROW_LABELS,
  );
  const cycles = gauge('collbench_cycles_completed', 'Cycles (passes over every size) completed', SWEEP_LABELS);
  const below = gauge(
    'collbench_cycles_below_warn_busbw',
    'Completed cycles whose average busbw was below --warn-busbw',
    SWEEP_LABELS,
  );
  const cycleAvg = gauge(
    'collbench_cycle_avg_busbw_gbps',
    'Average busbw of the last completed cycle (GB/s)',
    SWEEP_LABELS,
  );
  const cycleEnd = gauge(
    'collbench_last_cycle_timestamp_seconds',
    'When the last completed cycle ended (Unix time)',
    SWEEP_LABELS,
  );
  const info = gauge('collbench_run_info', 'The run: program, backend, ranks (value 1)', [
    'program',
    'backend',
    'nranks',
    'host',
  ]);
  const complete = gauge(
    'collbench_run_complete',
    '1 once the run has ended, 0 while it runs (or if it stopped early)',
    [],
  );
  const threshold = gauge('collbench_warn_busbw_gbps', 'The --warn-busbw threshold (GB/s), when set', []);

  info.set(
    {
      program: doc.program,
      backend: doc.world.backend,
      nranks: String(doc.world.nranks),
      host: doc.provenance.host.hostname,
    },
    1,
  );
  complete.set(doc.status === 'complete' ? 1 : 0);
  const warnBusBw = typeof doc.options.warnBusBw === 'number' ? doc.options.warnBusBw : null;
  if (warnBusBw !== null) threshold.set(warnBusBw);

  // Latest value per size: later rows overwrite earlier cycles' values.
  for (const r of doc.rows) {
    for (const { key, label } of PLACEMENTS) {
      const labels = {
        collective: doc.collective,
        type: r.type,
        redop: r.redop,
        root: String(r.root),
        size_bytes: String(r.sizeBytes),
        placement: label,
      };
      const h = r[key];
      if (h.busBwGBps !== null) busbw.set(labels, h.busBwGBps);
      if (h.timeUs !== null) time.set(labels, h.timeUs);
      if (h.wrong !== null) wrong.set(labels, h.wrong);
    }
  }

  // Cycles per sweep: one is complete once the next one (or the next sweep) has started, or the run has ended, and
  // it has as many rows as the sweep's first (--duration may end the last part-way: not a cycle to judge).
  const order = [...new Set(doc.rows.map((r) => `${sweepKey(r)}\u0000${r.cycle}`))];
  const byCycle = new Map<string, ReportRow[]>();
  for (const r of doc.rows) {
    const k = `${sweepKey(r)}\u0000${r.cycle}`;
    (byCycle.get(k) ?? byCycle.set(k, []).get(k)!).push(r);
  }
  const perSweep = new Map<
    string,
    { first: ReportRow; rows: number; completed: number; below: number; lastAvg: number | null; lastEnd: string | null }
  >();
  order.forEach((k, i) => {
    const rows = byCycle.get(k)!;
    const first = rows[0]!;
    const s = perSweep.get(sweepKey(first)) ?? {
      first,
      rows: rows.length,
      completed: 0,
      below: 0,
      lastAvg: null,
      lastEnd: null,
    };
    perSweep.set(sweepKey(first), s);
    if (i === order.length - 1 && doc.status !== 'complete') return; // still running
    if (rows.length < s.rows) return;
    const avg = averageBusBw(
      rows.flatMap((r) => [r.outOfPlace.busBwGBps, r.inPlace.busBwGBps]).filter((b): b is number => b !== null),
    );
    s.completed += 1;
    if (cycleBelowWarnBusBw(avg, warnBusBw)) s.below += 1;
    s.lastAvg = Number.isFinite(avg) ? avg : null;
    s.lastEnd = rows[rows.length - 1]!.time;
  });
  for (const s of perSweep.values()) {
    const labels = { collective: doc.collective, type: s.first.type, redop: s.first.redop, root: String(s.first.root) };
    cycles.set(labels, s.completed);
    below.set(labels, s.below);
    if (s.lastAvg !== null) cycleAvg.set(labels, s.lastAvg);
    if (s.lastEnd !== null) cycleEnd.set(labels, Date.parse(s.lastEnd) / 1000);
  }
  return registry.metrics();
}
