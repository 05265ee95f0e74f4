// `--csv FILE`: one CSV line per row-half (csv-stringify), with stable column names that carry their units.
// Every run has the same columns in the same order; values a run does not have (per-iteration statistics
// without -I, #wrong when not checked) are empty cells. Mirrors the nccl-tests table's columns.
import { stringify } from 'csv-stringify/sync';
import { PLACEMENTS, type ReportDocument } from '../schema.js';

export const CSV_COLUMNS = [
  'run_start',
  'program',
  'collective',
  'backend',
  'nranks',
  'row',
  'cycle',
  'size_bytes',
  'count',
  'type',
  'redop',
  'root',
  'placement',
  'time_us',
  'cpu_time_us',
  'algbw_gbps',
  'busbw_gbps',
  'wrong',
  'checked',
  'iter_n',
  'iter_min_us',
  'iter_max_us',
  'iter_mean_us',
  'iter_p50_us',
  'iter_p95_us',
  'iter_p99_us',
  'iter_stdev_us',
  'iter_cv_pct',
  'row_time',
] as const;

type Cell = string | number | null;

export function csvRecords(doc: ReportDocument): Cell[][] {
  const records: Cell[][] = [];
  for (const r of doc.rows) {
    for (const { key, label } of PLACEMENTS) {
      const h = r[key];
      const s = h.perIter?.stats;
      records.push([
        doc.startTime,
        doc.program,
        doc.collective,
        doc.provenance.backend.name,
        doc.world.nranks,
        r.index,
        r.cycle,
        r.sizeBytes,
        r.count,
        r.type,
        r.redop,
        r.root,
        label,
        h.timeUs,
        h.cpuTimeUs,
        h.algBwGBps,
        h.busBwGBps,
        h.wrong,
        h.wrong === null ? 0 : 1,
        s?.n ?? null,
        s?.min ?? null,
        s?.max ?? null,
        s?.mean ?? null,
        s?.p50 ?? null,
        s?.p95 ?? null,
        s?.p99 ?? null,
        s?.stdev ?? null,
        s?.cvPct ?? null,
        r.time,
      ]);
    }
  }
  return records;
}

export function renderCsv(doc: ReportDocument): string {
  return stringify(csvRecords(doc), { header: true, columns: [...CSV_COLUMNS], cast: { number: (n) => String(n) } });
}
