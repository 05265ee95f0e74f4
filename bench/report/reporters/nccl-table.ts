// The nccl-tests text table as pure functions returning lines: preamble, header, rows, footer. Format strings are
// copied from nccl-tests' src/util.cu and src/hypercube.cu, so the layout is byte-identical.
import type { ResolvedOptions } from '../../config/flags.js';
import { type IterStats, medianOf } from '../../numbers/stats.js';
import { adaptiveFloat, cG, cSprintf } from '../format.js';
import { lateRankName, type MemoryUsage, type RankLineInfo, shortHost } from '../../core/ranks.js';
import type { MinBwVerdict } from '../../numbers/run-verdict.js';
import { formatLateUs } from '../../numbers/lateness.js';

// ---------------------------------------------------------------------------------------------------
// Preamble

export function rankLine(r: RankLineInfo): string {
  return (
    cSprintf(
      '#  Rank %2d Group %2d Pid %6d on %10s device %2s [%s] %s',
      r.rank,
      r.group ?? 0,
      r.pid,
      shortHost(r.host),
      String(r.device),
      r.bus,
      r.name,
    ) + (r.note ? ` (${r.note})` : '')
  );
}

type PreambleOptions = Pick<
  ResolvedOptions,
  | 'program'
  | 'nThreads'
  | 'nGpus'
  | 'minBytes'
  | 'maxBytes'
  | 'stepBytes'
  | 'stepFactor'
  | 'warmupIters'
  | 'iters'
  | 'aggIters'
  | 'check'
  | 'cudaGraph'
  | 'unalign'
  | 'blocking'
  | 'perIterTiming'
  | 'perIterSkip'
  | 'parallelInit'
  | 'reportCpuTime'
  | 'reportTimestamps'
>;

export interface PreambleInfo {
  options: PreambleOptions; // a ResolvedOptions fits
  program?: string; // overrides options.program
  version: string; // collbench version
  backend: string; // e.g. "mpi (Open MPI 4.1.4)", "nccl (2.28.7)"
  extra?: string; // appended to line 1, e.g. "nccl-headers=22807 nccl-library=22807"
  leadingLines?: string[]; // printed before line 1, e.g. "# Writing JSON output to out.json"
  perIterTimer?: string; // wording of the -I line; default nccl-tests' "CUDA event timing"
  ranks: RankLineInfo[]; // in rank order (rank 0 gathers them)
  reducedMaxBytes?: number | null; // "# Reducing maxBytes to …" (memory limit), printed after devices
  watchdog?: string; // "# Watchdog: …", a comment line after the mode lines (absent: not printed)
}

/** Per-mode lines between the nThread line and "#" (exact nccl-tests wording, trailing space included). */
function modeLines(info: PreambleInfo): string[] {
  const o = info.options;
  const out: string[] = [];
  if (o.blocking === 1) out.push('# Blocking Enabled: wait and barrier after each inner iteration (-m) ');
  if (o.blocking === 2) out.push('# Blocking Enabled: wait after each inner iteration (-m), no barrier ');
  if (o.blocking === 3) {
    out.push('# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier ');
  }
  if (o.perIterTiming) {
    let line = `# Per-Iteration Report: ${info.perIterTimer ?? 'CUDA event timing'}; i_* uses max over process rows`;
    if (o.perIterSkip) line += cSprintf('; summary skips first %d iterations', o.perIterSkip);
    out.push(line + ' ');
  }
  if (o.parallelInit) out.push('# Parallel Init Enabled: threads call into NcclInitRank concurrently ');
  return out;
}

/**
 * Everything before the first data row: [leading lines], version/backend, "Collective test starting",
 * the nThread line, mode lines, "#", "# Using devices", rank lines, [reducing maxBytes], "#" and the
 * three header lines. Line 1 replaces nccl-tests' "# nccl-tests version … nccl-headers=… nccl-library=…".
 */
