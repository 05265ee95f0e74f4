// The module's one backend thread (native/src/addon/executor.h), through collbench_mpi.node in a one-rank child
// (test/helpers/executor-child.ts): calls queued ahead run and settle in submission order, synchronous calls are
// refused meanwhile; calls made while paused wait for resume and for JavaScript's turn to end; results are handed
// over in batches, within the hold time; a failure cancels what was queued behind it; cancelPending() and finalize()
// cancel what has not started and let the call in progress end; the process ends by itself, or on process.exit()
// with calls still queued (no hang, no crash).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { moduleBuilt } from '../../bench/native/loader.js';
import { repoRoot } from '../helpers/cli.js';

const built = moduleBuilt('mpi');

function child(scenario: string): {
  status: number | null;
  signal: NodeJS.Signals | null;
  out: Record<string, unknown>;
  text: string;
} {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(repoRoot, 'test', 'helpers', 'executor-child.ts'), scenario],
    {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, OMPI_MCA_ess_singleton_isolated: '1', OMPI_MCA_pml: 'ob1' },
    },
  );
  const text = `${r.stdout}${r.stderr}`;
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let out: Record<string, unknown> = {};
  try {
    out = JSON.parse(line) as Record<string, unknown>;
  } catch {
    /* asserted below */
  }
  return { status: r.status, signal: r.signal, out, text };
}

describe(
  'native executor (one backend thread per module)',
  { skip: built ? false : 'collbench_mpi.node is not built (make build)' },
  () => {
    it('runs calls queued ahead in submission order and refuses the synchronous calls meanwhile', () => {
      const r = child('order');
      assert.equal(r.status, 0, r.text);
      const settled = r.out.settled as number[];
      assert.equal(settled.length, 49, r.text);
      assert.deepEqual(
        settled,
        settled.map((_, i) => i),
        'settled in the order queued',
      );
      assert.ok(
        (r.out.codes as (string | null)[]).every((c) => c === null),
        r.text,
      );
      assert.deepEqual(r.out.busy, ['CORE_BUSY', 'CORE_BUSY', 'CORE_BUSY', 'CORE_BUSY']);
    });

    it('hands results over in batches, and within the hold time (250 ms here) while a long call runs', () => {
      const r = child('batch');
      assert.equal(r.status, 0, r.text);
      assert.deepEqual(
        r.out.refused,
        ['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError'],
        'bad hold times',
      );
      const { shortFirstMs, shortLastMs, longMs } = r.out as Record<string, number>;
      // One batch: settled in one turn of the event loop (one by one they would spread over the ~60 ms they ran).
      assert.ok(shortLastMs! - shortFirstMs! < 15, r.text);
      // Handed over by the courier while the long call ran, not with it (it takes about a second after them).
      assert.ok(shortLastMs! < longMs! - 300, r.text);
    });

    it('holds calls made while paused until resumed and JavaScript is idle (a sweep is queued, then let run)', () => {
      const r = child('pause');
      assert.equal(r.status, 0, r.text);
      assert.equal(r.out.startedWhilePaused, false, 'no timed loop started in the 300 ms paused');
      assert.equal(r.out.startedInTurn, false, 'none started in the 200 ms of JavaScript after resumeQueue()');
      assert.deepEqual(r.out.settled, [0, 1, 2], r.text);
      assert.deepEqual(r.out.codes, [null, null, null], r.text);
      assert.equal(r.out.cancelled, 2, 'cancelPending() reaches a paused queue');
      assert.deepEqual(r.out.cancelledCodes, ['CORE_CANCELLED', 'CORE_CANCELLED'], r.text);
      assert.equal(r.out.after, null, r.text);
    });

    it('cancels the calls queued behind a failed one, and runs a call made after it', () => {
      const r = child('failure');
      assert.equal(r.status, 0, r.text);
      assert.deepEqual(r.out.codes, [null, 'CORE_BAD_SPEC', 'CORE_CANCELLED', 'CORE_CANCELLED']);
      assert.equal(r.out.after, null);
    });

    it('cancelPending() cancels what has not started; the call in progress ends normally', () => {
      const r = child('cancel');
      assert.equal(r.status, 0, r.text);
      assert.equal(r.out.cancelled, 5);
      assert.deepEqual(r.out.codes, [null, ...Array<string>(5).fill('CORE_CANCELLED')]);
    });

    it('finalize() with calls queued cancels them, waits for the one in progress, then ends MPI', () => {
      const r = child('finalize');
      assert.equal(r.status, 0, r.text);
      assert.deepEqual(r.out.codes, [null, ...Array<string>(5).fill('CORE_CANCELLED')]);
    });

    it('process.exit() with a call in progress and more queued: that call ends, no other starts, a clean exit', () => {
      const r = child('exit');
      assert.equal(r.signal, null, r.text);
      assert.equal(r.status, 0, r.text);
      assert.equal(r.out.exiting, true);
    });

    it('calls nobody awaits keep the process alive until done, then it ends by itself', () => {
      const r = child('drain');
      assert.equal(r.status, 0, r.text);
      assert.equal(r.out.done, 5);
    });
  },
);
