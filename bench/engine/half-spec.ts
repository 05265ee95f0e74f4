// One row-half's native spec (the HalfSpec that crosses into native code) for each rank this process drives, built
// from the collective's descriptor: the one place a sweep case, a size and a placement become counts and offsets.
import type { CollectiveDescriptor, LayoutContext } from '../collectives/descriptor.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { SweepCase } from '../config/cases.js';
import { COLL_ID, DTYPE_BYTES, DTYPE_ID, OP_ID, type HalfSpec } from '../core/types.js';
import type { BackendInfo } from '../native/binding.js';
import { arrivalTracePath } from './arrivals.js';

/** One row-half's native spec for one rank of this process (default: its first), from the collective's descriptor. */
function halfSpec(
  options: ResolvedOptions,
  desc: CollectiveDescriptor,
  info: BackendInfo,
  ctx: LayoutContext,
  c: SweepCase,
  sizeBytes: number,
  inPlace: boolean,
  checkRounds: number,
  rank = info.rank,
) {
  const layout = desc.layout(sizeBytes, DTYPE_BYTES[c.dtype], info.nranks, rank, ctx);
  const root = Math.max(c.root, 0);
  const half = desc.half(layout, { rank, nranks: info.nranks, root, inPlace, op: c.op });
  const checked = checkRounds > 0 && half.checked;
  const spec: HalfSpec = {
    coll: COLL_ID[desc.name],
    dtype: DTYPE_ID[c.dtype],
    op: OP_ID[c.op],
    root,
    inPlace,
    count: layout.count,
    sendOffset: half.sendOffset,
    recvOffset: half.recvOffset,
    rotateBytes: layout.rotateBytes,
    maxBytes: options.maxBytes,
    peers: layout.peers,
    fill: half.fill,
    expect: half.expect,
    iters: options.iters,
    aggIters: options.aggIters,
    blocking: options.blocking,
    perIter: options.perIterTiming,
    checkRounds: checked ? checkRounds : 0,
    checkSeed: 0,
    average: options.average,
    unalignElems: options.unalign,
    graphLaunches: options.cudaGraph,
    // Who the others waited for means something only where nobody can leave before the last one arrives, and where
    // there are others (or the device-arrival trace asks for the one rank's arrivals).
    arrivals: desc.synchronizing && layout.count > 0 && (info.nranks > 1 || arrivalTracePath(ctx.env) !== null),
  };
  return { spec, layout, checked };
}

/** The specs of every rank this process drives (one, or -t × -g with nccl): a spec, or one per local rank. */
export function localSpecs(
  options: ResolvedOptions,
  desc: CollectiveDescriptor,
  info: BackendInfo,
  ctx: LayoutContext,
  c: SweepCase,
  sizeBytes: number,
  inPlace: boolean,
  checkRounds: number,
  checkSeed = 0,
) {
  const locals = info.localRanks ?? 1;
  const all = Array.from({ length: locals }, (_, i) =>
    halfSpec(options, desc, info, ctx, c, sizeBytes, inPlace, checkRounds, info.rank + i),
  );
  for (const h of all) h.spec.checkSeed = checkSeed;
  return { ...all[0], specs: locals === 1 ? all[0].spec : all.map((h) => h.spec) };
}
