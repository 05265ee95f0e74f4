// What `collbench workload` times: per configuration (a DDP bucket cap, an FSDP wrap granularity) the sequence of
// collectives one training step issues, with their sizes in bytes, and where the stand-in compute goes.
import type { DTypeName } from '../core/types.js';
import { capBytes, ddpBuckets } from './ddp.js';
import { fsdpStep, fsdpUnits } from './fsdp.js';
import type { Model } from './model.js';

export type WorkloadKind = 'ddp' | 'fsdp';
export type SequenceCollective = 'all_reduce' | 'all_gather' | 'reduce_scatter';

export interface SequenceOp {
  collective: SequenceCollective;
  /** nccl-tests' size of the op: all_reduce its buffer, all_gather its output, reduce_scatter its input. */
  bytes: number;
  /** What the op carries, in words (bucket 3: 12 parameters; block 7 backward). */
  what: string;
}

export interface Configuration {
  /** The value that varies (bucket cap in MB, blocks per FSDP unit), and how it prints. */
  value: number;
  label: string;
  ops: SequenceOp[];
}

export interface WorkloadPlan {
  kind: WorkloadKind;
  model: Model;
  dtype: DTypeName;
  dtypeBytes: number;
  world: number;
  /** The name of the value that varies across configurations (a column heading). */
  varies: string;
  configurations: Configuration[];
}

export function ddpPlan(
  model: Model,
  dtype: DTypeName,
  dtypeBytes: number,
  world: number,
  capsMb: readonly number[],
  firstBucketMb: number,
): WorkloadPlan {
  const bytes = model.params.map((p) => p.numel * dtypeBytes);
  return {
    kind: 'ddp',
    model,
    dtype,
    dtypeBytes,
    world,
    varies: 'bucket cap (MB)',
    configurations: capsMb.map((mb) => ({
      value: mb,
      label: String(mb),
      ops: ddpBuckets(bytes, capBytes(mb), capBytes(firstBucketMb)).map((b, i) => ({
        collective: 'all_reduce',
        bytes: b.bytes,
        what: `bucket ${i}: ${b.params.length} parameter${b.params.length === 1 ? '' : 's'}`,
      })),
    })),
  };
}

export function fsdpPlan(
  model: Model,
  dtype: DTypeName,
  dtypeBytes: number,
  world: number,
  unitLayers: readonly number[],
): WorkloadPlan {
  const hasRoot = model.params.some((p) => p.layer === null);
  return {
    kind: 'fsdp',
    model,
    dtype,
    dtypeBytes,
    world,
    varies: 'blocks per unit',
    configurations: unitLayers.map((k) => {
      const units = fsdpUnits(model.params, k, world);
      return {
        value: k,
        label: String(k),
        ops: fsdpStep(units, hasRoot).map((op) => ({
          collective: op.collective,
          bytes: units[op.unit]!.paddedNumel * dtypeBytes,
          what: `${units[op.unit]!.name} ${op.phase}`,
        })),
      };
    }),
  };
}

/**
 * The stand-in compute of one step (µs) spread over its ops in proportion to their bytes: an op waits for the
 * compute that produces (DDP: the bucket's gradients) or needs (FSDP: the unit's layers) its parameters, and compute
 * scales with parameter count. The total is the same for every configuration of a model, as the model's compute is.
 */
export function gapsFor(ops: readonly SequenceOp[], computeUs: number): number[] {
  const total = ops.reduce((a, o) => a + o.bytes, 0);
  return ops.map((o) => (total > 0 ? (computeUs * o.bytes) / total : 0));
}

/** --dry-run: every configuration's sequence. */
export function planLines(plan: WorkloadPlan): string[] {
  const out = [`# collbench workload ${plan.kind}: ${plan.model.source}; ${plan.dtype}; world ${plan.world}`];
  for (const c of plan.configurations) {
    const total = c.ops.reduce((x, o) => x + o.bytes, 0);
    out.push(`# ${plan.varies} ${c.label}: ${c.ops.length} calls, ${total} bytes per step`);
    c.ops.forEach((o, i) => {
      out.push(`${String(i).padStart(5)}  ${o.collective.padEnd(14)} ${String(o.bytes).padStart(14)}  ${o.what}`);
    });
  }
  return out;
}
