// Typed view of a native backend module (collbench_<backend>.node), as built from
// native/src/addon/addon_common.cc (shared functions) and addon_<backend>.cc (init/finalize/abort).
import type { FirstWrong, HalfResult, HalfSpec } from '../core/types.js';

export interface BackendInfo {
  backend: string; // "mpi"
  rank: number;
  nranks: number;
  localRank: number;
  localSize: number;
  libraryVersion: string; // the library's own full version string
  libraryVersionShort: string; // e.g. "Open MPI 4.1.4"
  processorName: string;
  pid: number;
  /** mpi only: the library's MPI_SUM saturates int8/uint8 (probed at init; Open MPI op/avx bug). */
  smallIntSumSaturates?: boolean;
  /** nccl: ranks this process drives (-t × -g; default 1); rank/nranks are those of local rank 0's communicator. */
  localRanks?: number;
  /** nccl: global rank of local rank 0 in the whole job (differs from rank with NCCL_TESTS_SPLIT; default rank). */
  worldRank?: number;
}

/** How runSequence() runs: steps, untimed steps first, busy time before each op (µs, one per op), the check. */
export interface SequenceOptions {
  iters: number;
  warmupIters: number;
  gapUs?: number[];
  check: boolean;
}

/** What runSequence() measured: per-step times (max over processes; rank 0 only, empty elsewhere), the busy time
 *  actually spent per step on this process, and the check summed over the ops. */
export interface SequenceResult {
  stepUs: number[];
  gapUs: number;
  wrong: number;
  ranksWithWrong: number;
  firstWrongOp: number;
  firstWrong?: FirstWrong;
}

/** How allreduce() combines numbers; values of native Combine (spec.h). */
export const COMBINE = { rank0: 0, mean: 1, min: 2, max: 3, sum: 4 } as const;

export interface NativeBackend {
  /** mpi: synchronous, no argument; gloo: synchronous, its typed config (GlooNative); nccl: asynchronous, its typed
   *  config with the bootstrap (NcclNative). The drivers of gloo and nccl call it (BackendDriver.init). */
  init(config?: object): BackendInfo | Promise<BackendInfo>;
  finalize(): void;
  abort(code: number): void;
  allocate(sendBytes: number, recvBytes: number): void;
  /** One spec, or one per local rank when the process drives several (info.localRanks). */
  warmup(spec: HalfSpec | HalfSpec[], iters: number): Promise<void>;
  runHalf(spec: HalfSpec | HalfSpec[]): Promise<HalfResult>;
  /** Different ops timed as one step, `iters` steps (timed_loop.h benchSequence): ops[k] is op k's spec, or one per
   *  local rank. Only the specs' op fields, layouts and data segments are read. */
  runSequence(ops: (HalfSpec | HalfSpec[])[], options: SequenceOptions): Promise<SequenceResult>;
  /** Process groups smaller than the world (core/backend.h createGroups): every rank calls it with the same lists of
   *  global ranks, in the same order; group k is then HalfSpec.group = k. Replaces earlier groups. */
  createGroups(groups: number[][]): Promise<void>;
  barrier(): void;
  allreduce(values: number[], how: number): number[];
  gatherStrings(mine: string): string[] | null;
  /** The same waits on a worker thread, so a JS timer (the -T watchdog) can fire while a peer never arrives. */
  barrierAsync(): Promise<void>;
  allreduceAsync(values: number[], how: number): Promise<number[]>;
  gatherStringsAsync(mine: string): Promise<string[] | null>;
  /** Rejects (code CORE_CANCELLED) every asynchronous call above that has not started yet; the one in progress runs to
   *  its end. Returns how many were cancelled. All of them run on one thread per module, in the order they were
   *  called (native/src/addon/executor.h), which is what lets the run loop queue row-halves ahead. */
  cancelPending(): number;
  /** Calls made after pauseQueue() wait, queued, until resumeQueue() (one already running goes on): the run loop
   *  queues a sweep's barrier, warm-ups and first halves, then lets them run, so that queuing them (specs built and
   *  converted, about 12 us a half) does not share the first halves' CPU. They start once JavaScript's turn is over
   *  (the event loop about to wait), not at the call: what the turn does after it would otherwise run inside the
   *  first timed operations. Always resume (try/finally). */
  pauseQueue(): void;
  resumeQueue(): void;
  /** The longest (ms, 1-60000) a finished call's result is held back while later calls run: results reach JavaScript
   *  in batches, when the queue runs dry or after this (default 1000; the watchdog sets it, Watchdog.resultHoldMs). */
  setResultHoldMs(ms: number): void;
  /** The iteration this process's timed loop (or warm-up) is issuing: -1 before the first, `iters` after the last
   *  (timed_loop.h loopIteration); read while a wait is stuck, to say where this rank is. */
  loopIteration(): number;
  /** The CPUs this process may run on (sched_getaffinity), ascending (native/src/addon/loop_cpu.h). */
  allowedCpus(): number[];
  /** On the executor thread: pins it (the timed loop's thread) to `cpu` and moves every other thread of the process
   *  to the process's remaining CPUs, which it returns (bench/engine/loop-cpu.ts decides when). */
  isolateLoopAsync(cpu: number): Promise<number[]>;
  /** Each process's monotonic clock (µs) read on leaving `rounds` successive barriers; rank 0 gets process × round
   *  readings, the others null (timed_loop.h clockSamples). */
  clockSamplesAsync(rounds: number): Promise<number[][] | null>;
  /** Lends this module's process-level control plane to another module (the nccl module under mpirun). */
  controlPlane?(): unknown;
  /** The native enum values by name (native/src/core/types.h, spec.h); test/native/enum-ids.test.ts
   *  compares them with DTYPE_ID, OP_ID, COLL_ID and SEGMENT_KIND_ID (bench/core/types.ts). */
  enumIds(): {
    dtype: Record<string, number>;
    op: Record<string, number>;
    coll: Record<string, number>;
    segmentKind: Record<string, number>;
  };
  /** The fields the native readers accept (native/src/addon/spec_fields.cc): per object, each field's kind and whether
   *  it is required; anything else, missing or mistyped is refused (CORE_BAD_SPEC). test/native/spec-fields.test.ts
   *  compares them with HalfSpec, Segment, PeerCounts (bench/core/types.ts) and SequenceOptions. */
  specFields(): Record<'halfSpec' | 'segment' | 'peerCounts' | 'sequenceOptions', Record<string, SpecField>>;
}

/** One field of an object the native layer reads: its kind (int32, uint64, number, boolean, string, uint64[],
 *  number[], object, object[]) and whether it must be given. */
export interface SpecField {
  kind: string;
  required: boolean;
}

/** A native failure as JS sees it: Status {backend, code, message, site} (status.h). */
export interface NativeError extends Error {
  code: string;
  backend: string;
  site: string;
}

export function isNativeError(e: unknown): e is NativeError {
  return (
    e instanceof Error &&
    typeof (e as Partial<NativeError>).backend === 'string' &&
    typeof (e as Partial<NativeError>).code === 'string'
  );
}
