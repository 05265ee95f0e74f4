// Real library defects that collbench's check must expose, not hide. Open MPI 4.1's op/avx component
// saturates int8/uint8 MPI_SUM instead of wrapping (open-mpi/ompi#8045). The MPI backend probes for it
// at init; the probe's verdict and the check's verdict must agree.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { footer, parseRows, runMpirun } from '../helpers/cli.js';

describe('int8/uint8 sums on this MPI library', () => {
  for (const dtype of ['int8', 'uint8']) {
    it(`${dtype} all_reduce sum at 2 ranks: warned, wrong and exit 7 exactly when the library saturates`, () => {
      const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-d', dtype], { env: { OMPI_MCA_op: '' } });
      const warned = /# Warning: this MPI library saturates int8\/uint8 MPI_SUM/.test(r.stdout);
      const rows = parseRows(r.stdout);
      assert.equal(rows.length, 3, r.stdout + r.stderr);
      if (warned) {
        assert.equal(r.code, 7, r.stderr);
        assert.ok(rows.every((row) => (row.oop.wrong ?? 0) > 0), r.stdout);
        assert.match(r.stdout, /^# first wrong: rank \d index \d+ expected -?\d+ \(0x[0-9a-f]+\) got -?\d+ \(0x[0-9a-f]+\)$/m);
        assert.equal(footer(r.stdout).oobVerdict, 'FAILED');
      } else {
        assert.equal(r.code, 0, r.stderr);
        assert.equal(footer(r.stdout).outOfBounds, 0);
      }
    });
  }
  it('the same runs are correct with the op/avx component excluded', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-d', 'uint8'], { env: { OMPI_MCA_op: '^avx' } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});
