// What a run tells its reporters (docs/architecture.md, "report/"): the run's metadata once, then
// every row as it completes, then the summary. The nccl-tests table is one reporter; JSON, CSV and the
// other exports plug in the same way. Only rank 0 has reporters.
import type { SweepCase } from '../config/cases.js';
import type { HalfResult } from '../core/types.js';
import type { ClockMethod } from '../numbers/lateness.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { BackendInfo } from '../native/binding.js';
import type { MemoryUsage, RankLineInfo } from '../core/ranks.js';
import type { ReportTimeout } from './schema.js';
import type { AlgoChoice, LinksVerdict } from '../backends/nccl-links.js';

export interface RowHalfRecord {
  inPlace: boolean;
  timeUs: number; // the printed time: completion time, or cputime with -C
  algBw: number; // GB/s, from the completion time
  busBw: number; // GB/s
  wrong: number | null; // null = not checked (N/A)
  result: HalfResult; // everything the native loop returned (per-iteration samples, first wrong…)
  late: LateRank | null; // the rank the others waited for (numbers/lateness.ts), when one stood out
  /** Per process (= per rank with one rank per process): share of iterations it arrived last by more than the
   *  margin; null where arrivals say nothing (one process, a collective that lets ranks run ahead, size 0). */
  lastShare: number[] | null;
  /** --target-rsd: the spread reached (rank 0; only where the target was asked for). */
  precision?: Precision;
}

/** --target-rsd on one row-half: the target, the relative standard deviation of the mean time reached (cv / sqrt(n)),
 *  the spread of the single samples (cv), the iterations it took. */
export interface Precision {
  targetRsdPct: number;
  rsdPct: number;
  sampleCvPct: number;
  iterations: number;
  met: boolean;
}

/** The rank that arrived last in most iterations of a row-half, by more than the margin (numbers/lateness.ts). */
export interface LateRank {
  rank: number;
  host: string;
  lastFraction: number; // iterations it was last by more than marginUs, over all iterations
  medianLateUs: number; // median of how much later than the others' median arrival, in those iterations
  marginUs: number;
  device?: number; // device arrivals: its GPU (CUDA ordinal) and PCI id
  bus?: string;
}

export interface RowRecord {
  sweep: SweepCase;
  cycle: number;
  sizeBytes: number;
  count: number;
  type: string;
  redop: string;
  root: number; // as printed: -1 for non-rooted collectives
  halves: [RowHalfRecord, RowHalfRecord];
  time: Date; // when the row completed
}

export interface RunMeta {
  options: ResolvedOptions;
  program: string;
  version: string;
  backend: string; // e.g. "mpi (Open MPI 4.1.4)"
  info: BackendInfo;
  ranks: RankLineInfo[];
  warnings: string[]; // comment lines about known defects of the library under test
  perIterTimer: string; // how -I samples are taken, e.g. "host clock timing"
  startTime: Date;
  argv?: readonly string[]; // the command line as given (program path first), for reports and rerun commands
  plannedRows?: number | null; // rows the run will print; null when endless (-N 0)
  reducedMaxBytes?: number | null; // -e lowered to fit GPU memory (nccl-tests' "Reducing maxBytes")
  /** How arrivals were put on one clock (null with one process: nobody waits for another). */
  clock?: { method: ClockMethod; uncertaintyUs: number; offsetsUs: number[] } | null;
  watchdog?: string; // the limit each wait runs under, in words (engine/watchdog.ts)
}

/** The row about to be measured (progress reporters show it). */
export interface RowStart {
  index: number;
  sweep: SweepCase;
  cycle: number;
  sizeBytes: number;
}

export interface RunSummary {
  outOfBounds: number;
  avgBusBw: number;
  minBwVerdict: 'OK' | 'FAILED' | null;
  exitCode: number;
  skipped: string | null; // why the collective did not run at this rank count (hypercube)
  memory?: MemoryUsage | null; // -M: GPU memory usage, max over the job's GPUs (nccl)
  cycles?: number; // cycles completed (every sweep)
  cyclesBelowWarnBusBw?: number; // --warn-busbw: cycles whose average busbw was below it
  links?: LinksSummary; // --links (nccl): the link verdict, NCCL's algorithm choices and their lines
}

/** --links: what the link profiler's rows said over the run (backends/nccl-links.ts); verdict null when NCCL did not
 *  load the plugin. */
export interface LinksSummary {
  lines: string[];
  verdict: LinksVerdict | null;
  algo: AlgoChoice[];
}

/** One completed cycle (a pass over every size of one sweep, -N / --duration), with the --warn-busbw health check. */
export interface CycleRecord {
  sweep: SweepCase;
  cycle: number;
  avgBusBw: number; // over both halves of the cycle's rows, as nccl-tests' footer average
  warnBusBw: number | null; // --warn-busbw
  below: boolean; // avgBusBw < warnBusBw
  time: Date; // when the cycle ended
}

/** A reporter may return a promise (an exporter rewriting its file); runSuite awaits it before going on. */
export interface Reporter {
  begin?(meta: RunMeta): void | Promise<void>;
  rowStart?(next: RowStart): void;
  row?(row: RowRecord): void | Promise<void>;
  cycleEnd?(cycle: CycleRecord): void | Promise<void>;
  /** The run stopped before end() (an error, a timeout): write what is still held back (the exporters). */
  abandon?(): void | Promise<void>;
  /** A wait expired: which, who did not arrive, the library's view (after abandon; the exporters record it). */
  timedOut?(t: ReportTimeout): void | Promise<void>;
  end?(summary: RunSummary): void | Promise<void>;
}
