// The shared vocabulary of the TypeScript layer: datatypes, ops, collectives, backends, and the per-row-half spec
// handed to native code and its result. Ids mirror native/src/core/types.h and spec.h (and NCCL's enums);
// test/native/enum-ids.test.ts compares them with the built modules.

export const DTYPES = [
  'int8',
  'uint8',
  'int32',
  'uint32',
  'int64',
  'uint64',
  'half',
  'float',
  'double',
  'bfloat16',
  'f8e4m3',
  'f8e5m2',
] as const;
export type DTypeName = (typeof DTYPES)[number];
/** Native enum value (= ncclDataType_t) of each datatype name. */
export const DTYPE_ID: Record<DTypeName, number> = {
  int8: 0,
  uint8: 1,
  int32: 2,
  uint32: 3,
  int64: 4,
  uint64: 5,
  half: 6,
  float: 7,
  double: 8,
  bfloat16: 9,
  f8e4m3: 10,
  f8e5m2: 11,
};
export const DTYPE_BYTES: Record<DTypeName, number> = {
  int8: 1,
  uint8: 1,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  half: 2,
  float: 4,
  double: 8,
  bfloat16: 2,
  f8e4m3: 1,
  f8e5m2: 1,
};

/** Ops in the order `-o all` runs them (nccl-tests). */
export const OPS = ['sum', 'prod', 'max', 'min', 'avg', 'mulsum'] as const;
export type OpName = (typeof OPS)[number];
export const OP_ID: Record<OpName, number> = { sum: 0, prod: 1, max: 2, min: 3, avg: 4, mulsum: 5 };

export const COLLECTIVES = [
  'all_reduce',
  'all_gather',
  'reduce_scatter',
  'broadcast',
  'reduce',
  'alltoall',
  'alltoallv',
  'gather',
  'scatter',
  'sendrecv',
  'hypercube',
] as const;
export type CollectiveName = (typeof COLLECTIVES)[number];
/** Native enum value (native/src/core/collectives.def) of each collective: its index in COLLECTIVES. */
export const COLL_ID = Object.freeze(Object.fromEntries(COLLECTIVES.map((c, i) => [c, i]))) as Readonly<
  Record<CollectiveName, number>
>;
/** The nccl-tests binary of each collective, in COLLECTIVES' order: the Makefile's bin/ links, the bundle's
 *  launchers and the usage lines all come from this list (each descriptor's `program` equals its entry). */
export const PROGRAMS: readonly string[] = Object.freeze(COLLECTIVES.map((c) => `${c}_perf`));

/** Communication libraries, in order of preference when none is asked for (bench/backends/registry.ts). */
export const BACKEND_NAMES = ['nccl', 'mpi', 'gloo'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];
/** How help text names a backend beside a flag only it implements (`[NCCL]`, `[gloo]`). */
export const BACKEND_LABELS: Readonly<Record<BackendName, string>> = Object.freeze({
  nccl: 'NCCL',
  mpi: 'mpi',
  gloo: 'gloo',
});

/** Gloo all_reduce algorithms: new API (default = Gloo's choice, ring; ring; bcube) and legacy classes. */
export const GLOO_ALGOS = [
  'default',
  'ring',
  'bcube',
  'legacy_ring',
  'legacy_ring_chunked',
  'legacy_halving_doubling',
  'legacy_bcube',
] as const;
export type GlooAlgo = (typeof GLOO_ALGOS)[number];

export const JSON_FORMATS = ['collbench', 'nccl-tests'] as const;
export const TABLE_FORMATS = ['nccl-tests', 'pretty'] as const;

/** One generated-data run in a buffer; mirrors native Segment (spec.h). */
export type SegmentKind = 'reduceInput' | 'reduceOutput' | 'copy' | 'zero';
export const SEGMENT_KIND_ID: Record<SegmentKind, number> = { reduceInput: 0, reduceOutput: 1, copy: 2, zero: 3 };
export interface Segment {
  buf: 'send' | 'recv';
  kind: SegmentKind;
  offset: number; // elements
  count: number; // elements
  indexBase: number; // global pattern index of the first element
  stream: number; // pattern stream (e.g. the source rank of copied data)
  rank: number; // contributing rank (reduceInput)
}

export interface PeerCounts {
  sendCounts: number[];
  sendDispls: number[];
  recvCounts: number[];
  recvDispls: number[];
}

/** Everything the native timed loop needs for one row-half on this rank (mirrors HalfSpec). */
export interface HalfSpec {
  coll: number;
  dtype: number;
  op: number;
  root: number;
  inPlace: boolean;
  count: number;
  sendOffset: number;
  recvOffset: number;
  rotateBytes: number;
  maxBytes: number;
  peers?: PeerCounts;
  fill: Segment[];
  expect: Segment[];
  iters: number;
  aggIters: number;
  blocking: number;
  perIter: boolean;
  checkRounds: number;
  checkSeed: number;
  average: number;
  unalignElems: number;
  graphLaunches?: number; // -G: capture the timed ops once, replay them this many times (nccl)
  arrivals?: boolean; // record each iteration's start on every process, gathered to rank 0 (late ranks)
  group?: number; // a sequence's op on a createGroups() process group (its index; root and peers are group ranks)
  member?: boolean; // false: this rank is not in that group and issues nothing for the op (the group's ranks do)
  groupSize?: number; // that group's rank count: the ranks its data pattern spans
}

export interface FirstWrong {
  rank: number;
  index: number;
  expected: string;
  got: string;
}

export interface HalfResult {
  timeUs: number;
  cpuTimeUs: number;
  checked: boolean;
  wrong: number;
  ranksWithWrong: number;
  firstWrong?: FirstWrong;
  iterUs?: number[];
  perRankIterUs?: number[][];
  /** Rank 0, several processes: when each process started each timed iteration, on its own clock (µs). With device
   *  arrivals (nccl -I): per rank, the device time from its reference to each iteration (numbers/lateness.ts). */
  arrivalUs?: number[][];
  /** Device arrivals: per rank, [host time of its reference (µs, its process's clock), half-width of its window]. */
  deviceRefUs?: number[][];
  /** Device arrivals: per process, when the host enqueued each iteration (what arrivalUs holds otherwise). */
  enqueueUs?: number[][];
}
