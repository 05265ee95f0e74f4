// The one call list every replay reader produces (NCCL call logs, Chakra execution traces, flight-recorder dumps),
// and the vocabulary the formats share: collective names, PyTorch/NCCL datatypes mapped onto collbench's, byte sizes
// in nccl-tests' sense (all_gather its output, reduce_scatter its input), and the one-line refusal of bad input.
import type { TraceFormat } from '../report/replay-document.js';
import { DTYPE_BYTES, type CollectiveName, type DTypeName, type OpName } from '../core/types.js';

/** A process group as a trace names it: its id, its size, and its global ranks where the format records them. */
export interface ReplayGroup {
  id: string;
  size: number;
  ranks: number[] | null;
}

/** One recorded call of one rank, in that rank's order. */
export interface ReplayCall {
  /** Global rank of the process that recorded it. */
  rank: number;
  /** The name as recorded (AllReduce, allreduce, nccl:all_reduce, nccl:send 0->1). */
  name: string;
  /** What collbench replays it as; 'send'/'recv' are point-to-point halves; null: not a call collbench knows. */
  collective: CollectiveName | 'send' | 'recv' | null;
  /** Elements per rank as the library counts them (NCCL's count; PyTorch's message elements). */
  count: number;
  /** Datatype as collbench replays it; `dtypeName` keeps the recorded one. */
  dtype: DTypeName;
  dtypeName: string;
  /** Elements of `dtype` per recorded element (2 for a complex type replayed as its real parts). */
  dtypeScale: number;
  op: OpName;
  /** Root (rooted collectives) or peer (send/recv), as a rank of the group; -1 when none. */
  root: number;
  group: ReplayGroup;
  /** all_to_all_v: elements sent to / received from each peer of the group. */
  inSplits?: number[];
  outSplits?: number[];
  /** When the call was recorded (ns), where the format has it (flight recorder). */
  timeNs?: number;
  /** Where it is: file:line or file node N (for messages). */
  where: string;
}

/** Every rank's calls, as read from one or more files. */
export interface ReplayTrace {
  format: TraceFormat;
  files: string[];
  /** calls[rank]: that rank's calls in order (a rank with no file is missing: undefined). */
  calls: (ReplayCall[] | undefined)[];
  /** The job's rank count, as the trace states it (the largest group, or the rank files). */
  worldSize: number;
}

/** Bad or unreadable input: one line naming the file and line or node; the command exits 2 with it. */
export class TraceError extends Error {
  override name = 'TraceError';

  constructor(message: string) {
    super(message.replace(/\s*\n\s*/g, ' '));
  }
}

/** PyTorch's c10::toString(ScalarType) names, NCCL's ncclDataType_t numbers and names, and Chakra's lower-case
 *  ones, onto collbench's datatypes. Types collbench has no counterpart for replay the same bytes: `scale` elements
 *  of the mapped type per recorded element (a complex float: two floats), or 1-byte/2-byte integers as uint8/half. */
const DTYPE_OF: Record<string, [DTypeName, number]> = {
  float: ['float', 1],
  float32: ['float', 1],
  double: ['double', 1],
  float64: ['double', 1],
  half: ['half', 1],
  float16: ['half', 1],
  bfloat16: ['bfloat16', 1],
  int: ['int32', 1],
  int32: ['int32', 1],
  long: ['int64', 1],
  int64: ['int64', 1],
  char: ['int8', 1],
  int8: ['int8', 1],
  byte: ['uint8', 1],
  uint8: ['uint8', 1],
  bool: ['uint8', 1],
  uint32: ['uint32', 1],
  uint64: ['uint64', 1],
  float8_e4m3fn: ['f8e4m3', 1],
  float8_e5m2: ['f8e5m2', 1],
  f8e4m3: ['f8e4m3', 1],
  f8e5m2: ['f8e5m2', 1],
  short: ['half', 1],
  int16: ['half', 1],
  complexfloat: ['float', 2],
  complexdouble: ['double', 2],
  complexhalf: ['half', 2],
  // Execution traces name tensors' C++ element types.
  'long int': ['int64', 1],
  'unsigned char': ['uint8', 1],
  'signed char': ['int8', 1],
  'short int': ['half', 1],
  'unsigned int': ['uint32', 1],
  'unsigned long': ['uint64', 1],
  'complex<float>': ['float', 2],
  'complex<double>': ['double', 2],
};
/** ncclDataType_t values (nccl.h): ncclInt8 … ncclFloat8e5m2, as collbench's DTYPE_ID mirrors them. */
const NCCL_DTYPES: DTypeName[] = [
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
];

