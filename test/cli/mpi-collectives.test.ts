// Real multi-rank runs through mpirun: every collective × every datatype × every op × all roots, at
// 1, 2, 3 and 4 ranks, out-of-place and in-place; every checked half must report #wrong 0.
import { describe, it } from 'node:test';
import { COLLECTIVES } from '../../bench/core/types.js';
import { runMpirun } from '../helpers/cli.js';
import { assertCleanMatrixRun, matrixArgs } from '../helpers/matrix.js';

const SIZES = ['-b', '64', '-e', '64K', '-f', '32']; // 64 B, 2 KiB, 64 KiB

describe('every collective on OpenMPI, all datatypes, ops and roots', () => {
  for (const np of [1, 2, 3, 4]) {
    for (const coll of COLLECTIVES) {
      it(`${coll} at ${np} ranks`, () => {
        // op/avx of Open MPI 4.1 saturates int8/uint8 sums (tested separately in library-defects).
        const r = runMpirun(np, `${coll}_perf`, [...SIZES, '-n', '2', '-w', '1', ...matrixArgs(coll)], {
          env: { OMPI_MCA_op: '^avx' },
        });
        assertCleanMatrixRun(r, coll, np, 3);
      });
    }
  }
});