export function preambleLines(info: PreambleInfo): string[] {
  const o = info.options;
  const lines = [...(info.leadingLines ?? [])];
  lines.push(`# collbench version ${info.version} backend ${info.backend}${info.extra ? ' ' + info.extra : ''}`);
  lines.push(`# Collective test starting: ${info.program ?? o.program}`);
  const factor = o.stepFactor > 1;
  lines.push(
    cSprintf(
      '# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d unalign: %d',
      o.nThreads,
      o.nGpus,
      o.minBytes,
      o.maxBytes,
      factor ? o.stepFactor : o.stepBytes,
      factor ? 'factor' : 'bytes',
      o.warmupIters,
      o.iters,
      o.aggIters,
      o.check,
      o.cudaGraph,
      o.unalign,
    ),
  );
  lines.push(...modeLines(info));
  if (info.watchdog) lines.push(`# Watchdog: ${info.watchdog}`);
  lines.push('#');
  lines.push('# Using devices');
  for (const r of info.ranks) lines.push(rankLine(r));
  if (info.reducedMaxBytes !== undefined && info.reducedMaxBytes !== null) {
    lines.push('#', cSprintf('# Reducing maxBytes to %ld due to memory limitation', info.reducedMaxBytes));
  }
  lines.push('#');
  lines.push(
    ...headerLines({
      perIter: o.perIterTiming,
      cpuTime: o.reportCpuTime,
      timestamps: o.reportTimestamps,
    }),
  );
  return lines;
}

// ---------------------------------------------------------------------------------------------------
// Column header

export interface HeaderFlags {
  perIter: boolean;
  cpuTime: boolean;
  timestamps: boolean;
}

/** A header column: its name, its unit line and its printf width (nccl-tests writeResultHeader). */
type HeaderColumn = readonly [name: string, unit: string, width: number];

/** The three column-header lines (nccl-tests writeResultHeader, without its leading "#" line). */
export function headerLines(flags: HeaderFlags): string[] {
  const tsLbl = flags.timestamps ? 'timestamp' : '';
  const tsPad = flags.timestamps ? 19 : 0;
  const tsFmt = flags.timestamps ? '%Y-%m-%d %H:%M:%S' : '';
  const t = flags.cpuTime ? 'cputime' : 'time';
  const lead: HeaderColumn[] = [
    ['size', '(B)', 10],
    ['count', '(elements)', 12],
    ['type', '', 8],
    ['redop', '', 6],
    ['root', '', 6],
  ];
  const half: HeaderColumn[] = [
    [t, '(us)', 7],
    ['algbw', '(GB/s)', 6],
    ['busbw', '(GB/s)', 6],
    ['#wrong', '', 6],
  ];
  if (flags.perIter) half.push(['i_min', '(us)', 7], ['i_max', '(us)', 7], ['i_p99', '(us)', 7], ['i_cv%', '(%)', 7]);
  const columns = [...lead, ...half, ...half];
  const f = `# ${columns.map(([, , width]) => `%${width}s`).join('  ')} %*s`;
  const title = flags.perIter
    ? '              out-of-place (+ per-iteration)                                in-place (+ per-iteration)'
    : '           out-of-place                       in-place          ';
  return [
    cSprintf(`# %10s  %12s  %8s  %6s  %6s${title}`, '', '', '', '', ''),
    cSprintf(f, ...columns.map(([name]) => name), tsPad, tsLbl),
    cSprintf(f, ...columns.map(([, unit]) => unit), tsPad, tsFmt),
  ];
}

// ---------------------------------------------------------------------------------------------------
// Data rows

/** The four -I summary cells of one half, in µs except cvPct. */
export interface IterCells {
  minUs: number;
  maxUs: number;
  p99Us: number;
  cvPct: number;
}

export const iterCellsFromStats = (s: IterStats): IterCells => ({
  minUs: s.min,
  maxUs: s.max,
  p99Us: s.p99,
  cvPct: s.cvPct,
});

export interface HalfCells {
  timeUs: number; // time, or cputime with -C
  algBw: number; // GB/s
  busBw: number; // GB/s
  wrong: number | null; // wrong elements; null = not checked (printed N/A)
  iter?: IterCells; // -I 1
}

export interface RowCells {
  sizeBytes: number;
  count: number;
  type: string;
  redop: string; // "none" for non-reducing collectives, "" for hypercube
  root: number; // -1 for non-rooted collectives
  halves: [HalfCells, HalfCells]; // out-of-place, in-place
  timestamp?: Date; // -S 1 (local time)
}

