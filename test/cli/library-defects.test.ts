// Real library defects that collbench's check must expose, not hide. Open MPI 4.1's op/avx component
// saturates int8/uint8 MPI_SUM instead of wrapping (open-mpi/ompi#8045). The MPI backend probes for it
// at init; the probe's verdict and the check's verdict must agree.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { footer, parseRows, runMpirun } from '../helpers/cli.js';

describe('int8/uint8 sums on this MPI library', () => {
  for (const dtype of ['int8', 'uint8']) {
    it(`${dtype} all_reduce sum at 2 ranks: warned, wrong and exit 7 exactly when the library saturates`, () => {
      const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-d', dtype], {
        env: { OMPI_MCA_op: '' },
      });
      const warned = /# Warning: this MPI library saturates int8\/uint8 MPI_SUM/.test(r.stdout);
      const rows = parseRows(r.stdout);
      assert.equal(rows.length, 3, r.stdout + r.stderr);
      if (warned) {
        assert.equal(r.code, 7, r.stderr);
        assert.ok(
          rows.every((row) => (row.oop.wrong ?? 0) > 0),
          r.stdout,
        );
        assert.match(
          r.stdout,
          /^# first wrong: rank \d index \d+ expected -?\d+ \(0x[0-9a-f]+\) got -?\d+ \(0x[0-9a-f]+\)$/m,
        );
        assert.equal(footer(r.stdout).oobVerdict, 'FAILED');
      } else {
        assert.equal(r.code, 0, r.stderr);
        assert.equal(footer(r.stdout).outOfBounds, 0);
      }
    });
  }
  it('-d all -o all: the pairs the library computes wrongly are skipped with one # line, exit 0 when the rest is right', () => {
    const r = runMpirun(
      2,
      'reduce_scatter_perf',
      ['-b', '1K', '-e', '4K', '-f', '4', '-d', 'all', '-o', 'all', '-n', '2'],
      { env: { OMPI_MCA_op: '' } },
    );
    const probe = runMpirun(2, 'all_reduce_perf', ['-b', '8', '-e', '8', '-d', 'int8'], { env: { OMPI_MCA_op: '' } });
    const saturates = /# Warning: this MPI library saturates/.test(probe.stdout);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
    assert.doesNotMatch(r.stdout, /# Warning: this MPI library saturates/);
    const skipped = r.stdout.match(/^# Skipped .*$/gm) ?? [];
    if (saturates) {
      assert.deepEqual(skipped, [
        '# Skipped 6 datatype x op pairs that Open MPI 4.1.4 computes wrongly (int8/uint8 MPI_SUM saturates ' +
          'instead of wrapping: Open MPI op/avx, open-mpi/ompi#8045; OMPI_MCA_op=^avx runs them right): int8 sum, int8 avg, int8 mulsum, ' +
          'uint8 sum, uint8 avg, uint8 mulsum'.replace('Open MPI 4.1.4', /Open MPI [\d.]+/.exec(r.stdout)?.[0] ?? ''),
      ]);
      const ran = new Set(parseRows(r.stdout).map((row) => `${row.type} ${row.redop}`));
      for (const gone of ['int8 sum', 'int8 avg', 'int8 mulsum', 'uint8 sum', 'uint8 avg', 'uint8 mulsum'])
        assert.ok(!ran.has(gone), gone);
      assert.ok(ran.has('int8 prod') && ran.has('uint8 max') && ran.has('float sum'), [...ran].join(', '));
    } else {
      assert.deepEqual(skipped, []);
    }
  });
  it('the same runs are correct with the op/avx component excluded', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-d', 'uint8'], {
      env: { OMPI_MCA_op: '^avx' },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});
