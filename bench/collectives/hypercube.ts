// hypercube descriptor: an all-gather done as log2(n) pairwise exchange rounds; algbw counts only
// the (n-1) received chunks. Mirrors nccl-tests src/hypercube.cu (power-of-two ranks only).
import { checkHalfArgs, uniformLayout, type CollectiveDescriptor } from './descriptor.js';
import { chunkElems } from './counts.js';
import { gatherAllHalf } from './all-gather.js';

export const hypercube: CollectiveDescriptor = {
  name: 'hypercube',
  rooted: false,
  synchronizing: true,
  reduces: false,
  loopsOps: false,
  inPlaceChecked: true,
  redopColumn: () => '',
  rootColumn: () => -1,
  busBwFactor: () => 1,
  skipReason: (n) =>
    Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0 ? null : `nRanks ${n} is not a power of 2, skipping`,
  layout(sizeBytes, dtypeBytes, nranks) {
    const b = chunkElems(sizeBytes, dtypeBytes, nranks);
    return uniformLayout(dtypeBytes, b, b, b * nranks, b * (nranks - 1));
  },
  half(layout, args) {
    checkHalfArgs(args, false);
    return gatherAllHalf(layout.count, args.rank, args.nranks, args.inPlace);
  },
};
