// Real multi-rank Gloo runs through collbench's own --np launcher (no MPI): every collective × every
// datatype × every op × all roots, at 2, 3 and 4 ranks, out-of-place and in-place; every checked
// half must report #wrong 0. The Gloo counterpart of mpi-collectives.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLLECTIVES } from '../../bench/core/types.js';
import { runProgram } from '../helpers/cli.js';
import { assertCleanMatrixRun, matrixArgs } from '../helpers/matrix.js';

const SIZES = ['-b', '8', '-e', '128K', '-f', '16384']; // 8 B (zero-count chunks) and 128 KiB (several segments)

describe('every collective on Gloo, all datatypes, ops and roots', () => {
  for (const np of [2, 3, 4]) {
    for (const coll of COLLECTIVES) {
      it(`${coll} at ${np} ranks`, () => {
        // gloo::float16 drops some stores (tested separately in gloo-algorithms): reduce half with
        // collbench's arithmetic here, as the MPI matrix avoids Open MPI's op/avx.
        const r = runProgram(
          `${coll}_perf`,
          [
            '--backend',
            'gloo',
            '--np',
            String(np),
            '--oversubscribe',
            ...SIZES,
            '-n',
            '1',
            '-w',
            '0',
            ...matrixArgs(coll),
          ],
          { timeoutMs: 300_000, env: { COLLBENCH_GLOO_FLOAT16: 'collbench' } },
        );
        assertCleanMatrixRun(r, coll, np, 2);
        assert.match(r.stdout, /^# collbench version \S+ backend gloo \(Gloo \d+\.\d+\.\d+\)$/m);
      });
    }
  }
});
