// all_reduce descriptor: every rank reduces c elements and receives the whole result.
// Mirrors nccl-tests src/all_reduce.cu (byte count, init data, busbw factor 2(n-1)/n).
import { GLOO_ALGOS } from '../core/types.js';
import {
  glooAlgoCheck,
  checkHalfArgs,
  reduceInputSeg,
  reduceOutputSeg,
  sendPlacement,
  uniformLayout,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { totalElems } from './counts.js';

export const allReduce: CollectiveDescriptor = {
  name: 'all_reduce',
  rooted: false,
  synchronizing: true,
  reduces: true,
  // every Gloo algorithm, new API and legacy classes
  validate: glooAlgoCheck(GLOO_ALGOS),
  loopsOps: true,
  inPlaceChecked: true,
  redopColumn: (op) => op,
  rootColumn: () => -1,
  // Each rank sends and receives (n-1)/n of the data twice (reduce-scatter + all-gather).
  busBwFactor: (n) => (2 * (n - 1)) / n,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes) {
    const c = totalElems(sizeBytes, dtypeBytes);
    return uniformLayout(dtypeBytes, c, c, c, c);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, false);
    const c = layout.count;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: true,
      fill: [reduceInputSeg(sendBuf, sendOffset, c, args.rank, 0)],
      expect: [reduceOutputSeg(0, c, 0)],
    };
  },
};
