// What differs between backends on the TypeScript side, in one place: how to prepare the process before
// the module loads, which options a backend refuses, what its rank lines and warnings say. The timed
// loop, plan and reporting are the same for all (DESIGN.md §2, §3).
import { cpus, hostname } from 'node:os';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import { UsageError } from '../config/errors.js';
import type { ResolvedOptions } from '../core/types.js';
import { prepareSingletonMpi } from '../launch/environment.js';
import { glooDriver } from './gloo.js';
import { ncclDriver } from './nccl.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import type { BackendName } from '../native/loader.js';
import type { MemoryUsage, RankLineInfo } from '../report/reporters/nccl-table.js';

export interface BackendDriver {
  /** Runs before the native module is loaded (environment the library reads at init). */
  prepare(options: ResolvedOptions): void;
  /** Throws UsageError for options this backend cannot honour (never silently ignores them). */
  validate(options: ResolvedOptions): void;
  /** This process's line(s) under "# Using devices" (one per rank it drives). */
  rankLine(info: BackendInfo): RankLineInfo | RankLineInfo[];
  /** Comment lines about known defects of the library that this run will meet. */
  warnings(options: ResolvedOptions, desc: CollectiveDescriptor, info: BackendInfo): string[];
  /** Wording of the -I preamble line: how per-iteration samples are taken. */
  perIterTimer: string;
  /** Brings the module up when that takes more than native.init() (nccl: bootstrap, unique id). */
  init?(native: NativeBackend, options: ResolvedOptions): Promise<BackendInfo>;
  /** After init, on every rank alike: options the job's devices and library change (nccl: GPU memory cap,
   *  datatypes the GPUs lack) and the reduced -e to announce, if any. */
  adjust?(options: ResolvedOptions, info: BackendInfo, native: NativeBackend):
    { options: ResolvedOptions; reducedMaxBytes: number | null };
  /** -M: memory used, combined over the job (called on every rank). */
  memoryUsage?(native: NativeBackend): MemoryUsage;
  /** After native.finalize(): release what init took besides the module (nccl: the MPI module it used). */
  shutdown?(): void;
}

/** Flags that only mean something on GPUs; CPU backends refuse them instead of ignoring them. */
export function refuseGpuOnlyFlags(o: ResolvedOptions, backend: BackendName): void {
  const refused: [boolean, string][] = [
    [o.nThreads !== 1, '-t/--nthreads (threads driving GPUs)'],
    [o.nGpus !== 1, '-g/--ngpus (GPUs per thread)'],
    [o.parallelInit !== 0, '-p/--parallel_init'],
    [o.streamNull !== 0, '-y/--stream_null (CUDA streams)'],
    [o.cudaGraph !== 0, '-G/--cudagraph (CUDA graphs)'],
    [o.localRegister !== 0, '-R/--local_register (NCCL buffer registration)'],
    [o.ctaPolicy !== -1, '-x/--cta_policy (NCCL CTA policy)'],
    [o.deviceImpl !== 0, '-D/--device_implementation (NCCL device API)'],
    [o.deviceCtaCount !== 16, '-V/--device_cta_count (CTAs of NCCL device-API kernels)'],
    [o.memoryReport, '-M/--memory (GPU memory report)'],
  ];
  const hit = refused.find(([bad]) => bad);
  if (hit) throw new UsageError(`${hit[1]} needs the nccl backend; the ${backend} backend runs on CPUs`);
}

/** A CPU rank line: host, pid, `device cpu`, and the CPU model as the device name. */
export function cpuRankLine(info: BackendInfo): RankLineInfo {
  return {
    rank: info.rank, host: hostname().split('.')[0], pid: info.pid, device: 'cpu', bus: '-',
    name: cpus()[0]?.model?.trim() ?? 'cpu',
  };
}

const mpiDriver: BackendDriver = {
  prepare: () => prepareSingletonMpi(),
  validate: (options) => refuseGpuOnlyFlags(options, 'mpi'),
  rankLine: cpuRankLine,
  warnings(options, desc, info) {
    const smallInts = options.dtypes.some((t) => t === 'int8' || t === 'uint8');
    const sums = options.ops.some((o) => o === 'sum' || o === 'avg' || o === 'mulsum');
    if (info.smallIntSumSaturates && desc.reduces && smallInts && sums) {
      return ['# Warning: this MPI library saturates int8/uint8 MPI_SUM instead of wrapping (Open MPI op/avx, ' +
        'open-mpi/ompi#8045): expect #wrong > 0 for int8/uint8 sum, avg and mulsum; OMPI_MCA_op=^avx avoids that component'];
    }
    return [];
  },
  perIterTimer: 'host clock timing',
};

// Built at the first lookup, not at module load: gloo.ts imports cpuRankLine and refuseGpuOnlyFlags from
// this module, and whichever side of that import cycle loads first must not meet the other uninitialised.
let DRIVERS: Partial<Record<BackendName, BackendDriver>> | null = null;

export function driverFor(name: BackendName): BackendDriver {
  DRIVERS ??= { mpi: mpiDriver, gloo: glooDriver, nccl: ncclDriver };
  const d = DRIVERS[name];
  if (!d) throw new UsageError(`--backend: the ${name} backend is not available in this version of collbench`);
  return d;
}