/** One data row of an nccl-tests table (nccl-tests' own or collbench's) split into its columns, as this file prints
 *  them: `lead` = size count type redop root (redop '' for hypercube's empty column), then each half's time algbw
 *  busbw #wrong [i_min i_max i_p99 i_cv% with -I 1]; -S's timestamp left out. Null for any other line. The one
 *  reader of the table: the side-by-side with nccl-tests (tools/vs-nccl-tests.ts) and the tests use it. */
export function splitTableRow(line: string): { lead: string[]; oop: string[]; ip: string[] } | null {
  if (line.startsWith('#') || !/^\s*\d/.test(line)) return null;
  let f = line.trim().split(/\s+/);
  if (f.length > 2 && /^\d{4}-\d\d-\d\d$/.test(f[f.length - 2]!) && /^\d\d:\d\d:\d\d$/.test(f[f.length - 1]!))
    f = f.slice(0, -2);
  if (f.length % 2 === 0) f.splice(3, 0, ''); // hypercube prints no redop
  const half = (f.length - 5) / 2;
  if (half !== 4 && half !== 8) return null;
  return { lead: f.slice(0, 5), oop: f.slice(5, 5 + half), ip: f.slice(5 + half) };
}

/** strftime("%Y-%m-%d %H:%M:%S") in local time. */
export function formatTimestamp(d: Date): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  return (
    `${String(d.getFullYear()).padStart(4, '0')}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ` +
    `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`
  );
}

function halfText(h: HalfCells): string {
  const time = adaptiveFloat(h.timeUs, 7);
  const alg = adaptiveFloat(h.algBw, 6);
  const bus = adaptiveFloat(h.busBw, 6);
  let s =
    h.wrong === null
      ? cSprintf('  %7s  %6s  %6s    N/A', time, alg, bus) // one column narrower than %6g: as nccl-tests
      : cSprintf('  %7s  %6s  %6s  %6g', time, alg, bus, h.wrong);
  if (h.iter) {
    s += cSprintf(
      '  %7s  %7s  %7s  %7s',
      adaptiveFloat(h.iter.minUs, 7),
      adaptiveFloat(h.iter.maxUs, 7),
      adaptiveFloat(h.iter.p99Us, 7),
      adaptiveFloat(h.iter.cvPct, 7),
    );
  }
  return s;
}

/** One data row: preamble, out-of-place half [+ -I cells], in-place half [+ -I cells] [+ -S timestamp]. */
export function rowLine(row: RowCells): string {
  let s = cSprintf(
    '%12li  %12li  %8s  %6s  %6s',
    row.sizeBytes,
    row.count,
    row.type,
    row.redop,
    cSprintf('%6i', row.root),
  );
  s += halfText(row.halves[0]) + halfText(row.halves[1]);
  if (row.timestamp) s += cSprintf('%21s', formatTimestamp(row.timestamp));
  return s;
}

/** collbench addition, printed after a row with wrong elements: where the first mismatch was. */
export function firstWrongLine(w: { rank: number; index: number; expected: string; got: string }): string {
  return `# first wrong: rank ${w.rank} index ${w.index} expected ${w.expected} got ${w.got}`;
}

/** --warn-busbw: one warning per cycle whose average busbw fell below the threshold (a comment line, so parsers skip it). */
export function cycleBelowLine(c: {
  sweep: { dtype: string; op: string; root: number };
  cycle: number;
  avgBusBw: number;
  warnBusBw: number | null;
  time: Date;
}): string {
  return (
    `# Warning: cycle ${c.cycle} (${c.sweep.dtype} ${c.sweep.op} root ${c.sweep.root}, ended ${c.time.toISOString()}): ` +
    `average busbw ${cG(c.avgBusBw)} GB/s is below --warn-busbw ${cG(c.warnBusBw ?? Number.NaN)} GB/s`
  );
}

