// A real data fault: a PMPI interposer (built here with mpicc, loaded with LD_PRELOAD) corrupts one
// element of MPI_Allreduce's result on one rank. The row must show #wrong > 0, the `# first wrong`
// line must name that rank and index, and the run must exit 7.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { footer, parseRows, runMpirun } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

describe('a PMPI interposer corrupting MPI_Allreduce on one rank', () => {
  let lib = '';
  before(() => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-fault-'));
    lib = buildFault('corrupt_allreduce', dir);
  });

  it('is caught: #wrong > 0, first wrong names the rank, exit 7', () => {
    const env = { CORRUPT_RANK: '2', CORRUPT_INDEX: '5' };
    const r = runMpirun(3, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-n', '3', '-d', 'float'], {
      mpirunExtra: ['-x', `LD_PRELOAD=${lib}`, '-x', 'CORRUPT_RANK', '-x', 'CORRUPT_INDEX'],
      env,
    });
    assert.equal(r.code, 7, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    const rows = parseRows(r.stdout);
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.equal(row.oop.wrong, 1, row.line);
      assert.equal(row.ip.wrong, 1, row.line);
    }
    const firstWrong = r.stdout.split('\n').filter((l) => l.startsWith('# first wrong:'));
    assert.equal(firstWrong.length, 6, r.stdout); // one per wrong half
    for (const l of firstWrong) assert.match(l, /^# first wrong: rank 2 index 5 expected \S.* got \S/);
    const f = footer(r.stdout);
    assert.equal(f.outOfBounds, 6);
    assert.equal(f.oobVerdict, 'FAILED');
  });

  it('leaves an uncorrupted run clean (the same command without the fault exits 0)', () => {
    const r = runMpirun(3, 'all_reduce_perf', ['-b', '1K', '-e', '4K', '-f', '2', '-n', '3', '-d', 'float']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});
