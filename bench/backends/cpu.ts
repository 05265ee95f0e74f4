// What the CPU backends (mpi, gloo) share on the TypeScript side: the "#  Rank" line of a CPU rank, and
// the refusal of flags that only a GPU backend implements (derived from the flag table's `backends`).
import { cpus, hostname } from 'node:os';
import { refuseUnsupportedFlags } from '../config/resolve.js';
import type { RankLineInfo } from '../core/ranks.js';
import type { BackendName } from '../core/types.js';
import type { ResolvedOptions } from '../core/flags.js';
import type { BackendInfo } from '../native/binding.js';

/** A CPU rank line: host, pid, `device cpu`, and the CPU model as the device name. */
export function cpuRankLine(info: BackendInfo): RankLineInfo {
  return {
    rank: info.rank, host: hostname().split('.')[0], pid: info.pid, device: 'cpu', bus: '-',
    name: cpus()[0]?.model?.trim() ?? 'cpu',
  };
}

/** Flags that only mean something on GPUs: a CPU backend refuses them instead of ignoring them. */
export function refuseGpuOnlyFlags(options: ResolvedOptions, backend: BackendName): void {
  refuseUnsupportedFlags(options, backend, 'runs on CPUs');
}