/** --target-rsd, per row-half that did not reach it (after the table). */
export function precisionMissLine(
  sizeBytes: number,
  placement: string,
  p: { targetRsdPct: number; rsdPct: number; sampleCvPct: number; iterations: number },
): string {
  return (
    `# target-rsd: ${sizeBytes} B ${placement}: the mean time's rsd is ${cG(p.rsdPct)}% after ${p.iterations} iterations ` +
    `(samples' cv ${cG(p.sampleCvPct)}%), above the ${cG(p.targetRsdPct)}% target: the row half's budget ran out`
  );
}

/** --target-rsd over the run: `# target-rsd 1%: met in 20 of 22 row-halves, 20 to 640 iterations`. */
export function precisionSummaryLine(
  all: readonly { targetRsdPct: number; met: boolean; iterations: number }[],
): string | null {
  if (all.length === 0) return null;
  const iters = all.map((p) => p.iterations);
  return (
    `# target-rsd ${cG(all[0]!.targetRsdPct)}%: met in ${all.filter((p) => p.met).length} of ${all.length} row-halves, ` +
    `${Math.min(...iters)} to ${Math.max(...iters)} iterations`
  );
}

/** Who the others waited for, as a rank on a host (numbers/lateness.ts; the lines below are collbench's own). */
export interface LateCell {
  rank: number;
  host: string;
  lastFraction: number;
  medianLateUs: number;
  marginUs: number;
  device?: number;
  bus?: string; // device arrivals: the GPU
}

/** After the table, per row-half where one rank arrived last in most iterations by more than the margin. */
export function lateLine(sizeBytes: number, placement: string, l: LateCell): string {
  return (
    `# late: ${sizeBytes} B ${placement}: ${lateRankName(l)} last in ` +
    `${Math.round(l.lastFraction * 100)}% of iterations, +${formatLateUs(l.medianLateUs)} median ` +
    `(margin ${formatLateUs(l.marginUs)})`
  );
}

/** A rank is the run's late rank when named in at least this share of the row-halves (one odd size is not a culprit). */
export const LATE_SUMMARY_SHARE = 0.25;

/** The rank named in the most row-halves, when in at least LATE_SUMMARY_SHARE of them:
 *  `# late rank: 2 on h3 (late in 9 of 12 row-halves; last in 93% of their iterations, +1.4 ms median)`. */
export function lateSummaryLine(named: readonly LateCell[], halves: number): string | null {
  if (named.length === 0) return null;
  const byRank = new Map<number, LateCell[]>();
  for (const l of named) byRank.set(l.rank, [...(byRank.get(l.rank) ?? []), l]);
  const [, cells] = [...byRank.entries()].sort((a, b) => b[1].length - a[1].length || a[0] - b[0])[0]!;
  if (cells.length < LATE_SUMMARY_SHARE * halves) return null;
  const fraction = cells.reduce((sum, l) => sum + l.lastFraction, 0) / cells.length;
  return (
    `# late rank: ${lateRankName(cells[0]!).slice('rank '.length)} (late in ${cells.length} of ${halves} row-halves; ` +
    `last in ${Math.round(fraction * 100)}% of their iterations, +${formatLateUs(medianOf(cells.map((l) => l.medianLateUs)))} median)`
  );
}

/**
 * A collective that cannot run at this rank count prints one line, without '#', between the header and
 * the footer; the footer average is then 0/0 ("-nan"). Only hypercube does this (src/hypercube.cu:
 * "nRanks N is not a power of 2, skipping", printed by every thread of every process there, once by
 * rank 0 here). Given a rank count, returns that text; given a string (a descriptor's skipReason), it.
 */
export function skipLine(reason: string | number): string {
  return typeof reason === 'number' ? cSprintf('nRanks %d is not a power of 2, skipping', reason) : reason;
}

// ---------------------------------------------------------------------------------------------------
// Footer

/** Bytes as nccl-tests getMemString: B/KB/MB/GB (binary), 2 decimals below 10, 1 below 100, else 0. */
export function memString(amountBytes: number): string {
  let amount = amountBytes;
  let postfix = ' B';
  const GiB = 1024 * 1024 * 1024;
  if (Math.abs(amount) >= GiB) {
    postfix = ' GB';
    amount /= GiB;
  } else if (Math.abs(amount) >= 1024 * 1024) {
    postfix = ' MB';
    amount /= 1024 * 1024;
  } else if (Math.abs(amount) >= 1024) {
    postfix = ' KB';
    amount /= 1024;
  }
  const precision = Math.abs(amount) < 10 ? 2 : Math.abs(amount) < 100 ? 1 : 0;
  return cSprintf('%.*f', precision, amount) + postfix;
}

