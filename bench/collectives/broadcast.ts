// broadcast descriptor: the root's c elements reach every rank.
// Mirrors nccl-tests src/broadcast.cu (count c, busbw factor 1).
import {
  checkHalfArgs,
  copySeg,
  nonEmpty,
  sendPlacement,
  uniformLayout,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { totalElems } from './counts.js';

export const broadcast: CollectiveDescriptor = {
  name: 'broadcast',
  rooted: true,
  synchronizing: false,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: true,
  redopColumn: () => 'none',
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
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: true,
      fill: nonEmpty(args.rank === args.root ? [copySeg(sendBuf, sendOffset, c, args.root)] : []),
      expect: nonEmpty([copySeg('recv', 0, c, args.root)]),
    };
  },
};
