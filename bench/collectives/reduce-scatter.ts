// reduce_scatter descriptor: every rank contributes b*n elements and receives its reduced b-chunk.
// Mirrors nccl-tests src/reduce_scatter.cu (16-byte chunk rounding, in-place recv at rank*b).
import {
  glooAlgoCheck,
  allButOneFactor,
  checkHalfArgs,
  reduceInputSeg,
  reduceOutputSeg,
  sendPlacement,
  uniformLayout,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { chunkElems } from './counts.js';

export const reduceScatter: CollectiveDescriptor = {
  name: 'reduce_scatter',
  rooted: false,
  synchronizing: true,
  reduces: true,
  // the all-reduce underneath (as PyTorch's ProcessGroupGloo), or Gloo's one legacy reduce-scatter class
  validate: glooAlgoCheck(['default', 'ring', 'bcube', 'legacy_halving_doubling']),
  loopsOps: true,
  inPlaceChecked: true,
  redopColumn: (op) => op,
  rootColumn: () => -1,
  busBwFactor: allButOneFactor,
  skipReason: () => null,
  layout(sizeBytes, dtypeBytes, nranks) {
    const b = chunkElems(sizeBytes, dtypeBytes, nranks);
    return uniformLayout(dtypeBytes, b, b * nranks, b, b * nranks);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, false);
    const b = layout.count;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, 0);
    const recvOffset = args.inPlace ? args.rank * b : 0;
    return {
      sendBuf,
      sendOffset,
      recvOffset,
      checked: true,
      fill: [reduceInputSeg(sendBuf, sendOffset, b * args.nranks, args.rank, 0)],
      expect: [reduceOutputSeg(recvOffset, b, args.rank * b)],
    };
  },
};
