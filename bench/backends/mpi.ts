// The mpi backend's driver: a singleton MPI world for a plain process (launch/launcher.ts), an srun task
// without PMIx refused before MPI_Init aborts it (launch/slurm.ts), the GPU-only flags refused, and the
// preamble warning for Open MPI's saturating int8/uint8 MPI_SUM (open-mpi/ompi#8045).
import { BackendUnavailableError } from '../core/errors.js';
import { prepareSingletonMpi } from '../launch/launcher.js';
import { slurmMpiRefusal } from '../launch/slurm.js';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import type { CasePair } from '../config/cases.js';
import type { CollectiveName } from '../core/types.js';
import type { BackendInfo } from '../native/binding.js';
import type { BackendDriver } from './driver.js';
import { cpuMemoryAdjust, cpuRankLine, refuseGpuOnlyFlags } from './cpu.js';

const INT_MAX = 2 ** 31 - 1;
/** The element-wise collectives whose counts above INT_MAX the native side splits into <= INT_MAX pieces
 *  (native/src/backends/mpi/mpi_collectives.cc, forPieces): the timed op is then several MPI calls. */
const MPI_SPLIT: readonly CollectiveName[] = ['all_reduce', 'broadcast', 'reduce', 'sendrecv'];

/** Whether `pair` meets the library's saturating int8/uint8 MPI_SUM (probed at init: BackendInfo.smallIntSumSaturates):
 *  sum, and avg and mulsum which collbench computes through it, of a reducing collective. */
function saturatedSum(pair: CasePair, desc: CollectiveDescriptor, info: BackendInfo): boolean {
  return (
    info.smallIntSumSaturates === true &&
    desc.reduces &&
    (pair.dtype === 'int8' || pair.dtype === 'uint8') &&
    (pair.op === 'sum' || pair.op === 'avg' || pair.op === 'mulsum')
  );
}

export function createMpiDriver(env: NodeJS.ProcessEnv = process.env): BackendDriver {
  return {
    prepare: () => {
      const refusal = slurmMpiRefusal(env);
      if (refusal !== null) throw new BackendUnavailableError(refusal);
      prepareSingletonMpi(); // the process environment itself: MPI_Init reads it
    },
    // MPI_Init under the watchdog too (native alarm: the JS thread is blocked in it): -T, else the default floor.
    init: async (native, _options, limitSec) => native.init({ initTimeoutSec: limitSec }),
    validate: (options) => refuseGpuOnlyFlags(options, 'mpi'),
    adjust: cpuMemoryAdjust,
    rankLine: cpuRankLine,
    warnings(options, desc, info, cases) {
      const pairs = cases ?? options.dtypes.flatMap((dtype) => options.ops.map((op) => ({ dtype, op })));
      const met = pairs.some((pair) => saturatedSum(pair, desc, info));
      return met
        ? [
            '# Warning: this MPI library saturates int8/uint8 MPI_SUM instead of wrapping (Open MPI op/avx, ' +
              'open-mpi/ompi#8045): expect #wrong > 0 for int8/uint8 sum, avg and mulsum; OMPI_MCA_op=^avx avoids that component',
          ]
        : [];
    },
    knownWrong: (pair, desc, info) =>
      saturatedSum(pair, desc, info)
        ? 'int8/uint8 MPI_SUM saturates instead of wrapping: Open MPI op/avx, open-mpi/ompi#8045; OMPI_MCA_op=^avx runs them right'
        : null,
    perIterTimer: 'host clock timing',
    // The classes an MPI library answers an op or datatype it lacks with (MPI error classes). Open MPI 4.1 refuses none
    // of collbench's pairs: half, bfloat16 and fp8 go through collbench's own user ops (mpi_types.cc).
    refusals: ['MPI_ERR_OP', 'MPI_ERR_TYPE', 'MPI_ERR_UNSUPPORTED_OPERATION'],
    maxCount: (collective) =>
      MPI_SPLIT.includes(collective)
        ? null
        : {
            max: INT_MAX,
            why: `MPI counts are int and Open MPI 4.1 has no big-count (MPI_*_c) calls; collbench splits only ${MPI_SPLIT.join(', ')} into smaller calls`,
          },
  };
}
