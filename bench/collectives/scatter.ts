// scatter descriptor: chunk r of the root's b*n elements lands on rank r.
// Mirrors nccl-tests src/scatter.cu (16-byte chunk rounding, in-place recv at rank*b).
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

export const scatter: CollectiveDescriptor = {
  name: 'scatter',
  rooted: true,
  synchronizing: false,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: true,
  redopColumn: () => 'none',
  rootColumn: (root) => root,
  busBwFactor: allButOneFactor,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes, nranks) {
    const b = chunkElems(sizeBytes, dtypeBytes, nranks);
    return uniformLayout(dtypeBytes, b, b * nranks, b, b * nranks);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, true);
    const b = layout.count;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const recvOffset = args.inPlace ? args.rank * b : 0;
    return {
      sendBuf,
      sendOffset,
      recvOffset,
      checked: true,
      fill: nonEmpty(args.rank === args.root ? [copySeg(sendBuf, sendOffset, b * args.nranks, args.root)] : []),
      expect: nonEmpty([copySeg('recv', recvOffset, b, args.root, args.rank * b)]),
    };
  },
};
