// The cases of a run, in nccl-tests' loop order (outer → inner): datatype, op, root; each case is one
// sweep over the sizes with its own warm-up (docs/nccl-tests-contract.md, "Flags", Loops). Pure: no I/O.
import type { ResolvedOptions } from './flags.js';
import type { DTypeName, OpName } from './types.js';

export interface SweepCase {
  dtype: DTypeName;
  op: OpName;
  root: number;
}

export interface CollectiveShape {
  loopsOps: boolean; // the op list applies (reducing collectives, and sendrecv as nccl-tests does)
  rooted: boolean;
}

export function planCases(options: Pick<ResolvedOptions, 'dtypes' | 'ops' | 'root'>, shape: CollectiveShape,
  nranks: number): SweepCase[] {
  const ops: OpName[] = shape.loopsOps ? options.ops : ['sum'];
  const roots = !shape.rooted ? [-1] : options.root === -1 ? [...Array(nranks).keys()] : [options.root];
  const cases: SweepCase[] = [];
  for (const dtype of options.dtypes)
    for (const op of ops)
      for (const root of roots) cases.push({ dtype, op, root });
  return cases;
}
