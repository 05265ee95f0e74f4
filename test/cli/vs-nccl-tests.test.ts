// The collbench-vs-nccl-tests runner as the GPU machine runs it (compiled dist/bin/vs-nccl-tests.js under plain node, no
// tsx), here without a GPU: an A/A smoke run with the mpi backend standing in for NCCL and collbench's own *_perf
// standing in for nccl-tests (both print the same table), and bad input (one stderr line, exit 2).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const RUNNER = join(ROOT, 'dist', 'bin', 'vs-nccl-tests.js');
const run = (args: string[]) => spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', timeout: 120_000 });

describe('vs-nccl-tests', () => {
  it('A/A on the mpi backend: every mode of every size judged, interleaved rounds, exit 0', () => {
    const r = run([
      '--nccl-tests',
      join(ROOT, 'bin'),
      '--backend',
      'mpi',
      '--colls',
      'all_reduce',
      '--rounds',
      '2',
      '--max-bytes',
      '16',
      '--goal-ratio',
      '10',
      '--goal-us',
      '1',
    ]);
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /2 interleaved round\(s\)/);
    for (const mode of ['sweep oop', 'sweep ip', 'I1 oop', 'I1 ip', 'C1 oop', 'C1 ip']) {
      for (const size of [8, 16])
        assert.match(r.stdout, new RegExp(`^all_reduce +${mode} +${size} .* ok$`, 'm'), r.stdout);
    }
    assert.match(r.stdout, /^all_reduce +zero oop +0 /m);
    assert.match(r.stdout, /met at 14\/14 sizes over 2 round\(s\)/);
  });

  it('bad input: one line naming it, exit 2', () => {
    const r = run(['--nccl-tests', '/nonexistent/build']);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^vs-nccl-tests: --nccl-tests: \/nonexistent\/build\/all_reduce_perf does not exist\n$/);
  });
});
