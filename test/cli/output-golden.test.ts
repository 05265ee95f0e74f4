// Golden tests of whole real runs (MPI backend, 2 ranks): preamble, header, rows and footer must match
// the fixtures byte for byte once the measured cells, pids, host names and CPU model are masked.
// The row/column formats themselves are pinned against C printf output in test/unit/nccl-table.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { maskTimes } from '../../bench/report/reporters/nccl-table.js';
import { repoRoot, runMpirun } from '../helpers/cli.js';

export function maskRun(stdout: string): string {
  return maskTimes(stdout)
    .replace(/^(# collbench version )\S+( backend mpi \(Open MPI )[\d.]+\)$/m, '$1VERSION$2X.Y.Z)')
    .replace(/^(#  Rank +\d+ Group +\d+) Pid +\d+ on +\S+ (device cpu \[[^\]]*\]) .*$/gm, '$1 Pid PID on HOST $2 CPU');
}

const cases: [string, string, string[]][] = [
  ['all_reduce 2 ranks', 'e2e-all-reduce-np2.txt', ['all_reduce_perf', '-b', '8', '-e', '32', '-f', '2']],
  [
    'alltoall 2 ranks, in-place N/A',
    'e2e-alltoall-np2.txt',
    ['alltoall_perf', '-b', '1K', '-e', '4K', '-f', '4', '-d', 'int32'],
  ],
  [
    'broadcast all roots, -I 1',
    'e2e-broadcast-roots-periter.txt',
    ['broadcast_perf', '-b', '64', '-e', '64', '-r', '-1', '-I', '1'],
  ],
];

describe('whole-run output matches the golden files', () => {
  for (const [name, fixture, [program, ...args]] of cases) {
    it(name, () => {
      const r = runMpirun(2, program, args);
      assert.equal(r.code, 0, r.stderr);
      const expected = readFileSync(join(repoRoot, 'test/fixtures/golden', fixture), 'utf8');
      assert.equal(maskRun(r.stdout), expected);
    });
  }
});
