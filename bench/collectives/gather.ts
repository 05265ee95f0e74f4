// gather descriptor: every rank's b-chunk lands at chunk `rank` of the root's recv buffer.
// Mirrors nccl-tests src/gather.cu: non-roots must leave their recv buffer as initialised.
import {
  allButOneFactor,
  checkHalfArgs,
  copySeg,
  nonEmpty,
  sendPlacement,
  uniformLayout,
  zeroSeg,
  type CollectiveDescriptor,
  type HalfLayout,
} from './descriptor.js';
import { chunkElems } from './counts.js';
import type { Segment } from '../core/types.js';

export const gather: CollectiveDescriptor = {
  name: 'gather',
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
    return uniformLayout(dtypeBytes, b, b, b * nranks, b * nranks);
  },
  half(layout, args): HalfLayout {
    checkHalfArgs(args, true);
    const b = layout.count;
    const { rank, nranks } = args;
    const { sendBuf, sendOffset } = sendPlacement(args.inPlace, rank * b);
    const expect: Segment[] = [];
    if (rank === args.root) {
      for (let j = 0; j < nranks; j++) expect.push(copySeg('recv', j * b, b, j));
    } else if (args.inPlace) {
      // Unchanged: zeros around the rank's own chunk written by the fill.
      expect.push(
        zeroSeg(0, rank * b),
        copySeg('recv', rank * b, b, rank),
        zeroSeg((rank + 1) * b, (nranks - rank - 1) * b),
      );
    } else {
      expect.push(zeroSeg(0, b * nranks));
    }
    return {
      sendBuf,
      sendOffset,
      recvOffset: 0,
      checked: true,
      fill: nonEmpty([copySeg(sendBuf, sendOffset, b, rank)]),
      expect: nonEmpty(expect),
    };
  },
};
