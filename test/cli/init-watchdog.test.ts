// MPI_Init under the watchdog: one rank is held in MPI_Init_thread by a PMPI interposer (a real start-up hang:
// the other ranks wait for it in MPI_Init's exchange). With -T 3 (or the default watchdog's floor at 3 s) every rank
// gives up after 3 s with one "Test timeout (3s) in MPI_Init" line per rank, the job exits 4 and no process of it is
// left; the preamble states the limit in effect.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runMpirun, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const dir = mkdtempSync(join(tmpdir(), 'cbh-initdog-'));
let lib = '';
before(() => {
  lib = buildFault('slow_init', dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('MPI_Init under the watchdog', () => {
  // -T 3, or the default watchdog with its floor at 3 s: the limit MPI_Init's native alarm gets is the run watchdog's
  // (engine/bring-up.ts hands it to the driver), whichever sets it.
  for (const [how, extra, env] of [
    ['-T 3', ['-T', '3'], {}],
    ['COLLBENCH_WATCHDOG_MIN_S=3, no -T', [], { COLLBENCH_WATCHDOG_MIN_S: '3' }],
  ] as const) {
    it(`a rank stuck before MPI_Init completes: exit 4 after ${how}, one timeout line, no process left`, () => {
      const json = join(dir, `r-${extra.length}.json`); // also tags the job's processes for the leftover check
      const t0 = Date.now();
      const r = runMpirun(3, 'all_reduce_perf', ['-b', '8', '-e', '8', ...extra, '-J', json], {
        mpirunExtra: [
          '-x',
          `LD_PRELOAD=${lib}`,
          '-x',
          'SLOW_INIT_RANK',
          '-x',
          'SLOW_INIT_SECONDS',
          ...Object.keys(env).flatMap((k) => ['-x', k]),
        ],
        env: { SLOW_INIT_RANK: '1', SLOW_INIT_SECONDS: '120', ...env },
        timeoutMs: 60_000,
      });
      const seconds = (Date.now() - t0) / 1000;
      assert.equal(r.signal, null, `killed by the test's own timeout after ${seconds} s:\n${r.stderr}`);
      assert.equal(r.code, 4, r.stderr);
      // 3 s from MPI_Init, + 5 s, + the start of node and mpirun before it
      assert.ok(seconds < 3 + 5 + 5, `took ${seconds} s`);
      assert.match(
        r.stderr,
        /^\S+: Test timeout \(3s\) in MPI_Init or the communicator set-up after it: the job's other processes or its launcher did not answer/m,
      );
      assert.doesNotMatch(r.stderr, /internal error|Error:/);
      const left = spawnSync('pgrep', ['-af', dir], { encoding: 'utf8' }).stdout.trim();
      assert.equal(left, '', `processes left:\n${left}`);
    });
  }

  it('the preamble states the watchdog in effect as a comment line', () => {
    const dflt = runProgram('all_reduce_perf', ['--backend', 'mpi', '-b', '8', '-e', '8', '-n', '1']);
    assert.equal(dflt.code, 0, dflt.stderr);
    assert.match(
      dflt.stdout,
      /^# Watchdog: 120 s per wait \(default; 10 x the expected time of a longer one; -T N sets it, -T 0 disables it\)$/m,
    );
    const t = runProgram('all_reduce_perf', ['--backend', 'mpi', '-b', '8', '-e', '8', '-n', '1', '-T', '7']);
    assert.match(t.stdout, /^# Watchdog: 7 s per wait \(-T 7\)$/m);
    const off = runProgram('all_reduce_perf', ['--backend', 'gloo', '-b', '8', '-e', '8', '-n', '1', '-T', '0']);
    assert.match(off.stdout, /^# Watchdog: off \(-T 0\)$/m);
  });
});
