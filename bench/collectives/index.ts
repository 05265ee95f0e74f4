// Registry of the collective descriptors: lookup by NCCL name and by nccl-tests binary name
// (`all_reduce_perf`, optionally with a NAME_SUFFIX such as `_mpi`, a path or a script extension).
import { COLLECTIVES, type CollectiveName } from '../core/types.js';
import type { CollectiveDescriptor } from './descriptor.js';
import { allGather } from './all-gather.js';
import { allReduce } from './all-reduce.js';
import { alltoall } from './alltoall.js';
import { alltoallv } from './alltoallv.js';
import { broadcast } from './broadcast.js';
import { gather } from './gather.js';
import { hypercube } from './hypercube.js';
import { reduceScatter } from './reduce-scatter.js';
import { reduce } from './reduce.js';
import { scatter } from './scatter.js';
import { sendrecv } from './sendrecv.js';

export type { CollectiveDescriptor, HalfArgs, HalfLayout, Layout, LayoutContext } from './descriptor.js';
export { PlanError } from './alltoallv-plan.js';

const REGISTRY: Readonly<Record<CollectiveName, CollectiveDescriptor>> = Object.freeze({
  all_reduce: allReduce,
  all_gather: allGather,
  reduce_scatter: reduceScatter,
  broadcast,
  reduce,
  alltoall,
  alltoallv,
  gather,
  scatter,
  sendrecv,
  hypercube,
});

/** Every descriptor, in nccl-tests' binary order (= COLLECTIVES). */
export const ALL_COLLECTIVES: readonly CollectiveDescriptor[] = Object.freeze(COLLECTIVES.map((n) => REGISTRY[n]));

export function isCollectiveName(name: string): name is CollectiveName {
  return (COLLECTIVES as readonly string[]).includes(name);
}

export function getCollective(name: CollectiveName): CollectiveDescriptor {
  return REGISTRY[name];
}

/** Descriptor for a user-supplied name, or null when it names no collective. */
export function findCollective(name: string): CollectiveDescriptor | null {
  return isCollectiveName(name) ? REGISTRY[name] : null;
}
