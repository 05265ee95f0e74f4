// A child process for test/native/executor.test.ts: drives collbench_mpi.node's asynchronous calls (a one-rank MPI
// singleton) the way the run loop does, many queued ahead, and prints what happened as one JSON line per scenario, so
// that the test can check the order, the cancellations and that the process ends (a hang is the child's timeout).
// Usage: node --import tsx test/helpers/executor-child.ts SCENARIO
import { COLL_ID, DTYPE_ID, OP_ID, type HalfSpec } from '../../bench/core/types.js';
import { COMBINE, type NativeBackend } from '../../bench/native/binding.js';
import { requireNativeModule } from '../../bench/native/loader.js';

const BYTES = 1 << 20;

function spec(count: number, iters: number): HalfSpec {
  return {
    coll: COLL_ID.all_reduce,
    dtype: DTYPE_ID.float,
    op: OP_ID.sum,
    root: 0,
    inPlace: false,
    count,
    sendOffset: 0,
    recvOffset: 0,
    rotateBytes: 0,
    maxBytes: BYTES,
    fill: [],
    expect: [],
    iters,
    aggIters: 1,
    blocking: 0,
    perIter: false,
    checkRounds: 0,
    checkSeed: 0,
    average: 1,
    unalignElems: 0,
  };
}

/** What became of a call: its place in the order of settling, and its error code if it failed. */
interface Outcome {
  settled: number;
  code: string | null;
}

function track(p: Promise<unknown>, order: { n: number }): Promise<Outcome> {
  return p.then(
    () => ({ settled: order.n++, code: null }),
    (e: { code?: string }) => ({ settled: order.n++, code: e.code ?? 'ERROR' }),
  );
}

/** Spins until the first queued timed loop is issuing its iterations (it is then in progress, not queued). */
function awaitLoopStart(): void {
  const until = Date.now() + 10_000;
  while (native.loopIteration() < 0 && Date.now() < until) {
    /* spin: the loop starts within milliseconds */
  }
}

const native = requireNativeModule<NativeBackend>('mpi');
void native.init(); // mpi: synchronous
native.allocate(BYTES, BYTES);
const scenario = process.argv[2];
const order = { n: 0 };

