// alltoallv descriptor: variable per-peer counts (generated spread pattern or traffic matrix), sent as
// grouped send/recv. Mirrors nccl-tests src/alltoallv.cu: bw from the busiest rank, count column b or
// 0, in-place half not validated; per-peer counts come from alltoallv-plan.ts.
import {
  allButOneFactor,
  checkHalfArgs,
  copySeg,
  nonEmpty,
  sendPlacement,
  zeroSeg,
  type CollectiveDescriptor,
  type HalfLayout,
  type Layout,
  type LayoutContext,
} from './descriptor.js';
import {
  checkMatrixSweep,
  loadAlltoallvSource,
  planAlltoallv,
  rankCounts,
  type AlltoallvSource,
} from './alltoallv-plan.js';
import type { Segment } from '../core/types.js';

/** Sources loaded from a context's env, so a sweep reads and parses the matrix file once. */
const sourceCache = new WeakMap<LayoutContext, AlltoallvSource>();

/** The alltoallv mode a context selects: ctx.alltoallv, else ctx.env (no env: generated, spread 1). */
export function alltoallvSource(ctx: LayoutContext = {}): AlltoallvSource {
  if (ctx.alltoallv) return ctx.alltoallv;
  let source = sourceCache.get(ctx);
  if (!source) {
    source = loadAlltoallvSource(ctx.env ?? {}, ctx.readFile);
    sourceCache.set(ctx, source);
  }
  return source;
}

export const alltoallv: CollectiveDescriptor = {
  name: 'alltoallv',
  rooted: false,
  synchronizing: false,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: false,
  redopColumn: () => 'none',
  rootColumn: () => -1,
  busBwFactor: allButOneFactor,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes, nranks, rank, ctx = {}): Layout {
    const source = alltoallvSource(ctx);
    if (source.mode === 'matrix' && ctx.minBytes !== undefined && ctx.maxBytes !== undefined) {
      checkMatrixSweep(source, nranks, ctx.minBytes, ctx.maxBytes);
    }
    const plan = planAlltoallv(source, sizeBytes, dtypeBytes, nranks);
    const mine = rankCounts(plan, rank);
    // nccl-tests sizes every rank's buffers, rotation and bandwidth by the busiest rank.
    const busiestBytes = Math.max(plan.maxSendElems, plan.maxRecvElems) * dtypeBytes;
    return {
      sizeBytes: busiestBytes,
      count: plan.paramCount,
      algBytes: busiestBytes,
      sendElems: mine.sendElems,
      recvElems: mine.recvElems,
      checkElems: plan.maxRecvElems,
      rotateBytes: busiestBytes,
      peers: mine.peers,
      srcOffsets: mine.srcOffsets,
    };
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, false);
    const { peers, srcOffsets } = layout;
    if (!peers || !srcOffsets) throw new TypeError('alltoallv half needs the layout of alltoallv');
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const expect: Segment[] = [];
    if (!args.inPlace) {
      // Per source, in source order: its data from the offset of my segment in its send stream.
      for (let src = 0; src < args.nranks; src++) {
        expect.push(copySeg('recv', peers.recvDispls[src]!, peers.recvCounts[src]!, src, srcOffsets[src]!));
      }
      // The check covers the busiest rank's total: the unused tail must stay zero.
      expect.push(zeroSeg(layout.recvElems, layout.checkElems - layout.recvElems));
    }
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: !args.inPlace,
      fill: nonEmpty([copySeg(sendBuf, sendOffset, layout.sendElems, args.rank)]),
      expect: nonEmpty(expect),
    };
  },
};
