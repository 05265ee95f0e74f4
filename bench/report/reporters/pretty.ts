// `--format pretty`: the results as boxed tables (cli-table3) instead of the nccl-tests text table: a few
// lines about the run, one table per (type, redop, root) sweep printed when the sweep completes, then the
// footer. Same numbers as the nccl-tests table (adaptive formatter), sizes also in K/M/G.
import Table from 'cli-table3';
import { formatSize } from '../../config/sizes.js';
import { iterStats } from '../../numbers/stats.js';
import { adaptiveFloat } from '../format.js';
import type { Reporter, RowHalfRecord, RowRecord } from '../reporter.js';
import { footerLines, skipLine } from './nccl-table.js';

const num = (x: number, w: number): string => adaptiveFloat(x, w).trim();

export function prettyReporter(out: (line: string) => void): Reporter {
  let rows: RowRecord[] = [];
  let program = '';
  let perIter = false;
  let skip = 0;
  let timeLabel = 'time';

  const halfCells = (h: RowHalfRecord): string[] => {
    const cells = [num(h.timeUs, 7), num(h.algBw, 6), num(h.busBw, 6), h.wrong === null ? 'N/A' : String(h.wrong)];
    if (perIter) {
      const s = h.result.iterUs && h.result.iterUs.length > skip ? iterStats(h.result.iterUs, skip) : null;
      cells.push(s ? num(s.p50, 7) : '', s ? num(s.p99, 7) : '', s ? num(s.cvPct, 7) : '');
    }
    return cells;
  };

  const flush = (): void => {
    if (rows.length === 0) return;
    const first = rows[0]!;
    const iterHead = perIter ? ['i_p50\n(us)', 'i_p99\n(us)', 'i_cv\n(%)'] : [];
    const half = [`${timeLabel}\n(us)`, 'algbw\n(GB/s)', 'busbw\n(GB/s)', '#wrong', ...iterHead];
    const table = new Table({
      head: ['size', 'count', ...half, ...half],
      style: { head: [], border: [], compact: false },
      colAligns: ['right', 'right', ...half.map(() => 'right' as const), ...half.map(() => 'right' as const)],
    });
    table.push([
      { content: '', colSpan: 2 },
      { content: 'out-of-place', colSpan: half.length, hAlign: 'center' },
      { content: 'in-place', colSpan: half.length, hAlign: 'center' },
    ]);
    for (const r of rows) {
      table.push([`${formatSize(r.sizeBytes)}`, String(r.count), ...halfCells(r.halves[0]), ...halfCells(r.halves[1])]);
    }
    out(`${program}: type ${first.type}, redop ${first.redop || 'none'}, root ${first.root}`);
    for (const line of table.toString().split('\n')) out(line);
    rows = [];
  };

  return {
    begin(meta) {
      program = meta.program;
      perIter = meta.options.perIterTiming;
      skip = meta.options.perIterSkip;
      timeLabel = meta.options.reportCpuTime ? 'cputime' : 'time';
      for (const w of meta.warnings) out(w);
      const hosts = [...new Set(meta.ranks.map((r) => r.host.split('.')[0]))];
      out(
        `collbench ${meta.version}: ${meta.program} on ${meta.info.nranks} rank${meta.info.nranks === 1 ? '' : 's'} ` +
          `(${hosts.join(', ')}), backend ${meta.backend}`,
      );
      out(
        `sizes ${formatSize(meta.options.minBytes)}..${formatSize(meta.options.maxBytes)}, ` +
          `${meta.options.iters} iterations, ${meta.options.warmupIters} warm-up, check ${meta.options.check}`,
      );
    },
    row(row) {
      const prev = rows[rows.length - 1];
      const same =
        prev &&
        prev.cycle === row.cycle &&
        prev.sweep.dtype === row.sweep.dtype &&
        prev.sweep.op === row.sweep.op &&
        prev.sweep.root === row.sweep.root;
      if (prev && !same) flush();
      rows.push(row);
    },
    end(summary) {
      flush();
      if (summary.skipped) out(skipLine(summary.skipped));
      for (const line of footerLines({
        outOfBounds: summary.outOfBounds,
        avgBusBw: summary.avgBusBw,
        minBwVerdict: summary.minBwVerdict,
        program,
      }))
        out(line);
    },
  };
}
