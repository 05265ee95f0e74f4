// Test helpers for the NCCL backend: the real libnccl and nccl.h of a cached NCCL wheel (unpacked by
// scripts/nccl-cache.sh into the ignored .cache/nccl/), the CUDA headers, and how many GPUs the
// nccl module sees. Tests that need one of them skip, naming what is missing, when it is absent.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { repoRoot, type CliResult } from './cli.js';

export const ncclModulePath = join(repoRoot, 'build', 'Release', 'collbench_nccl.node');
const cacheDir = join(repoRoot, '.cache', 'nccl', 'nvidia', 'nccl');

/** The cached wheel's libnccl.so.2 and include directory, unpacking the wheel once if needed; or null. */
export function cachedNccl(): { lib: string; include: string } | null {
  const lib = join(cacheDir, 'lib', 'libnccl.so.2');
  const include = join(cacheDir, 'include');
  if (!existsSync(lib) || !existsSync(join(include, 'nccl.h'))) {
    spawnSync(join(repoRoot, 'scripts', 'nccl-cache.sh'), [], { encoding: 'utf8', timeout: 300_000 });
  }
  return existsSync(lib) && existsSync(join(include, 'nccl.h')) ? { lib, include } : null;
}

/** A directory holding cuda_runtime.h (CUDA_HOME, the nvcc on PATH, /usr/local/cuda), or null. */
export function cudaInclude(): string | null {
  const candidates = [process.env.CUDA_HOME, process.env.CUDA_PATH, '/usr/local/cuda']
    .filter(Boolean)
    .map((d) => join(d!, 'include'));
  const nvcc = spawnSync('sh', ['-c', 'command -v nvcc'], { encoding: 'utf8' }).stdout.trim();
  if (nvcc)
    candidates.unshift(
      join(dirname(dirname(spawnSync('readlink', ['-f', nvcc], { encoding: 'utf8' }).stdout.trim())), 'include'),
    );
  return candidates.find((d) => existsSync(join(d, 'cuda_runtime.h'))) ?? null;
}

export interface NcclModule {
  probe(o: { lib?: string }): {
    usable: boolean;
    reason?: string;
    library?: { version: string; path: string; versionCode: number };
    devices: { count: number; errorName: string; errorText: string };
  };
  library(o: { lib?: string }): {
    path: string;
    how: string;
    version: string;
    versionCode: number;
    features: Record<string, boolean>;
  };
  devices(): {
    count: number;
    cudaError: number;
    errorName: string;
    errorText: string;
    runtimeVersion: number;
    driverVersion: number;
  };
  uniqueId(o: { lib?: string }): number[];
  init(config: object): Promise<unknown>;
  /** The fields init() reads (native/src/addon/addon_nccl.cc kInitFields): kind and whether required. */
  initFields(): Record<string, { kind: string; required: boolean }>;
  finalize(): void;
  memoryUsage(): unknown;
  allocate(a: number, b: number): void;
}

const requireNative = createRequire(import.meta.url);

/** The built nccl module, or null when it was not built (no nvcc). */
export function ncclModule(): NcclModule | null {
  return existsSync(ncclModulePath) ? (requireNative(ncclModulePath) as NcclModule) : null;
}

/** CUDA devices the nccl module sees (0 without a module, a driver or a GPU), and why there are none. */
export function visibleGpus(): { count: number; reason: string } {
  const m = ncclModule();
  if (!m) return { count: 0, reason: 'the nccl module is not built (no nvcc)' };
  const d = m.devices();
  if (d.count > 0) return { count: d.count, reason: '' };
  return {
    count: 0,
    reason: d.cudaError !== 0 ? `no CUDA device: ${d.errorText} (${d.errorName})` : 'no CUDA device: none visible',
  };
}

/** An environment in which no libnccl can be found unless a test points at one, and no torchrun-style launch. */
export const NO_NCCL_ENV: NodeJS.ProcessEnv = Object.freeze({
  COLLBENCH_NCCL_LIB: '',
  VIRTUAL_ENV: '',
  CONDA_PREFIX: '',
  PYTHONPATH: '',
  LD_LIBRARY_PATH: '',
  HOME: '/nonexistent',
  RANK: '',
  WORLD_SIZE: '',
  MASTER_ADDR: '',
  MASTER_PORT: '',
  LOCAL_RANK: '',
});

/** A run that reached ncclCommInitRank with the real libnccl and no GPU: exit 5, one line naming the CUDA driver. */
export function assertNoDevice(r: CliResult, program = 'all_reduce_perf'): void {
  assert.equal(r.code, 5, r.stderr + r.stdout);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `^${program}: (rank \\d on host \\S+: )?nccl backend unavailable \\(NCCL_UNHANDLED_CUDA_ERROR\\): no CUDA device: `,
    ),
  );
  assert.match(
    r.stderr,
    /CUDA driver version is insufficient for CUDA runtime version \(cudaGetDeviceCount: cudaErrorInsufficientDriver\)/,
  );
  assert.match(r.stderr, /ncclCommInitRank failed: ncclUnhandledCudaError/);
}