/** -M line: "# GPU memory usage     : Initialization X | User-Allocated Y | Collective Z | Total  T". */
export function memoryUsageLine(m: MemoryUsage): string {
  const parts = [
    ['Initialization', m.initialization],
    ['User-Allocated', m.userAllocated],
    ['Collective', m.collective],
  ] as const;
  const body =
    parts.map(([name, v]) => `${name} ${memString(v)} `).join('| ') +
    `| Total  ${memString(m.initialization + m.userAllocated + m.collective)}`;
  return cSprintf('# %-20s : %s', 'GPU memory usage', body);
}

export interface FooterInfo {
  outOfBounds: number; // row-half checks that saw ≥ 1 wrong element (not the element count)
  avgBusBw: number; // averageBusBw(…) over every printed half
  minBwVerdict?: MinBwVerdict | null; // minBwVerdict(avg, process.env.NCCL_TESTS_MIN_BW)
  program: string;
  memory?: MemoryUsage | null; // -M
  errorText?: string | null; // last library error, printed as "# error: …"
}

/** Footer: out-of-bounds and average lines, "#", concluded, [-M line], "#", then "" or "# error: …". */
export function footerLines(f: FooterInfo): string[] {
  const lines = [
    cSprintf('# %-20s : %d %s', 'Out of bounds values', f.outOfBounds, f.outOfBounds ? 'FAILED' : 'OK'),
    cSprintf('# %-20s : %s %s', 'Avg bus bandwidth', cG(f.avgBusBw), f.minBwVerdict ?? ''),
    '#',
    `# Collective test concluded: ${f.program}`,
  ];
  if (f.memory) lines.push(memoryUsageLine(f.memory));
  lines.push('#');
  lines.push(f.errorText ? `# error: ${f.errorText}` : '');
  return lines;
}

// ---------------------------------------------------------------------------------------------------
// Golden-test helper

const ROW_PREAMBLE = /^( *\d+)  ( *\d+)  (.{8})  (.{6})  (.{6})((?: +\S+)*)$/;
const TS_DATE = /^\d{4}-\d\d-\d\d$/;
const TS_TIME = /^\d\d:\d\d:\d\d$/;

/** Replace a cell (separator + right-aligned value) with x's of the same width, keeping 2 spaces. */
const maskCell = (cell: string): string => '  ' + 'x'.repeat(cell.length - 2);

/**
 * Mask what changes from run to run so a real run can be compared with a fixture: in every data row the
 * time, algbw, busbw and -I cells become `x` runs of the same width (#wrong, N/A and the size columns
 * stay), -S timestamp digits become `x`, and the footer's average value becomes `x`. Other lines are
 * left alone. Relies on the cell widths (time 7, bandwidth 6, type 8, redop 6, root 6).
 */
export function maskTimes(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (line.startsWith('# Avg bus bandwidth    : ')) {
        return line.replace(/^(# Avg bus bandwidth {4}: )\S+/, '$1x');
      }
      if (line.startsWith('#')) return line;
      const m = ROW_PREAMBLE.exec(line);
      if (!m) return line;
      const rest = m[6]!;
      const cells = rest.match(/ +\S+/g) ?? [];
      let perHalf: number;
      let ts = 0;
      if (cells.length === 8 || cells.length === 10) perHalf = 4;
      else if (cells.length === 16 || cells.length === 18) perHalf = 8;
      else return line;
      if (cells.length % 8 === 2) {
        ts = 2;
        if (!TS_DATE.test(cells.at(-2)!.trim()) || !TS_TIME.test(cells.at(-1)!.trim())) return line;
      }
      const masked = cells.map((c, i) => {
        if (i >= cells.length - ts) return c.replace(/\d/g, 'x');
        const col = i % perHalf;
        return col === 3 ? c : maskCell(c); // column 3 of a half is #wrong
      });
      return line.slice(0, line.length - rest.length) + masked.join('');
    })
    .join('\n');
}
