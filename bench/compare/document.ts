// The `collbench compare` result document (`--json FILE`), versioned like the run report and built only from the
// children's own reports and exit statuses; every compare output renders it. Units in the names: Bytes, Us
// (microseconds), GBps (1e9 B/s), Pct (percent).
import type { AxisKind, Setting } from './settings.js';
import type { Choice } from './tuning-log.js';

export const COMPARE_KIND = 'collbench-compare';
export const COMPARE_SCHEMA_VERSION = 1;

/** How one run of one combination ended. `rejected`: the library or the program refused the setting. */
export type RunStatus = 'ok' | 'wrong' | 'failed' | 'rejected' | 'timeout' | 'skipped' | 'pending';
/** A combination: the worst of its runs (skipped and pending runs aside). */
export type CombinationStatus = 'ok' | 'wrong' | 'failed' | 'rejected' | 'timeout' | 'pending';

export interface CompareRun {
  run: number; // 1-based
  status: RunStatus;
  exitCode: number | null;
  signal: string | null;
  durationSec: number | null;
  error: string | null; // one line, for every status but ok/pending
  report: string | null; // the child's -J file (kept with --reports-dir)
  rows: number; // rows its report holds
  stderrTail?: string; // last lines the child printed on stderr, for failed runs
}

export interface CompareCombination {
  id: string;
  baseline: boolean;
  label: string;
  settings: Setting[];
  env: Record<string, string>;
  unset: string[];
  args: string[];
  status: CombinationStatus;
  error: string | null; // the first failed run's error
  wrong: number | null; // #wrong summed over sizes, placements and runs; null = nothing checked
  runs: CompareRun[];
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface CombinationAtSize {
  id: string;
  n: number; // samples (runs × -N cycles) at this size
  busBwGBps: Spread | null;
  timeUs: Spread | null;
  wrong: number | null; // both placements, all runs; null = not checked
  vsDefaultPct: number | null; // median busbw / default's median busbw − 1 (judged on time: default's median time / median time − 1)
  /** What NCCL ran under this setting at this size, from collbench's profiler plugin (--links); absent without it. */
  ncclChose?: Choice[];
}

/**
 * What the verdict compares: busbw (higher is better), or time (lower is better; the same ratios as algbw at a given
 * size) where busbw's factor is 0 — one rank, or a collective whose factor is 0 at that rank count — so that busbw is
 * 0 for every combination by definition and says nothing. `why`: the header's reason, null for busbw.
 */
export interface JudgedOn {
  metric: 'busbw' | 'time';
  why: string | null;
}

export interface SizeVerdict {
  sizeBytes: number;
  /** A replay's step (index -1: the whole iteration): what this verdict is of; absent for a benchmark's size. */
  step?: { index: number; collective: string; recorded: string } | null;
  count: number;
  results: CombinationAtSize[]; // one per combination, in combination order
  best: string | null; // id; eligible = status ok (every run completed, #wrong 0 everywhere)
  runnerUp: string | null;
  gainPct: number | null; // best over the default, in percent
  /** The gain's 95 % bootstrap interval (percent, ratio of medians over runs); null with fewer than 2 runs of either,
   *  or when the default is the best. */
  gainInterval: { lo: number; hi: number; level: number } | null;
  /** Two-sided Mann-Whitney p of the best's runs against the default's (exact for small samples); null as above. */
  gainP: number | null;
  /** Holm-corrected over the case's sizes at 0.05: 'significant' or 'no significant difference', or 'too few runs'
   *  where runs that do not overlap at all could not have passed either; null without a test. */
  significance: 'significant' | 'no significant difference' | 'too few runs' | null;
  clear: boolean | null; // best's min > runner-up's max, times: best's max < runner-up's min (null with one run or one eligible)
  /** What NCCL chose for the default: from the plugin's collective events (--links) when its runs have them, else
   *  from the NCCL_DEBUG=TUNING probe's log (null when neither was taken). */
  ncclChoice: Choice[] | null;
}

export interface CompareCase {
  /** A replay's case name (its steps, its whole iteration); absent for a benchmark's type/redop/root. */
  title?: string;
  type: string;
  redop: string;
  root: number;
  sizes: SizeVerdict[];
  crossovers: { sizeBytes: number; from: string; to: string }[];
}

export interface NcclProbe {
  ran: boolean;
  env: Record<string, string>;
  status: RunStatus;
  error: string | null;
  events: number; // per-call tuning lines parsed
  files: string[];
}

export interface CompareDocument {
  kind: typeof COMPARE_KIND;
  schemaVersion: typeof COMPARE_SCHEMA_VERSION;
  status: 'incomplete' | 'complete' | 'interrupted';
  startTime: string;
  endTime: string | null;
  argv: string[];
  program: { words: string[]; collective: string; name: string };
  axes: { kind: AxisKind; name: string; values: string[] }[];
  runsPerCombination: number;
  placement: 'out-of-place' | 'in-place';
  timeoutSec: number;
  backend: string | null; // from the first child report: "mpi (Open MPI 4.1.4)"
  nranks: number | null;
  nodes: number | null; // distinct hosts of the ranks
  judgedOn: JudgedOn;
  combinations: CompareCombination[];
  cases: CompareCase[];
  probe: NcclProbe | null;
  winners: string[]; // distinct best ids over all sizes, in order of first appearance
  exitCode: number;
}
