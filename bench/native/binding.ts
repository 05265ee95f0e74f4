// Typed view of a native backend module (collbench_<backend>.node), as built from
// native/src/addon/addon_common.cc (shared functions) and addon_<backend>.cc (init/finalize/abort).
import type { HalfResult, HalfSpec } from '../core/types.js';

export interface BackendInfo {
  backend: string;             // "mpi"
  rank: number;
  nranks: number;
  localRank: number;
  localSize: number;
  libraryVersion: string;      // the library's own full version string
  libraryVersionShort: string; // e.g. "Open MPI 4.1.4"
  processorName: string;
  pid: number;
  /** mpi only: the library's MPI_SUM saturates int8/uint8 (probed at init; Open MPI op/avx bug). */
  smallIntSumSaturates?: boolean;
}

/** How allreduce() combines numbers; values of native Combine (spec.h). */
export const COMBINE = { rank0: 0, mean: 1, min: 2, max: 3, sum: 4 } as const;

export interface NativeBackend {
  init(): BackendInfo;
  finalize(): void;
  abort(code: number): void;
  allocate(sendBytes: number, recvBytes: number): void;
  warmup(spec: HalfSpec, iters: number): Promise<void>;
  runHalf(spec: HalfSpec): Promise<HalfResult>;
  barrier(): void;
  allreduce(values: number[], how: number): number[];
  gatherStrings(mine: string): string[] | null;
}

/** A native failure as JS sees it: Status {backend, code, message, site} (status.h). */
export interface NativeError extends Error {
  code: string;
  backend: string;
  site: string;
}

export function isNativeError(e: unknown): e is NativeError {
  return e instanceof Error && typeof (e as Partial<NativeError>).backend === 'string' &&
    typeof (e as Partial<NativeError>).code === 'string';
}
