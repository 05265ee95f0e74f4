// The live nccl-tests table on stdout: preamble at begin, one line per row (plus `# first wrong`
// comment lines), footer at end. Formatting itself is in nccl-table.ts.
import { iterStats } from '../../numbers/stats.js';
import type { Precision, Reporter, RowRecord } from '../reporter.js';
import { PLACEMENTS } from '../schema.js';
import {
  cycleBelowLine,
  firstWrongLine,
  footerLines,
  precisionMissLine,
  precisionSummaryLine,
  lateLine,
  lateSummaryLine,
  preambleLines,
  rowLine,
  skipLine,
  type HalfCells,
  type LateCell,
} from './nccl-table.js';

export function ncclTableReporter(out: (line: string) => void): Reporter {
  let program = '';
  let perIterSkip = 0;
  let timestamps = false;
  // Late ranks are told after the table (which stays byte-compatible with nccl-tests' parsers), before the footer.
  const lateLines: string[] = [];
  const named: LateCell[] = [];
  let halves = 0;
  const precision: Precision[] = [];
  const precisionLines: string[] = [];
  return {
    begin(meta) {
      program = meta.program;
      perIterSkip = meta.options.perIterSkip;
      timestamps = meta.options.reportTimestamps;
      for (const line of preambleLines({
        leadingLines: meta.warnings,
        version: meta.version,
        backend: meta.backend,
        program: meta.program,
        options: meta.options,
        ranks: meta.ranks,
        perIterTimer: meta.perIterTimer,
        reducedMaxBytes: meta.reducedMaxBytes,
        watchdog: meta.watchdog,
      }))
        out(line);
    },
    row(row: RowRecord) {
      const cells = row.halves.map((h): HalfCells => ({
        timeUs: h.timeUs,
        algBw: h.algBw,
        busBw: h.busBw,
        wrong: h.wrong,
        iter: h.result.iterUs ? iterCells(h.result.iterUs, perIterSkip) : undefined,
      }));
      out(
        rowLine({
          sizeBytes: row.sizeBytes,
          count: row.count,
          type: row.type,
          redop: row.redop,
          root: row.root,
          halves: [cells[0], cells[1]],
          timestamp: timestamps ? row.time : undefined,
        }),
      );
      for (const h of row.halves)
        if (h.wrong !== null && h.wrong > 0 && h.result.firstWrong) out(firstWrongLine(h.result.firstWrong));
      row.halves.forEach((h, i) => {
        halves += 1;
        if (h.precision) {
          precision.push(h.precision);
          if (!h.precision.met)
            precisionLines.push(precisionMissLine(row.sizeBytes, PLACEMENTS[i]!.label, h.precision));
        }
        if (!h.late) return;
        named.push(h.late);
        lateLines.push(lateLine(row.sizeBytes, PLACEMENTS[i]!.label, h.late));
      });
    },
    cycleEnd(c) {
      if (c.below) out(cycleBelowLine(c));
    },
    end(summary) {
      if (summary.skipped) out(skipLine(summary.skipped));
      for (const line of precisionLines) out(line);
      const precisionSummary = precisionSummaryLine(precision);
      if (precisionSummary) out(precisionSummary);
      for (const line of lateLines) out(line);
      const lateSummary = lateSummaryLine(named, halves);
      if (lateSummary) out(lateSummary);
      for (const line of summary.links?.lines ?? []) out(line);
      for (const line of footerLines({
        outOfBounds: summary.outOfBounds,
        avgBusBw: summary.avgBusBw,
        minBwVerdict: summary.minBwVerdict,
        program,
        memory: summary.memory,
      }))
        out(line);
    },
  };
}

function iterCells(samples: number[], skip: number): HalfCells['iter'] {
  const s = iterStats(samples, skip);
  return { minUs: s.min, maxUs: s.max, p99Us: s.p99, cvPct: s.cvPct };
}
