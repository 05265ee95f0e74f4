// The all-reduces one PyTorch DistributedDataParallel step issues: one per gradient bucket, in the order buckets
// become ready, by PyTorch's own rule (reducer.cpp compute_bucket_assignment_by_size; the rule and its defaults:
// docs/workload.md). One dtype and device per model; sparse gradients are not modelled.
import { MIB } from '../config/sizes.js';

/** kDefaultFirstBucketBytes (torch/csrc/distributed/c10d/reducer.hpp). */
export const DDP_FIRST_BUCKET_BYTES = 1 * MIB;
/** DistributedDataParallel's default bucket_cap_mb. */
export const DDP_DEFAULT_CAP_MB = 25;

export interface Bucket {
  /** Bytes of gradient the bucket's all-reduce carries. */
  bytes: number;
  /** Indices (definition order) of the parameters in it, in the order they were added. */
  params: number[];
}

/** bucket_cap_mb as DDP turns it into bytes: int(mb * 1024 * 1024). */
export function capBytes(mb: number): number {
  return Math.trunc(mb * MIB);
}

/** DDP's buckets for parameters of `paramBytes` bytes each (definition order), in the order their all-reduces run. */
export function ddpBuckets(
  paramBytes: readonly number[],
  bucketCapBytes: number,
  firstBucketBytes = DDP_FIRST_BUCKET_BYTES,
): Bucket[] {
  const limits = [firstBucketBytes, bucketCapBytes];
  let limit = 0;
  const out: Bucket[] = [];
  let open: Bucket = { bytes: 0, params: [] };
  for (let i = paramBytes.length - 1; i >= 0; i--) {
    open.params.push(i);
    open.bytes += paramBytes[i]!;
    if (open.bytes >= limits[limit]!) {
      out.push(open);
      open = { bytes: 0, params: [] };
      limit = Math.min(limit + 1, limits.length - 1);
    }
  }
  if (open.params.length > 0) out.push(open);
  return out;
}
