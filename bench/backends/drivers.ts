// What differs between backends on the TypeScript side, in one place: how to prepare the process before
// the module loads, which options a backend refuses, what its rank lines and warnings say. The timed
// loop, plan and reporting are the same for all (DESIGN.md §2, §3).
import { cpus, hostname } from 'node:os';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import { UsageError } from '../config/errors.js';
import type { ResolvedOptions } from '../core/types.js';
import { prepareSingletonMpi } from '../launch/environment.js';
import type { BackendInfo } from '../native/binding.js';
import type { BackendName } from '../native/loader.js';
import type { RankLineInfo } from '../report/reporters/nccl-table.js';

export interface BackendDriver {
  /** Runs before the native module is loaded (environment the library reads at init). */
  prepare(options: ResolvedOptions): void;
  /** Throws UsageError for options this backend cannot honour (never silently ignores them). */
  validate(options: ResolvedOptions): void;
  /** This rank's line under "# Using devices". */
  rankLine(info: BackendInfo): RankLineInfo;
  /** Comment lines about known defects of the library that this run will meet. */
  warnings(options: ResolvedOptions, desc: CollectiveDescriptor, info: BackendInfo): string[];
  /** Wording of the -I preamble line: how per-iteration samples are taken. */
  perIterTimer: string;
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

const DRIVERS: Partial<Record<BackendName, BackendDriver>> = { mpi: mpiDriver };

export function driverFor(name: BackendName): BackendDriver {
  const d = DRIVERS[name];
  if (!d) throw new UsageError(`--backend: the ${name} backend is not available in this version of collbench`);
  return d;
}
