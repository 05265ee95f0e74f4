// all_gather descriptor: every rank contributes a b-chunk and receives all n chunks in rank order.
// Mirrors nccl-tests src/all_gather.cu (16-byte chunk rounding, in-place send at recv + rank*b).
import {
  allButOneFactor,
  checkHalfArgs,
  copySeg,
  nonEmpty,
  sendPlacement,
  uniformLayout,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { chunkElems } from './counts.js';
import type { Segment } from '../core/types.js';

export const allGather: CollectiveDescriptor = {
  name: 'all_gather',
  rooted: false,
  synchronizing: true,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: true,
  redopColumn: () => 'none',
  rootColumn: () => -1,
  busBwFactor: allButOneFactor,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes, nranks) {
    const b = chunkElems(sizeBytes, dtypeBytes, nranks);
    return uniformLayout(dtypeBytes, b, b, b * nranks, b * nranks);
  },
  half(layout, args) {
    checkHalfArgs(args, false);
    return gatherAllHalf(layout.count, args.rank, args.nranks, args.inPlace);
  },
};

/** Shared with hypercube, which is an all-gather too: chunk j of the result is rank j's data. */
export function gatherAllHalf(b: number, rank: number, nranks: number, inPlace: boolean): HalfLayout {
  const { sendBuf, sendOffset } = sendPlacement(inPlace, rank * b);
  const expect: Segment[] = [];
  for (let j = 0; j < nranks; j++) expect.push(copySeg('recv', j * b, b, j));
  return {
    sendBuf,
    sendOffset,
    recvOffset: 0,
    checked: true,
    fill: nonEmpty([copySeg(sendBuf, sendOffset, b, rank)]),
    expect: nonEmpty(expect),
  };
}
