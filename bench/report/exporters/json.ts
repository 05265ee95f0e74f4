// The collbench report document (schema.ts), built from what runSuite tells its reporters: metadata at
// begin, one record per row, the summary at end. The builder's document is valid at every step, so the
// exporters can rewrite their files after every row. `-J FILE` writes it as JSON.
import { iterStats } from '../../numbers/stats.js';
import { collectProvenance, rerunCommand, reportRank } from '../provenance.js';
import type { RowHalfRecord, RowRecord, RunMeta, RunSummary } from '../reporter.js';
import { cAtof } from '../../numbers/c-numbers.js';
import { LATE_RULE } from '../../numbers/lateness.js';
import {
  REPORT_KIND,
  SCHEMA_VERSION,
  type ReportDocument,
  type ReportHalf,
  type ReportPerIter,
  type ReportRow,
  type ReportTimeout,
} from '../schema.js';

/** Local time as ISO 8601 with its UTC offset (2026-11-21T14:03:07.123+01:00): readable and exact. */
export function isoLocal(d: Date): string {
  const p = (n: number, w = 2): string => String(Math.trunc(Math.abs(n))).padStart(w, '0');
  const off = -d.getTimezoneOffset();
  return (
    `${p(d.getFullYear(), 4)}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:` +
    `${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}${off >= 0 ? '+' : '-'}${p(off / 60)}:${p(off % 60)}`
  );
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

function perIter(h: RowHalfRecord, skip: number): ReportPerIter | undefined {
  const samples = h.result.iterUs;
  if (!samples || samples.length <= skip) return undefined;
  return {
    skip,
    stats: iterStats(samples, skip),
    samplesUs: [...samples],
    perRank: (h.result.perRankIterUs ?? [])
      .map((s, rank) => ({ rank, samplesUs: [...s], stats: s.length > skip ? iterStats(s, skip) : null }))
      .filter((r): r is ReportPerIter['perRank'][number] => r.stats !== null),
  };
}

export function reportHalf(h: RowHalfRecord, skip: number): ReportHalf {
  const out: ReportHalf = {
    timeUs: finite(h.result.timeUs),
    cpuTimeUs: finite(h.result.cpuTimeUs),
    algBwGBps: finite(h.algBw),
    busBwGBps: finite(h.busBw),
    wrong: h.wrong,
    ranksWithWrong: h.wrong === null ? 0 : h.result.ranksWithWrong,
  };
  if (h.wrong !== null && h.wrong > 0 && h.result.firstWrong) out.firstWrong = { ...h.result.firstWrong };
  const p = perIter(h, skip);
  if (p) out.perIter = p;
  out.late = h.late ? { ...h.late } : null;
  if (h.lastShare) out.lastShare = [...h.lastShare];
  if (h.precision) {
    out.precision = {
      ...h.precision,
      rsdPct: finite(h.precision.rsdPct) ?? 0,
      sampleCvPct: finite(h.precision.sampleCvPct) ?? 0,
    };
  }
  return out;
}

export interface ReportBuilder {
  begin(meta: RunMeta): void;
  row(row: RowRecord): void;
  end(summary: RunSummary): void;
  /** A wait expired: recorded as the document's `timeout`. */
  timedOut(t: ReportTimeout): void;
  /** The document so far (null before begin). */
  readonly doc: ReportDocument | null;
}

export function reportBuilder(env: NodeJS.ProcessEnv = process.env): ReportBuilder {
  let doc: ReportDocument | null = null;
  let skip = 0;
  return {
    get doc() {
      return doc;
    },
    begin(meta) {
      skip = meta.options.perIterSkip;
      const argv = meta.argv && meta.argv.length > 0 ? [...meta.argv] : [meta.program];
      doc = {
        kind: REPORT_KIND,
        schemaVersion: SCHEMA_VERSION,
        status: 'incomplete',
        startTime: isoLocal(meta.startTime),
        endTime: null,
        argv,
        rerun: rerunCommand(argv, meta.info.nranks, env),
        program: meta.program,
        collective: meta.options.collective,
        options: JSON.parse(JSON.stringify(meta.options)) as Record<string, unknown>,
        provenance: collectProvenance(meta.info, meta.version, env),
        world: { nranks: meta.info.nranks, backend: meta.backend },
        ranks: meta.ranks.map(reportRank),
        warnings: [...meta.warnings],
        perIterTimer: meta.options.perIterTiming ? meta.perIterTimer : null,
        lateness: {
          clock: meta.clock
            ? {
                method: meta.clock.method,
                uncertaintyUs: meta.clock.uncertaintyUs,
                offsetsUs: [...meta.clock.offsetsUs],
              }
            : null,
          rule: { ...LATE_RULE },
        },
        rows: [],
        summary: null,
      };
    },
    row(r) {
      if (!doc) throw new Error('report row before begin');
      const row: ReportRow = {
        index: doc.rows.length,
        cycle: r.cycle,
        sizeBytes: r.sizeBytes,
        count: r.count,
        type: r.type,
        redop: r.redop,
        root: r.root,
        time: isoLocal(r.time),
        outOfPlace: reportHalf(r.halves[0], skip),
        inPlace: reportHalf(r.halves[1], skip),
      };
      doc.rows.push(row);
    },
    timedOut(t) {
      if (doc) doc.timeout = JSON.parse(JSON.stringify(t)) as ReportTimeout;
    },
    end(s) {
      if (!doc) throw new Error('report end before begin');
      const minBw = env.NCCL_TESTS_MIN_BW;
      const min = minBw === undefined ? null : cAtof(minBw);
      doc.summary = {
        outOfBounds: s.outOfBounds,
        avgBusBwGBps: finite(s.avgBusBw),
        minBwGBps: min === null || min === -1 || !Number.isFinite(min) ? null : min,
        minBwVerdict: s.minBwVerdict,
        exitCode: s.exitCode,
        skipped: s.skipped,
        ...(s.cycles !== undefined ? { cycles: s.cycles, cyclesBelowWarnBusBw: s.cyclesBelowWarnBusBw ?? 0 } : {}),
      };
      if (s.links) {
        const v = s.links.verdict;
        doc.links = {
          loaded: v !== null,
          rule: v ? { ...v.rule } : null,
          halves: v?.halves ?? 0,
          named: v?.named ?? [],
          doubt: v?.doubt ?? null,
          links: v?.links ?? [],
          algo: s.links.algo,
        };
      }
      doc.status = 'complete';
      doc.endTime = isoLocal(new Date());
    },
  };
}

export function renderJson(doc: ReportDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
