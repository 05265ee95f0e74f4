// alltoall descriptor: chunk j of rank i's b*n elements lands at chunk i of rank j.
// Mirrors nccl-tests src/alltoall.cu (16-byte chunk rounding; in-place half is not validated).
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

export const alltoall: CollectiveDescriptor = {
  name: 'alltoall',
  rooted: false,
  synchronizing: true,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: false,
  redopColumn: () => 'none',
  rootColumn: () => -1,
  busBwFactor: allButOneFactor,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes, nranks) {
    const b = chunkElems(sizeBytes, dtypeBytes, nranks);
    return uniformLayout(dtypeBytes, b, b * nranks, b * nranks, b * nranks);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, false);
    const b = layout.count;
    const { rank, nranks } = args;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const expect: Segment[] = [];
    // In place the library reads what it overwrites: the result is meaningless, so it is not checked
    // (the fill still runs so the timed ops move well-formed data).
    if (!args.inPlace) for (let j = 0; j < nranks; j++) expect.push(copySeg('recv', j * b, b, j, rank * b));
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: !args.inPlace,
      fill: nonEmpty([copySeg(sendBuf, sendOffset, b * nranks, rank)]),
      expect: nonEmpty(expect),
    };
  },
};