/** A recorded datatype (PyTorch name, Chakra's, ncclFloat32, or NCCL's number) as collbench's, or null. */
export function mapDtype(recorded: string | number): { dtype: DTypeName; scale: number } | null {
  if (typeof recorded === 'number' || /^\d+$/.test(recorded)) {
    const d = NCCL_DTYPES[Number(recorded)];
    return d ? { dtype: d, scale: 1 } : null;
  }
  const key = recorded
    .toLowerCase()
    .trim()
    .replace(/^nccl/, '')
    .replace(/^(torch\.|c10::)/, '')
    .replace(/^tensor\((.*)\)$/, '$1');
  const hit = DTYPE_OF[key];
  return hit ? { dtype: hit[0], scale: hit[1] } : null;
}

/** Collective names of all formats (lower case, no separators) onto collbench's. */
const COLLECTIVE_OF: Record<string, ReplayCall['collective']> = {
  allreduce: 'all_reduce',
  allgather: 'all_gather',
  allgatherintotensor: 'all_gather',
  allgatherbase: 'all_gather',
  reducescatter: 'reduce_scatter',
  reducescattertensor: 'reduce_scatter',
  reducescatterbase: 'reduce_scatter',
  broadcast: 'broadcast',
  reduce: 'reduce',
  alltoall: 'alltoall',
  alltoallbase: 'alltoall',
  alltoallv: 'alltoallv',
  gather: 'gather',
  scatter: 'scatter',
  send: 'send',
  recv: 'recv',
  // PyTorch's coalesced calls (one NCCL group of several tensors) replay as one call of their summed size.
  allreducecoalesced: 'all_reduce',
  allgatherintotensorcoalesced: 'all_gather',
  allgathercoalesced: 'all_gather',
  reducescattertensorcoalesced: 'reduce_scatter',
};

/** A recorded collective name (AllReduce, all_reduce, _allgather_base, nccl:send 0->1) as collbench's, or null. */
export function mapCollective(recorded: string): ReplayCall['collective'] {
  const key = recorded
    .replace(/^nccl:/, '')
    .replace(/\s.*$/, '')
    .replace(/[_\s]/g, '')
    .toLowerCase();
  return COLLECTIVE_OF[key] ?? null;
}

/** NCCL's ncclRedOp_t numbers (sum, prod, max, min, avg) and PyTorch's ReduceOp names onto collbench's ops. */
export function mapOp(recorded: string | number): OpName {
  const ops: OpName[] = ['sum', 'prod', 'max', 'min', 'avg'];
  if (typeof recorded === 'number') return ops[recorded] ?? 'sum';
  const hit = ops.find((o) => recorded.toLowerCase().includes(o));
  return hit ?? 'sum';
}

/** The call's size in nccl-tests' sense (bytes): all_gather its output, reduce_scatter its input, alltoall the
 *  whole buffer, the others the one buffer; a p2p half its message. */
export function callBytes(c: Pick<ReplayCall, 'collective' | 'count' | 'dtype' | 'dtypeScale' | 'group'>): number {
  const elem = DTYPE_BYTES[c.dtype] * c.dtypeScale;
  const perRank = c.count * elem;
  switch (c.collective) {
    case 'all_gather':
    case 'reduce_scatter':
    case 'gather':
    case 'scatter':
      return perRank * c.group.size;
    default:
      return perRank;
  }
}
