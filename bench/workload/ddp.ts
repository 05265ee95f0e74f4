// The all-reduces one PyTorch DistributedDataParallel step issues: one per gradient bucket, in the order the
// buckets become ready. The rule is PyTorch's own, as published in its source: torch/csrc/distributed/c10d/reducer.cpp,
// `compute_bucket_assignment_by_size`, called by `Reducer::rebuild_buckets` after the first step with the parameters
// in gradient-ready order and the size limits {first_bucket_bytes_cap_, bucket_bytes_cap_}:
//   - walk the parameters in gradient-ready order (the reverse of definition order: backward produces the last
//     layer's gradients first), adding each one's bytes to the open bucket;
//   - when the open bucket holds >= the current limit, close it (so a bucket may exceed its cap by its last
//     parameter) and move to the next limit; the limits are [first bucket cap, bucket cap] and stay at the last;
//   - the parameters left at the end form the last bucket.
// Defaults: first bucket cap kDefaultFirstBucketBytes = 1 MiB (torch/csrc/distributed/c10d/reducer.hpp); bucket cap
// `bucket_cap_mb` = 25, in bytes int(bucket_cap_mb * 1024 * 1024) (torch/nn/parallel/distributed.py). One dtype and
// device per model is assumed (PyTorch keys buckets by both); sparse gradients (own buckets) are not modelled.
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
