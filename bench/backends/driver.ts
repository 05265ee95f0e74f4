// The BackendDriver interface: what differs between backends on the TypeScript side (environment before the
// module loads, options a backend refuses, bring-up, rank lines, warnings, -M). The timed loop, the plan and
// the reports are the same for every backend. Imports no concrete driver: the registry binds names to drivers.
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import type { MemoryUsage, RankLineInfo } from '../core/ranks.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { CasePair } from '../config/cases.js';
import type { CollectiveName } from '../core/types.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';

/** What adjust() decided: the options to run with and the reduced -e to announce, if any. */
export interface Adjusted {
  options: ResolvedOptions;
  reducedMaxBytes: number | null;
}

export interface BackendDriver {
  /** Runs before the module is initialised (process-wide settings the library reads at init). */
  prepare?(options: ResolvedOptions): void;
  /** Throws UsageError for options this backend cannot honour (never silently ignores them). */
  validate(options: ResolvedOptions): void;
  /** This process's line(s) under "# Using devices" (one per rank it drives). */
  rankLine(info: BackendInfo): RankLineInfo | RankLineInfo[];
  /** Comment lines about known defects of the library that this run will meet (`cases`: the pairs it runs, when known). */
  warnings(
    options: ResolvedOptions,
    desc: CollectiveDescriptor,
    info: BackendInfo,
    cases?: readonly CasePair[],
  ): string[];
  /** --links: this process's link profiler rows as JSON (read and, with `reset`, zeroed), or null when none were
   *  loaded (backends/nccl-links.ts). Absent: the backend has no link profiler. */
  linkRows?(native: NativeBackend, reset: boolean): string | null;
  /** Wording of the -I preamble line: how per-iteration samples are taken. */
  perIterTimer: string;
  /** Arrivals come from the -I device marks (numbers/lateness.ts), one row per rank: without -I there are none,
   *  since the host enqueues ahead of the devices. Absent: host clock readings, one row per process. */
  deviceArrivals?: boolean;
  /** Brings the module up when that takes more than native.init() (nccl: bootstrap, unique id; gloo: config).
   *  `limitSec`: the run watchdog's limit for a start-up wait (-T, else the default floor; 0: none), for what blocks
   *  the JavaScript thread where the watchdog cannot see it (MPI_Init's native alarm). */
  init?(native: NativeBackend, options: ResolvedOptions, limitSec: number): Promise<BackendInfo>;
  /** After init, on every rank alike: options the job's devices and library change (nccl: GPU memory cap,
   *  datatypes the GPUs lack) and the reduced -e to announce, if any. */
  adjust?(options: ResolvedOptions, info: BackendInfo, native: NativeBackend): Adjusted | Promise<Adjusted>;
  /** The largest element count one op of `collective` can take on this backend, and why; absent or null: no
   *  limit below 2^53. A larger count is refused before any buffer is allocated (one line, exit 2). */
  maxCount?(collective: CollectiveName): { max: number; why: string } | null;
  /** Native error codes by which the library refuses a datatype × op it lacks (a 1-element probe's answer,
   *  backends/refusals.ts): such pairs of -d all / -o all are skipped with a `#` line instead of ending the run. */
  refusals?: readonly string[];
  /** Why the loaded library computes `pair` of `desc` wrongly (a known defect, probed at init), or null: such pairs of
   *  -d all / -o all are skipped with a `#` line as the refused ones are; named explicitly, they run. */
  knownWrong?(pair: CasePair, desc: CollectiveDescriptor, info: BackendInfo): string | null;
  /** -M: memory used, combined over the job (called on every rank). */
  memoryUsage?(native: NativeBackend): MemoryUsage;
  /** After native.finalize(): release what init took besides the module (nccl: the MPI module it used). `leave`: this
   *  process failed and has peers, the module was not finalized: release nothing the peers would have to join. */
  shutdown?(how: { leave: boolean }): void;
}
