// What a library refuses under -d all / -o all (issue 28): the pairs it refuses are found by a 1-element probe after
// bring-up, named in one `#` line with the library, and skipped; the rest runs and the run exits 0. Open MPI 4.1 and
// Gloo refuse none of collbench's pairs (its own user ops and reduction functions cover half, bfloat16 and fp8), so
// the refusal is a real one made by a PMPI interposer (test/fixtures/faults/refuse_op.c: MPI_ERR_OP for MPI_DOUBLE
// with MPI_PROD, as an MPI library lacking that op answers). A pair named explicitly still fails, with one line per
// rank whose error site is relative to the source tree.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { footer, parseRows, runMpirun, runProgram, type CliResult } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';
import { DTYPES, OPS } from '../../bench/core/types.js';

// Open MPI's op/avx computes int8/uint8 sum, avg and mulsum wrongly (library-defects.test.ts), and collbench skips
// those pairs under -d all / -o all with a line of their own: these tests exclude op/avx, as its fix does, so that the
// refusal is the only thing they see.
const CORRECT_OPS = { OMPI_MCA_op: '^avx' };

const SKIP_LINE = /^# Skipped 1 datatype x op pair that Open MPI \d+\.\d+\.\d+ refuses \(MPI_ERR_OP\): double prod$/m;

function allCorrect(r: CliResult, rows: number, what: string): void {
  assert.equal(r.code, 0, `${what}\n${r.stderr}\n${r.stdout.slice(-2000)}`);
  const parsed = parseRows(r.stdout);
  assert.equal(parsed.length, rows, what);
  for (const row of parsed) assert.ok(row.oop.wrong === 0 && (row.ip.wrong === 0 || row.ip.wrong === null), row.line);
  assert.equal(footer(r.stdout).outOfBounds, 0);
}

describe('-d all -o all over a library that refuses a pair (PMPI interposer: MPI_ERR_OP for double prod)', () => {
  let lib = '';
  before(() => {
    lib = buildFault('refuse_op', mkdtempSync(join(tmpdir(), 'collbench-refuse-')));
  });
  const refusing = () => ({
    mpirunExtra: ['-x', `LD_PRELOAD=${lib}`, '-x', 'REFUSE_TYPE', '-x', 'REFUSE_OP'],
    env: { REFUSE_TYPE: 'MPI_DOUBLE', REFUSE_OP: 'MPI_PROD', ...CORRECT_OPS },
  });

  for (const coll of ['all_reduce', 'reduce', 'reduce_scatter']) {
    it(`${coll}, 2 ranks: the pair is named once and skipped, the other 71 run correctly, exit 0`, () => {
      const r = runMpirun(
        2,
        `${coll}_perf`,
        ['-b', '8', '-e', '64', '-d', 'all', '-o', 'all', '-n', '2', '-w', '1'],
        refusing(),
      );
      allCorrect(r, DTYPES.length * OPS.length - 1, coll);
      assert.equal(r.stdout.match(new RegExp(SKIP_LINE.source, 'gm'))?.length, 1, r.stdout.slice(0, 2000));
      assert.ok(parseRows(r.stdout).every((row) => !(row.type === 'double' && row.redop === 'prod')));
      assert.equal(r.stderr, '');
    });
  }

  it('-d all with one op named: the datatypes come from all, so the refused one is skipped', () => {
    const r = runMpirun(
      2,
      'all_reduce_perf',
      ['-b', '8', '-e', '8', '-d', 'all', '-o', 'prod', '-n', '1', '-w', '0'],
      refusing(),
    );
    allCorrect(r, DTYPES.length - 1, '-d all -o prod');
    assert.match(r.stdout, SKIP_LINE);
  });

  it('the pair named explicitly (-d double -o prod): one line per rank naming the call and a relative site, exit 3', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '8', '-e', '8', '-d', 'double', '-o', 'prod'], refusing());
    assert.notEqual(r.code, 0, r.stdout);
    const ours = r.stderr.split('\n').filter((l) => / failure /.test(l));
    assert.equal(ours.length, 2, r.stderr);
    for (const l of ours) {
      assert.match(
        l,
        /^rank [01] on host \S+: mpi failure MPI_ERR_OP at native\/src\/backends\/mpi\/mpi_collectives\.cc:\d+ MPI_Allreduce: MPI_ERR_OP: /,
      );
    }
    assert.doesNotMatch(r.stderr, /\/native\/src\//, 'no build-machine path');
    assert.match(r.stderr, /exit code:\s+3|Exit code:\s+3/, 'the ranks exit 3, as for any library error');
  });
});

describe('-d all -o all where nothing is refused: no # line, every pair runs', () => {
  for (const backend of ['mpi', 'gloo']) {
    it(`${backend}: 72 cases, no skip line, exit 0`, () => {
      const r = runProgram(
        'all_reduce_perf',
        ['--backend', backend, '-b', '8', '-e', '8', '-d', 'all', '-o', 'all', '-n', '1', '-w', '0'],
        { env: CORRECT_OPS },
      );
      allCorrect(r, DTYPES.length * OPS.length, backend);
      assert.doesNotMatch(r.stdout, /^# Skipped/m);
    });
  }
});
