// sendrecv descriptor: ring shift, each rank sends c elements to rank+1 and receives from rank-1.
// Mirrors nccl-tests src/sendrecv.cu (loops -o ops though they are unused; in-place not validated).
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

export const sendrecv: CollectiveDescriptor = {
  name: 'sendrecv',
  rooted: false,
  synchronizing: false,
  reduces: false,
  loopsOps: true,
  inPlaceChecked: false,
  redopColumn: (op) => op,
  rootColumn: () => -1,
  // Unidirectional per rank: each rank's link carries the message once.
  busBwFactor: () => 1,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes) {
    const c = totalElems(sizeBytes, dtypeBytes);
    return uniformLayout(dtypeBytes, c, c, c, c);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, false);
    const c = layout.count;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const prev = (args.rank - 1 + args.nranks) % args.nranks;
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: !args.inPlace,
      fill: nonEmpty([copySeg(sendBuf, sendOffset, c, args.rank)]),
      expect: nonEmpty(args.inPlace ? [] : [copySeg('recv', 0, c, prev)]),
    };
  },
};
