// The all-gathers and reduce-scatters one FullyShardedDataParallel step issues (FULL_SHARD, BACKWARD_PRE), unit by
// unit, each unit's flat parameter padded to a multiple of the world size (the order: docs/workload.md).
// Sizes as nccl-tests counts them: an all_gather's whole output, a reduce_scatter's whole input.
import type { Param } from './model.js';

export interface FsdpUnit {
  name: string;
  /** Elements of the unit's flat parameter, before padding. */
  numel: number;
  /** After padding to a multiple of the world size. */
  paddedNumel: number;
}

export interface FsdpOp {
  collective: 'all_gather' | 'reduce_scatter';
  unit: number;
  phase: 'forward' | 'backward';
}

/** The units of a model wrapped every `unitLayers` blocks; unit 0 is the root when a parameter lies outside the blocks. */
export function fsdpUnits(params: readonly Param[], unitLayers: number, world: number): FsdpUnit[] {
  const blocks = [...new Set(params.map((p) => p.layer).filter((l): l is number => l !== null))].sort((a, b) => a - b);
  const groupOf = new Map(blocks.map((b, i) => [b, Math.floor(i / unitLayers)]));
  const groups = Math.ceil(blocks.length / unitLayers);
  const numel = new Array<number>(groups + 1).fill(0);
  for (const p of params) numel[p.layer === null ? 0 : 1 + groupOf.get(p.layer)!] += p.numel;
  const pad = (n: number): number => Math.ceil(n / world) * world;
  return numel
    .map((n, u) => {
      const first = blocks[(u - 1) * unitLayers],
        last = blocks[Math.min(u * unitLayers, blocks.length) - 1];
      const name = u === 0 ? 'root' : first === last ? `block ${first}` : `blocks ${first}-${last}`;
      return { name, numel: n, paddedNumel: pad(n) };
    })
    .filter((u, i) => i > 0 || u.numel > 0);
}

/** The step's collectives, in issue order, for `units` as fsdpUnits() returns them (root first when it has any). */
export function fsdpStep(units: readonly FsdpUnit[], hasRoot: boolean): FsdpOp[] {
  const ops: FsdpOp[] = units.map((_, u) => ({ collective: 'all_gather', unit: u, phase: 'forward' }));
  const first = hasRoot ? 1 : 0;
  const blocks = Array.from({ length: units.length - first }, (_, i) => units.length - 1 - i); // last block first
  const gather = (u: number): FsdpOp => ({ collective: 'all_gather', unit: u, phase: 'backward' });
  const scatter = (u: number): FsdpOp => ({ collective: 'reduce_scatter', unit: u, phase: 'backward' });
  if (blocks.length > 0) ops.push(gather(blocks[0]!));
  for (let i = 0; i < blocks.length; i++) {
    if (i + 1 < blocks.length) ops.push(gather(blocks[i + 1]!)); // BACKWARD_PRE: the next unit's gather goes first
    ops.push(scatter(blocks[i]!));
  }
  if (hasRoot) ops.push(scatter(0));
  return ops;
}
