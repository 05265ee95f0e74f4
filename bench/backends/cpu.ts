// What the CPU backends (mpi, gloo) share on the TypeScript side: the "#  Rank" line of a CPU rank, the
// refusal of flags that only a GPU backend implements (derived from the flag table's `backends`), and the cap
// of the largest size to the host memory the ranks of a node can have (nccl-tests' "Reducing maxBytes").
import { cpus, freemem, hostname } from 'node:os';
import { refuseUnsupportedFlags } from '../config/resolve.js';
import { BackendUnavailableError } from '../core/errors.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { RankLineInfo } from '../core/ranks.js';
import type { BackendName } from '../core/types.js';
import { COMBINE, type BackendInfo, type NativeBackend } from '../native/binding.js';
import type { Adjusted } from './driver.js';

/** A CPU rank line: host, pid, `device cpu`, and the CPU model as the device name. */
export function cpuRankLine(info: BackendInfo): RankLineInfo {
  return {
    rank: info.rank,
    host: hostname().split('.')[0],
    pid: info.pid,
    device: 'cpu',
    bus: '-',
    name: cpus()[0]?.model?.trim() ?? 'cpu',
  };
}

/** Flags that only mean something on GPUs: a CPU backend refuses them instead of ignoring them. */
export function refuseGpuOnlyFlags(options: ResolvedOptions, backend: BackendName): void {
  refuseUnsupportedFlags(options, backend, 'runs on CPUs');
}

const MiB = 1024 * 1024;
/** What a rank needs besides its buffers (Node.js, the library, the table): kept out of the buffer budget. */
export const RANK_OVERHEAD_BYTES = 192 * MiB;

/**
 * The memory the ranks of this process's node may use: MemAvailable, or the cgroup limit of this process when
 * that is lower (a batch job's or container's memory.max / memory.limit_in_bytes). Bytes.
 */
export function hostMemoryBytes(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  const free = freemem();
  return limit > 0 && limit < free ? limit : free;
}

/**
 * The largest size whose buffers fit: each of `localRanks` ranks holds `buffers` buffers of up to maxBytes (send
 * and recv; a third with mulsum's scratch) plus RANK_OVERHEAD_BYTES, within 90 % of `availableBytes`. Returns
 * the reduced maximum (a multiple of 1 KiB), or null when maxBytes fits.
 */
export function hostMemoryCappedMaxBytes(
  maxBytes: number,
  availableBytes: number,
  localRanks: number,
  buffers: number,
): number | null {
  const perRank = Math.floor((0.9 * availableBytes) / Math.max(1, localRanks)) - RANK_OVERHEAD_BYTES;
  const limit = Math.max(0, Math.floor(perRank / buffers / 1024) * 1024);
  return maxBytes > limit ? limit : null;
}

/**
 * The CPU drivers' adjust(): -e reduced, on every rank alike (the smallest limit over the job's nodes), so the
 * buffers fit in host memory instead of the kernel's OOM killer ending the job; refused when not even -b fits.
 */
export async function cpuMemoryAdjust(
  options: ResolvedOptions,
  info: BackendInfo,
  native: NativeBackend,
): Promise<Adjusted> {
  const buffers = options.ops.includes('mulsum') ? 3 : 2;
  const mine =
    hostMemoryCappedMaxBytes(options.maxBytes, hostMemoryBytes(), info.localSize || 1, buffers) ?? options.maxBytes;
  const [limit] = await native.allreduceAsync([mine], COMBINE.min);
  if (limit! >= options.maxBytes) return { options, reducedMaxBytes: null };
  if (limit! < 1024 || limit! < Math.min(options.minBytes, 1024)) {
    throw new BackendUnavailableError(
      `not enough host memory for ${buffers} buffers per rank on ${info.localSize || 1} rank(s) ` +
        `of a node: ${Math.floor(hostMemoryBytes() / MiB)} MiB available (MemAvailable or the cgroup limit)`,
    );
  }
  const maxBytes = limit!;
  return {
    options: Object.freeze({ ...options, maxBytes, minBytes: Math.min(options.minBytes, maxBytes) }),
    reducedMaxBytes: maxBytes,
  };
}
