// The shape every collective descriptor has ("collectives are data", docs/architecture.md, "collectives/") and the helpers
// they share. Mirrors the per-collective plug-in record of nccl-tests (byte-count, init-data and
// bandwidth functions, src/<coll>.cu) as pure data: no I/O, no process state.
import { UsageError } from '../core/errors.js';
import { checkRanks } from './counts.js';
import type { OptionField, ResolvedOptions } from '../config/flags.js';
import type { CollectiveName, GlooAlgo, OpName, PeerCounts, Segment, SegmentKind } from '../core/types.js';
import type { AlltoallvSource, EnvLike } from './alltoallv-plan.js';

/** What a layout may need beyond the size: only alltoallv reads it. */
export interface LayoutContext {
  /** Environment holding NCCL_TESTS_ALLTOALLV_* (pass `process.env` at the edge, never read here). */
  env?: EnvLike;
  /** Reads the alltoallv traffic-matrix file (default: fs.readFileSync as UTF-8). */
  readFile?: (path: string) => string;
  /** An already-loaded alltoallv source (wins over env; lets callers load and validate once). */
  alltoallv?: AlltoallvSource;
  /** Sweep bounds (-b/-e); when both are given, alltoallv matrix mode checks min == max >= total. */
  minBytes?: number;
  maxBytes?: number;
}

/**
 * Counts of one row for one rank (nccl-tests getCollByteCount + getBw). Element counts are in
 * elements of the row's datatype, byte counts in bytes.
 */
export interface Layout {
  /** "size" column: max(sendBytes, recvBytes) (alltoallv: of the busiest rank). */
  sizeBytes: number;
  /** "count" column: the count passed to the library (nccl-tests' paramcount). */
  count: number;
  /** Bytes algbw is computed from (algbw = algBytes / 1e9 / seconds). */
  algBytes: number;
  /** Elements this rank sends (read from the send pointer). */
  sendElems: number;
  /** Elements this rank receives (written from the recv pointer). */
  recvElems: number;
  /** Elements of the recv buffer the check covers, from the recv pointer (nccl-tests expectedBytes). */
  checkElems: number;
  /** B of nccl-tests' buffer rotation: max(sendBytes, recvBytes), equal on every rank. */
  rotateBytes: number;
  /** alltoallv: this rank's per-peer counts and displacements, in elements. */
  peers?: PeerCounts;
  /** alltoallv: per source, the element offset in that source's send stream where my segment starts. */
  srcOffsets?: number[];
}

export interface HalfArgs {
  rank: number;
  nranks: number;
  /** Root of rooted collectives (ignored by the others). */
  root: number;
  inPlace: boolean;
  op: OpName;
}

/**
 * Buffers and data of one row-half on one rank. Segment offsets are absolute element offsets in
 * their buffer (they already include sendOffset / recvOffset). Before every checked op the native
 * loop zeroes the recv buffer and writes every `fill` segment; afterwards it compares every `expect`
 * segment of the recv buffer.
 *
 * Pattern convention (what makes a chunk that lands in the wrong place detectable): copied data
 * uses stream = the rank that owns it (its source; the root for broadcast/scatter) and indexBase =
 * its element offset in that rank's send data; reduction data uses stream 0 and the element's global
 * index in the reduced vector (so reduce_scatter rank r expects reduceOutput from index r*b).
 */
export interface HalfLayout {
  /** Element offset of the send pointer in its buffer (non-zero only for in-place layouts). */
  sendOffset: number;
  /** Element offset of the recv pointer in the recv buffer. */
  recvOffset: number;
  /** Buffer the send pointer points into: in-place halves send from the recv buffer. */
  sendBuf: 'send' | 'recv';
  fill: Segment[];
  expect: Segment[];
  /** false where nccl-tests prints N/A (in-place alltoall, alltoallv, sendrecv). */
  checked: boolean;
}

