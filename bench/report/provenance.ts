// Where a run happened and with what (docs/architecture.md, "report/"): collbench, Node and library versions, host
// and OS, the launcher, the environment filtered to the prefixes that change what the libraries do (never
// the whole environment: nccl-tests' JSON dumps it all, secrets included), and a command to rerun the run.
import { readFileSync } from 'node:fs';
import { arch, cpus, hostname, platform, release, totalmem } from 'node:os';
import { findBackendRecord } from '../backends/registry.js';
import type { BackendInfo } from '../native/binding.js';
import type { RankLineInfo } from '../core/ranks.js';
import type { HostInfo, LibraryVersions, Provenance, ReportRank } from './schema.js';
import { ENV } from '../core/environment.js';

/** The only environment variables a report records. */
export const ENV_PREFIXES = ['NCCL_', 'CUDA_', 'OMPI_', 'UCX_', 'GLOO_', 'COLLBENCH_'] as const;

/** Set by `--np` before it re-executes the command under mpirun: the command line the user typed. */
export const ARGV_ENV = ENV.ARGV;

/** Names of variables that hold credentials (COLLBENCH_GLOO_REDIS_PASSWORD, a *_TOKEN): never recorded, whatever the prefix. */
export const SECRET_NAME = /PASS(WORD|WD)?|SECRET|TOKEN|CREDENTIAL|AUTH|PRIVATE|_KEY$/i;

export function filterEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(env).sort()) {
    const value = env[key];
    if (value !== undefined && ENV_PREFIXES.some((p) => key.startsWith(p)) && !SECRET_NAME.test(key)) out[key] = value;
  }
  return out;
}

/**
 * Versions a backend may report beside BackendInfo's library strings. The NCCL backend is expected to set
 * the numeric ones (ncclGetVersion, NCCL_VERSION_CODE, cudaRuntimeGetVersion, cudaDriverGetVersion);
 * absent fields are left out of the report.
 */
export interface VersionFields {
  /** nccl backend: the dlopen'ed library ({ versionCode: 22807, path }), as bench/backends/nccl.ts reports it. */
  library?: { versionCode?: number; path?: string };
  ncclVersion?: number;
  ncclHeadersVersion?: number;
  cudaRuntimeVersion?: number;
  cudaDriverVersion?: number;
  glooVersion?: string;
}

export function libraryVersions(info: BackendInfo & VersionFields): LibraryVersions {
  const v: LibraryVersions = {};
  const key = findBackendRecord(info.backend)?.reportVersionAs ?? null;
  if (key !== null) v[key] = info.glooVersion ?? (info.libraryVersionShort || info.libraryVersion);
  if (v.gloo === undefined && info.glooVersion) v.gloo = info.glooVersion;
  const int = (x: unknown): number | undefined =>
    Number.isInteger(x) && (x as number) > 0 ? (x as number) : undefined;
  const nccl = int(info.ncclVersion ?? info.library?.versionCode),
    headers = int(info.ncclHeadersVersion);
  const rt = int(info.cudaRuntimeVersion),
    drv = int(info.cudaDriverVersion);
  if (nccl !== undefined) v.ncclRuntime = nccl;
  if (nccl !== undefined && typeof info.library?.path === 'string') v.ncclLibraryPath = info.library.path;
  if (headers !== undefined) v.ncclHeaders = headers;
  if (rt !== undefined) v.cudaRuntime = rt;
  if (drv !== undefined) v.cudaDriver = drv;
  return v;
}

function distro(): string | null {
  try {
    const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'));
    return m ? m[1]! : null;
  } catch {
    return null;
  }
}

export function hostInfo(): HostInfo {
  const c = cpus();
  return {
    hostname: hostname(),
    platform: platform(),
    osRelease: release(),
    distro: distro(),
    arch: arch(),
    cpuModel: c[0]?.model?.trim() ?? 'unknown',
    cpuCount: Math.max(1, c.length),
    memoryBytes: totalmem(),
  };
}

export function launcherKind(env: NodeJS.ProcessEnv): Provenance['launcher'] {
  if (env.SLURM_STEP_ID !== undefined && env.SLURM_PROCID !== undefined) return 'srun'; // a job step's task (PMIx or not)
  if (env.OMPI_COMM_WORLD_SIZE || env.PMIX_RANK || env.PMI_RANK) return 'mpirun';
  if (env.SLURM_PROCID || env.WORLD_SIZE) return 'other';
  return 'none';
}

export function collectProvenance(info: BackendInfo, version: string, env: NodeJS.ProcessEnv): Provenance {
  return {
    collbench: { version },
    node: { version: process.version },
    backend: { name: info.backend, library: info.libraryVersionShort, libraryVersion: info.libraryVersion },
    versions: libraryVersions(info as BackendInfo & VersionFields),
    host: hostInfo(),
    launcher: launcherKind(env),
    env: filterEnv(env),
  };
}

/** POSIX shell quoting: bare when safe, else single quotes. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command that reruns this benchmark. The user's own command line when `--np` passed it on
 * (COLLBENCH_ARGV); else the launcher that started its processes around argv: `mpirun -np P`, `srun -n P`,
 * `torchrun --no-python` (nodes x processes per node) for a torchrun-style environment; argv alone for one process.
 * P counts processes, not ranks: -t / -g ranks inside a process are in argv already.
 */
export function rerunCommand(argv: readonly string[], nranks: number, env: NodeJS.ProcessEnv): string {
  const original = env[ARGV_ENV];
  if (original) {
    try {
      const words = JSON.parse(original) as unknown;
      if (Array.isArray(words) && words.length > 0 && words.every((w) => typeof w === 'string'))
        return words.map(shellQuote).join(' ');
    } catch {
      /* fall through: not ours */
    }
  }
  const cmd = argv.map(shellQuote).join(' ');
  const count = (...names: string[]): number | null => {
    for (const n of names) if (/^\d+$/.test(env[n] ?? '')) return Number(env[n]);
    return null;
  };
  switch (launcherKind(env)) {
    case 'mpirun':
      return `mpirun -np ${count('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE') ?? nranks} ${cmd}`;
    case 'srun':
      return `srun -n ${count('SLURM_STEP_NUM_TASKS', 'SLURM_NTASKS') ?? nranks} ${cmd}`;
    case 'other': {
      const world = count('WORLD_SIZE');
      if (world === null) return cmd;
      const perNode = count('LOCAL_WORLD_SIZE') ?? world;
      const nodes = Math.max(1, Math.round(world / perNode));
      return `torchrun --no-python --nnodes=${nodes} --nproc-per-node=${perNode} ${cmd}`;
    }
    default:
      return cmd;
  }
}

/** A rank line as the report records it: GPUs carry their PCI id, CPU ranks their NUMA node. */
export function reportRank(r: RankLineInfo): ReportRank {
  const gpu = typeof r.device === 'number';
  const numa = /^numa(\d+)$/.exec(r.bus);
  return {
    rank: r.rank,
    group: r.group ?? 0,
    host: r.host,
    pid: r.pid,
    device: r.device,
    deviceName: r.name,
    pciBusId: gpu && r.bus && r.bus !== '-' ? r.bus : null,
    numaNode: numa ? Number(numa[1]) : null,
  };
}