if (scenario === 'order') {
  // Row-halves, barriers and combines queued at once settle in the order they were queued, all successfully.
  const calls: Promise<Outcome>[] = [];
  calls.push(track(native.runHalf(spec(BYTES / 4, 20_000)), order)); // ~0.5 s: the thread is busy below
  for (let i = 0; i < 40; i++) {
    calls.push(track(native.runHalf(spec(1 + ((i * 997) % 4096), 1 + (i % 7) * 50)), order));
    if (i % 10 === 0) calls.push(track(native.barrierAsync(), order));
    if (i % 13 === 0) calls.push(track(native.allreduceAsync([i], COMBINE.sum), order));
  }
  // The synchronous calls that use the backend are refused meanwhile.
  const busy = [
    () => native.allocate(BYTES, BYTES),
    () => native.barrier(),
    () => native.allreduce([1], COMBINE.sum),
    () => native.gatherStrings('x'),
  ].map((call) => {
    try {
      call();
      return 'ran';
    } catch (e) {
      return (e as { code: string }).code;
    }
  });
  const out = await Promise.all(calls);
  console.log(JSON.stringify({ settled: out.map((o) => o.settled), codes: out.map((o) => o.code), busy }));
  native.finalize();
} else if (scenario === 'failure') {
  // A failed call cancels those queued behind it; a call made afterwards runs.
  const calls: Promise<Outcome>[] = [];
  calls.push(track(native.runHalf(spec(16, 10)), order));
  calls.push(track(native.runHalf([spec(16, 10), spec(16, 10)]), order)); // two specs for one local rank: CORE_BAD_SPEC
  calls.push(track(native.runHalf(spec(16, 10)), order));
  calls.push(track(native.barrierAsync(), order));
  const out = await Promise.all(calls);
  const after = await track(native.runHalf(spec(16, 10)), order);
  console.log(JSON.stringify({ codes: out.map((o) => o.code), after: after.code }));
  native.finalize();
} else if (scenario === 'cancel') {
  // cancelPending() rejects what has not started; the call in progress runs to its end.
  const calls = Array.from({ length: 6 }, () => track(native.runHalf(spec(BYTES / 4, 400)), order));
  awaitLoopStart();
  const cancelled = native.cancelPending();
  const out = await Promise.all(calls);
  console.log(JSON.stringify({ cancelled, codes: out.map((o) => o.code) }));
  native.finalize();
} else if (scenario === 'finalize') {
  // finalize() with calls queued: those not started are cancelled, the one in progress ends first, then MPI ends.
  const calls = Array.from({ length: 6 }, () => track(native.runHalf(spec(BYTES / 4, 400)), order));
  awaitLoopStart();
  native.finalize();
  const out = await Promise.all(calls);
  console.log(JSON.stringify({ codes: out.map((o) => o.code) }));
} else if (scenario === 'exit') {
  // process.exit() while a call runs and more are queued: the process ends once that call is done (its buffers are
  // freed by static destructors), without starting the others.
  // (Were one of the queued ones started, exit() would wait 5 s for it, then free its buffers under it: a crash.)
  void native.runHalf(spec(BYTES / 4, 20_000)).catch(() => undefined);
  for (let i = 0; i < 3; i++) void native.runHalf(spec(BYTES / 4, 5_000_000)).catch(() => undefined);
  setTimeout(() => {
    console.log(JSON.stringify({ exiting: true }));
    process.exit(0);
  }, 200);
} else if (scenario === 'batch') {
  // Results are handed over in batches: 20 short calls (~3 ms each) queued ahead of a long one (~1 s) settle together,
  // and while the long one still runs (the first waited the hold time, set to 250 ms here: the shorts take 60-210 ms
  // on the 2-core machines here, all within one hold time), not when it ends.
  const refused = [0, 0.5, 60001, Number.NaN, '100'].map((ms) => {
    try {
      native.setResultHoldMs(ms as number);
      return 'set';
    } catch (e) {
      return (e as Error).name;
    }
  });
  native.setResultHoldMs(250);
  const t0 = performance.now();
  const at = (p: Promise<unknown>): Promise<number> => p.then(() => performance.now() - t0);
  const shorts = Array.from({ length: 20 }, () => at(native.runHalf(spec(BYTES / 4, 150))));
  const long = at(native.runHalf(spec(BYTES / 4, 50_000)));
  const shortMs = await Promise.all(shorts);
  const longMs = await long;
  console.log(
    JSON.stringify({ shortFirstMs: Math.min(...shortMs), shortLastMs: Math.max(...shortMs), longMs, refused }),
  );
  native.finalize();
} else if (scenario === 'pause') {
  // Calls made while paused wait, queued, until resumeQueue(), and start once JavaScript's turn is over (they would
  // otherwise share a CPU with its rest), then run and settle in order; cancelPending() still cancels calls waiting
  // in a paused queue, and calls made after resume run.
  native.pauseQueue();
  const calls = Array.from({ length: 3 }, () => track(native.runHalf(spec(4096, 200)), order));
  let startedWhilePaused = false;
  for (const until = Date.now() + 300; Date.now() < until;) if (native.loopIteration() >= 0) startedWhilePaused = true;
  native.resumeQueue();
  let startedInTurn = false;
  for (const until = Date.now() + 200; Date.now() < until;) if (native.loopIteration() >= 0) startedInTurn = true;
  const out = await Promise.all(calls);
  native.pauseQueue();
  const waiting = Array.from({ length: 2 }, () => track(native.runHalf(spec(16, 10)), order));
  const cancelled = native.cancelPending();
  native.resumeQueue();
  const waited = await Promise.all(waiting);
  const after = await track(native.runHalf(spec(16, 10)), order);
  console.log(
    JSON.stringify({
      startedWhilePaused,
      startedInTurn,
      settled: out.map((o) => o.settled),
      codes: out.map((o) => o.code),
      cancelled,
      cancelledCodes: waited.map((o) => o.code),
      after: after.code,
    }),
  );
  native.finalize();
} else if (scenario === 'drain') {
  // Nothing awaited: the queued calls keep the process alive until they are done, then it ends by itself.
  let done = 0;
  for (let i = 0; i < 5; i++)
    void native.runHalf(spec(4096, 2000)).then(() => {
      done++;
    });
  process.on('beforeExit', () => {
    if (done === 5 && order.n === 0) {
      order.n = 1;
      console.log(JSON.stringify({ done }));
      native.finalize();
    }
  });
} else {
  console.error(`unknown scenario ${scenario}`);
  process.exitCode = 2;
}
