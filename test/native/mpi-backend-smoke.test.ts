// The MPI backend class without Node: native/test/mpi_backend_smoke.cc under mpirun at 1–4 ranks
// (every collective, in-place and out-of-place, hand-built segments, error paths).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { mpirunArgs, repoRoot } from '../helpers/cli.js';

describe('MPI backend smoke test (C++)', () => {
  for (const np of [1, 2, 3, 4]) {
    it(`${np} ranks`, () => {
      const r = spawnSync('mpirun', [...mpirunArgs(np), join(repoRoot, 'build/Release/mpi_backend_smoke')], {
        encoding: 'utf8',
        timeout: 300_000,
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`${np} ranks: \\d+ checks, 0 failures`));
    });
  }
});
