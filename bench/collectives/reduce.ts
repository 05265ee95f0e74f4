// reduce descriptor: every rank contributes c elements, only the root receives the reduction.
// Mirrors nccl-tests src/reduce.cu: non-roots must leave their recv buffer as initialised.
import {
  checkHalfArgs,
  reduceInputSeg,
  reduceOutputSeg,
  sendPlacement,
  uniformLayout,
  zeroSeg,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { totalElems } from './counts.js';

export const reduce: CollectiveDescriptor = {
  name: 'reduce',
  rooted: true,
  synchronizing: false,
  reduces: true,
  loopsOps: true,
  inPlaceChecked: true,
  redopColumn: (op) => op,
  rootColumn: (root) => root,
  busBwFactor: () => 1,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes) {
    const c = totalElems(sizeBytes, dtypeBytes);
    return uniformLayout(dtypeBytes, c, c, c, c);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, true);
    const c = layout.count;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const input = reduceInputSeg(sendBuf, sendOffset, c, args.rank, 0);
    // Non-roots: recv buffer unchanged = zeros out-of-place, own input in place.
    const expect =
      args.rank === args.root
        ? [reduceOutputSeg(0, c, 0)]
        : args.inPlace
          ? [reduceInputSeg('recv', 0, c, args.rank, 0)]
          : [zeroSeg(0, c)];
    return { sendBuf, sendOffset, recvOffset: 0, checked: true, fill: [input], expect };
  },
};