export interface CollectiveDescriptor {
  name: CollectiveName;
  /** Honours -r (broadcast, reduce, gather, scatter); -r -1 sweeps every root. */
  rooted: boolean;
  /** Every rank's result needs every rank's input, so no rank can leave before the last one arrives (all-reduce,
   *  all-gather, …): who arrived last is who the others waited for, and numbers/lateness.ts may name it. Rooted and
   *  neighbour collectives let ranks run ahead of each other by design, so arrival order says nothing there. */
  synchronizing: boolean;
  /** Reduces data, so the op matters (all_reduce, reduce_scatter, reduce). */
  reduces: boolean;
  /** Iterates -o ops: the reducing ones plus sendrecv, whose loop is meaningless but kept (nccl-tests). */
  loopsOps: boolean;
  /** false: in-place half is not validated and prints N/A. */
  inPlaceChecked: boolean;
  /** "redop" column text. */
  redopColumn(op: OpName): string;
  /** "root" column value: the root, or -1 for non-rooted collectives. */
  rootColumn(root: number): number;
  /** busbw = algbw * busBwFactor(nranks) (docs/nccl-tests-contract.md, "Formulas"). */
  busBwFactor(nranks: number): number;
  /** Non-null: the line nccl-tests prints instead of running this collective at this rank count. */
  skipReason(nranks: number): string | null;
  layout(sizeBytes: number, dtypeBytes: number, nranks: number, rank: number, ctx?: LayoutContext): Layout;
  half(layout: Layout, args: HalfArgs): HalfLayout;
  /** Refuses options this collective cannot run with, before anything starts (a UsageError naming the flag as
   *  `flag(field)` spells it). Absent: the default check, {@link glooAlgoCheck} of `default` only. */
  validate?(options: ResolvedOptions, flag: (field: OptionField) => string): void;
}

/** The check of --gloo-algo for a collective that takes `algos` (all_reduce every one, reduce_scatter some). */
export function glooAlgoCheck(algos: readonly GlooAlgo[]): NonNullable<CollectiveDescriptor['validate']> {
  return (o, flag) => {
    if (algos.includes(o.glooAlgo)) return;
    throw UsageError.forFlag(
      flag('glooAlgo'),
      algos.length === 1
        ? `chooses all_reduce and reduce_scatter algorithms; ${o.collective} has one Gloo implementation`
        : `${o.collective} takes ${algos.join(', ')}, not ${o.glooAlgo}`,
    );
  };
}

/** Layout of the collectives whose counts are the same on every rank. */
export function uniformLayout(
  dtypeBytes: number,
  count: number,
  sendElems: number,
  recvElems: number,
  algElems: number,
): Layout {
  const sizeBytes = Math.max(sendElems, recvElems) * dtypeBytes;
  return {
    sizeBytes,
    count,
    algBytes: algElems * dtypeBytes,
    sendElems,
    recvElems,
    checkElems: recvElems,
    rotateBytes: sizeBytes,
  };
}

/** (n-1)/n: the factor of the collectives where each rank moves all but its own chunk. */
export const allButOneFactor = (nranks: number): number => (nranks - 1) / nranks;

export function seg(
  buf: Segment['buf'],
  kind: SegmentKind,
  offset: number,
  count: number,
  indexBase = 0,
  stream = 0,
  rank = 0,
): Segment {
  return { buf, kind, offset, count, indexBase, stream, rank };
}
/** Non-reducing data owned by rank `stream`, starting at its send-data offset `indexBase`. */
export const copySeg = (buf: Segment['buf'], offset: number, count: number, stream: number, indexBase = 0): Segment =>
  seg(buf, 'copy', offset, count, indexBase, stream, 0);
/** Rank `rank`'s contribution to a reduction, global indices from `indexBase`. */
export const reduceInputSeg = (
  buf: Segment['buf'],
  offset: number,
  count: number,
  rank: number,
  indexBase = 0,
): Segment => seg(buf, 'reduceInput', offset, count, indexBase, 0, rank);
/** The reduced value, global indices from `indexBase` (always in the recv buffer). */
export const reduceOutputSeg = (offset: number, count: number, indexBase = 0): Segment =>
  seg('recv', 'reduceOutput', offset, count, indexBase, 0, 0);
export const zeroSeg = (offset: number, count: number): Segment => seg('recv', 'zero', offset, count);

/** Drops empty segments (zero-sized rows and peers) so native code never sees them. */
export function nonEmpty(segments: Segment[]): Segment[] {
  return segments.filter((s) => s.count > 0);
}

/** Where the send data lives for a half: its own buffer, or the recv buffer at the in-place offset. */
export function sendPlacement(
  inPlace: boolean,
  inPlaceSendOffset: number,
): { sendBuf: 'send' | 'recv'; sendOffset: number } {
  return inPlace ? { sendBuf: 'recv', sendOffset: inPlaceSendOffset } : { sendBuf: 'send', sendOffset: 0 };
}

export function checkHalfArgs(args: HalfArgs, rooted: boolean): void {
  checkRanks(args.nranks);
  if (!Number.isInteger(args.rank) || args.rank < 0 || args.rank >= args.nranks) {
    throw new RangeError(`rank ${args.rank} out of range for ${args.nranks} ranks`);
  }
  if (rooted && (!Number.isInteger(args.root) || args.root < 0 || args.root >= args.nranks)) {
    throw new RangeError(`root ${args.root} out of range for ${args.nranks} ranks`);
  }
}
