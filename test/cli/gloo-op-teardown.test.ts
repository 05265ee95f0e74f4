// Gloo's tcp::UnboundBuffer destructor spins on sched_yield until Gloo's device thread lets go of the buffer that
// completed an op; destroyed as each call returned, that cost up to a scheduler tick per op (issue #42). collbench
// keeps each call's options a few calls longer (native/src/backends/gloo/kept_options.h). Counted, not timed:
// sched_yield calls of a 2-rank Gloo run under strace (per-op destruction: about one per two ops here; kept: none).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir } from '../helpers/cli.js';

// strace installed and allowed to trace (a container may forbid ptrace).
const haveStrace = spawnSync('strace', ['-f', '-c', '-o', '/dev/null', 'true'], { encoding: 'utf8' }).status === 0;

/** sched_yield calls of every process of one collbench run (strace -f -c), and the run's stdout. */
function countYields(program: string, args: string[]): { calls: number; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cb-teardown-'));
  try {
    const summary = join(dir, 'strace.txt');
    const r = spawnSync(
      'strace',
      ['-f', '-c', '-e', 'trace=sched_yield', '-o', summary, join(binDir, program), ...args],
      { encoding: 'utf8', timeout: 240_000 },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const row = readFileSync(summary, 'utf8')
      .split('\n')
      .find((l) => /\bsched_yield\s*$/.test(l));
    return { calls: row ? Number(row.trim().split(/\s+/)[3]) : 0, stdout: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe(
  "Gloo ops do not wait in Gloo's buffer teardown",
  { skip: haveStrace ? false : 'no strace, or ptrace not allowed' },
  () => {
    for (const program of ['all_reduce_perf', 'broadcast_perf', 'sendrecv_perf']) {
      const size = '1K';
      it(`${program} ${size}, 2 ranks, 100 iterations: no sched_yield`, () => {
        const iters = 100;
        const { calls, stdout } = countYields(program, [
          '--backend',
          'gloo',
          '--np',
          '2',
          '-b',
          size,
          '-e',
          size,
          '-n',
          String(iters),
          '-w',
          '5',
          '-c',
          '1',
        ]);
        assert.match(stdout, /^\s+1024\s/m, stdout);
        // 2 × (100 timed + 1 untimed) ops and the warm-up per rank: per-op teardown made about 100 calls here.
        assert.ok(
          calls <= 4,
          `${calls} sched_yield calls (Gloo's ~ShareableNonOwningPtr wait) in ${2 * (iters + 1)} ops`,
        );
      });
    }
  },
);
