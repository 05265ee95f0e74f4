// Real multi-rank Gloo runs through collbench's own --np launcher (no MPI): every collective × every
// datatype × every op × all roots, at 2, 3 and 4 ranks, out-of-place and in-place; every checked
// half must report #wrong 0. The Gloo counterpart of mpi-collectives.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLLECTIVES } from '../../bench/core/types.js';
import { footer, parseRows, runProgram } from '../helpers/cli.js';

const SIZES = ['-b', '8', '-e', '128K', '-f', '16384']; // 8 B (zero-count chunks) and 128 KiB (several segments)
const SIZE_COUNT = 2;
const REDUCING = new Set(['all_reduce', 'reduce_scatter', 'reduce']);
const ROOTED = new Set(['broadcast', 'reduce', 'gather', 'scatter']);
const IN_PLACE_NA = new Set(['alltoall', 'alltoallv', 'sendrecv']);

describe('every collective on Gloo, all datatypes, ops and roots', () => {
  for (const np of [2, 3, 4]) {
    for (const coll of COLLECTIVES) {
      it(`${coll} at ${np} ranks`, () => {
        const loopsOps = REDUCING.has(coll) || coll === 'sendrecv';
        const args = ['--backend', 'gloo', '--np', String(np), ...SIZES, '-n', '1', '-w', '0', '-d', 'all', '-r', '-1'];
        if (loopsOps) args.push('-o', 'all');
        // gloo::float16 drops some stores (tested separately in gloo-defects): reduce half with
        // collbench's arithmetic here, as the MPI matrix avoids Open MPI's op/avx.
        const r = runProgram(`${coll}_perf`, args, { timeoutMs: 300_000, env: { COLLBENCH_GLOO_FLOAT16: 'collbench' } });
        if (coll === 'hypercube' && (np & (np - 1)) !== 0) {
          assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
          assert.match(r.stdout, new RegExp(`nRanks ${np} is not a power of 2, skipping`));
          assert.equal(parseRows(r.stdout).length, 0);
          return;
        }
        assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
        assert.match(r.stdout, /^# collbench version \S+ backend gloo \(Gloo \d+\.\d+\.\d+\)$/m);
        assert.equal((r.stdout.match(/^#  Rank +\d+ Group/gm) ?? []).length, np, 'one rank line per rank');
        const rows = parseRows(r.stdout);
        const cases = 12 * (loopsOps ? 6 : 1) * (ROOTED.has(coll) ? np : 1);
        assert.equal(rows.length, cases * SIZE_COUNT, r.stdout);
        for (const row of rows) {
          assert.equal(row.oop.wrong, 0, row.line);
          if (IN_PLACE_NA.has(coll)) assert.equal(row.ip.wrong, null, row.line);
          else assert.equal(row.ip.wrong, 0, row.line);
          assert.ok(row.oop.time > 0 && row.ip.time > 0, row.line);
        }
        if (ROOTED.has(coll)) assert.deepEqual([...new Set(rows.map((x) => x.root))].sort(), [...Array(np).keys()]);
        assert.equal(footer(r.stdout).outOfBounds, 0);
      });
    }
  }
});
