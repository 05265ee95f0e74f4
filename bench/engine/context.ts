// The shapes every step of a run shares: what a run returns, the caller's hooks, and the state of one run once its
// backend is up (suite.ts makes and drives it; measure.ts and arrivals.ts read it).
import type { BackendDriver } from '../backends/driver.js';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import type { LinksSummary, Reporter, RowRecord } from '../report/reporter.js';
import type { Preflight } from './preflight.js';
import type { Watchdog } from './watchdog.js';

export interface SuiteOutcome {
  exitCode: number;
  outOfBounds: number;
  avgBusBw: number;
  rows: RowRecord[];
  info: BackendInfo;
}

export interface SuiteHooks {
  /** Reporters besides the nccl-tests table (created on rank 0 only, after the backend is up). */
  extraReporters?: (info: BackendInfo) => Reporter[];
  /** The command line as given (program path first): recorded in reports with a rerun command. */
  argv?: readonly string[];
  /** Where NCCL_TESTS_MIN_BW, NCCL_TESTS_ALLTOALLV_* and the launchers' variables are read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** -T expired and the backend's abort returned (a backend without a job-wide abort): end the process. The
   *  caller decides how (cli/main.ts exits 4): library code never exits the process itself. */
  onTimeout?: () => never;
}

/** The hooks of a run whose checks were made (preflight.ts): by the run command before it chose --np or this process,
 *  by a feature's rank before its bring-up. */
export type CheckedHooks = SuiteHooks & { preflight: Preflight };

/** One run's state shared by the steps below (the backend is up; reporters exist on rank 0 only). */
export interface RunContext {
  options: ResolvedOptions;
  /** The options as given, before adjust(): which lists were `all` (config/cases.ts probedPairs). */
  requested: ResolvedOptions;
  io: IO;
  desc: CollectiveDescriptor;
  driver: BackendDriver;
  native: NativeBackend;
  info: BackendInfo;
  reporters: Reporter[];
  hooks: SuiteHooks;
  /** The environment the run reads (hooks.env, else process.env). */
  env: NodeJS.ProcessEnv;
  /** Every wait of the run goes through it (-T, or the default watchdog). */
  dog: Watchdog;
  reducedMaxBytes: number | null;
  /** --links: reads and gathers the link profiler's rows after each row-half (engine/links.ts); null without. */
  links: LinksCollector | null;
}

/** What --links collects over a run (engine/links.ts makes it). */
export interface LinksCollector {
  /** One row-half done: read, reset and gather every rank's rows. */
  afterHalf(): Promise<void>;
  /** On rank 0, the verdict and its lines; null elsewhere. */
  finish(): LinksSummary | null;
}
