// The gloo backend's driver: where this process's rank, world size, rendezvous store and TCP address
// come from (collbench's --np launcher, an MPI launcher, or a torchrun-style environment), handed to
// the native module as COLLBENCH_GLOO_* variables (read by native/src/addon/addon_gloo.cc at init).
// Mirrors how torch.distributed picks up RANK/WORLD_SIZE/MASTER_* and GLOO_SOCKET_IFNAME.
import { mkdirSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import { UsageError } from '../config/errors.js';
import type { ResolvedOptions } from '../core/types.js';
import type { BackendInfo } from '../native/binding.js';
import type { BackendDriver } from './drivers.js';
import { cpuRankLine, refuseGpuOnlyFlags } from './drivers.js';

type Env = NodeJS.ProcessEnv;

/** Who launched this process, as far as the gloo backend is concerned. */
export type GlooLauncher = 'collbench' | 'mpi' | 'torchrun' | 'none';

export interface GlooWorld {
  launcher: GlooLauncher;
  rank: number;
  size: number;
  localRank: number;
  localSize: number;
  /** Prefix of every store key: ranks of one job share it, two jobs never do. */
  runId: string;
}

function intVar(env: Env, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  if (!/^\d+$/.test(v.trim())) throw new UsageError(`--backend gloo: ${name}=${v} is not a rank or size`);
  return Number(v);
}

/**
 * This process's place in the job. Sources, first match wins: collbench's own --np launcher
 * (COLLBENCH_GLOO_LAUNCHER=collbench plus RANK/WORLD_SIZE), an MPI launcher (OMPI_COMM_WORLD_*,
 * or PMI_RANK/PMI_SIZE), a torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); otherwise a 1-rank world.
 */
export function glooWorld(env: Env = process.env): GlooWorld {
  const check = (w: GlooWorld): GlooWorld => {
    if (w.size < 1 || w.rank >= w.size) {
      throw new UsageError(`--backend gloo: rank ${w.rank} is not in a world of ${w.size} ranks (from the ${w.launcher} environment)`);
    }
    return w;
  };
  const explicitRunId = env.COLLBENCH_GLOO_RUN_ID;
  if (env.COLLBENCH_GLOO_LAUNCHER === 'collbench') {
    const rank = intVar(env, 'RANK') ?? 0, size = intVar(env, 'WORLD_SIZE') ?? 1;
    return check({
      launcher: 'collbench', rank, size, localRank: intVar(env, 'LOCAL_RANK') ?? rank,
      localSize: intVar(env, 'LOCAL_WORLD_SIZE') ?? size, runId: explicitRunId ?? 'collbench',
    });
  }
  const ompiRank = intVar(env, 'OMPI_COMM_WORLD_RANK'), ompiSize = intVar(env, 'OMPI_COMM_WORLD_SIZE');
  const pmiRank = intVar(env, 'PMI_RANK'), pmiSize = intVar(env, 'PMI_SIZE');
  if ((ompiRank !== undefined && ompiSize !== undefined) || (pmiRank !== undefined && pmiSize !== undefined)) {
    const rank = ompiRank ?? pmiRank!, size = ompiSize ?? pmiSize!;
    const job = env.PMIX_NAMESPACE ?? env.OMPI_MCA_ess_base_jobid ?? env.PMI_JOBID ?? 'mpi';
    return check({
      launcher: 'mpi', rank, size,
      localRank: intVar(env, 'OMPI_COMM_WORLD_LOCAL_RANK') ?? intVar(env, 'MPI_LOCALRANKID') ?? rank,
      localSize: intVar(env, 'OMPI_COMM_WORLD_LOCAL_SIZE') ?? intVar(env, 'MPI_LOCALNRANKS') ?? size,
      runId: explicitRunId ?? `mpi-${job}`,
    });
  }
  const rank = intVar(env, 'RANK'), size = intVar(env, 'WORLD_SIZE');
  if (rank !== undefined && size !== undefined) {
    const run = env.TORCHELASTIC_RUN_ID ?? `${env.MASTER_ADDR ?? 'localhost'}-${env.MASTER_PORT ?? '0'}`;
    return check({
      launcher: 'torchrun', rank, size, localRank: intVar(env, 'LOCAL_RANK') ?? rank,
      localSize: intVar(env, 'LOCAL_WORLD_SIZE') ?? (isLoopback(env.MASTER_ADDR) ? size : 1),
      runId: explicitRunId ?? `torchrun-${run}`,
    });
  }
  return { launcher: 'none', rank: 0, size: 1, localRank: 0, localSize: 1, runId: explicitRunId ?? 'collbench' };
}

function isLoopback(addr: string | undefined): boolean {
  return addr === undefined || addr === 'localhost' || addr === '::1' || /^127\./.test(addr);
}

/** Where this run's ranks meet: the --gloo-store value, or a default that suits the launch. */
export interface GlooStorePlan {
  store: string | null;      // null: a 1-rank world (in-memory store)
  /** A directory this driver created and rank 0 removes at exit (null when the user chose it). */
  ownedDir: string | null;
}

export function glooStorePlan(world: GlooWorld, option: string | null, env: Env = process.env): GlooStorePlan {
  if (option !== null) return { store: option, ownedDir: null };
  if (env.COLLBENCH_GLOO_STORE) return { store: env.COLLBENCH_GLOO_STORE, ownedDir: null };
  if (world.size === 1) return { store: null, ownedDir: null };
  if (world.localSize < world.size) {
    throw new UsageError(`--gloo-store: ${world.size} ranks on several hosts (${world.launcher} launch) need a store ` +
      'they all reach: file:DIR on a shared file system, or redis://HOST:PORT');
  }
  // One host: a directory named after the job, created by whichever rank comes first.
  const dir = join(tmpdir(), `collbench-gloo-${world.runId.replace(/[^A-Za-z0-9._-]/g, '_')}`);
  return { store: `file:${dir}`, ownedDir: dir };
}

/** The TCP address: --gloo-iface (a name or an address), GLOO_SOCKET_IFNAME, loopback on one host, else the host name. */
export function glooTransport(world: GlooWorld, option: string | null, env: Env = process.env): { iface?: string; hostname?: string } {
  const given = option ?? env.GLOO_SOCKET_IFNAME?.split(',')[0] ?? null;
  if (given) return isIP(given) ? { hostname: given } : { iface: given };
  if (world.localSize >= world.size) return { hostname: '127.0.0.1' };
  return { hostname: hostname() };
}

const GLOO_VARS = ['COLLBENCH_GLOO_RANK', 'COLLBENCH_GLOO_SIZE', 'COLLBENCH_GLOO_LOCAL_RANK', 'COLLBENCH_GLOO_LOCAL_SIZE',
  'COLLBENCH_GLOO_STORE', 'COLLBENCH_GLOO_RUN_ID', 'COLLBENCH_GLOO_IFACE', 'COLLBENCH_GLOO_HOSTNAME', 'COLLBENCH_GLOO_ALGO'];

/** The COLLBENCH_GLOO_* variables the native init reads, for one process. Pure (for tests). */
export function glooNativeEnv(options: ResolvedOptions, env: Env = process.env): { vars: Record<string, string>; ownedDir: string | null; world: GlooWorld } {
  const world = glooWorld(env);
  const plan = glooStorePlan(world, options.glooStore, env);
  const transport = glooTransport(world, options.glooIface, env);
  const vars: Record<string, string> = {
    COLLBENCH_GLOO_RANK: String(world.rank), COLLBENCH_GLOO_SIZE: String(world.size),
    COLLBENCH_GLOO_LOCAL_RANK: String(world.localRank), COLLBENCH_GLOO_LOCAL_SIZE: String(world.localSize),
    COLLBENCH_GLOO_RUN_ID: world.runId, COLLBENCH_GLOO_ALGO: options.glooAlgo,
  };
  if (plan.store !== null) vars.COLLBENCH_GLOO_STORE = plan.store;
  if (transport.iface) vars.COLLBENCH_GLOO_IFACE = transport.iface;
  if (transport.hostname) vars.COLLBENCH_GLOO_HOSTNAME = transport.hostname;
  return { vars, ownedDir: plan.ownedDir, world };
}

function isPowerOf(n: number, base: number): boolean {
  let x = 1;
  while (x < n) x *= base;
  return x === n;
}

export const glooDriver: BackendDriver = {
  prepare(options) {
    const { vars, ownedDir, world } = glooNativeEnv(options);
    for (const v of GLOO_VARS) delete process.env[v];
    Object.assign(process.env, vars);
    if (ownedDir !== null) {
      mkdirSync(ownedDir, { recursive: true });
      // Rank 0 leaves last (it reports after the final barrier): it removes the job's directory.
      if (world.rank === 0) process.on('exit', () => rmSync(ownedDir, { recursive: true, force: true }));
    }
  },
  validate(options) {
    refuseGpuOnlyFlags(options, 'gloo');
    // Gloo's legacy classes (all_reduce legacy_*, and reduce_scatter, which only exists as one)
    // keep byte counts in an `int`.
    const legacy = options.glooAlgo.startsWith('legacy_');
    if (legacy && options.maxBytes > 2 ** 31 - 1) {
      throw new UsageError(`-e: ${options.maxBytes} bytes exceed what Gloo's legacy ` +
        `${options.collective === 'reduce_scatter' ? 'ReduceScatterHalvingDoubling' : options.glooAlgo} takes (2 GiB - 1)`);
    }
  },
  rankLine: (info) => cpuRankLine(info),
  warnings(options, desc: CollectiveDescriptor, info: BackendInfo) {
    const out: string[] = [];
    if (options.collective === 'all_reduce' && options.glooAlgo === 'legacy_bcube' && !isPowerOf(info.nranks, 2)) {
      out.push(`# Warning: Gloo's legacy AllreduceBcube is known to give wrong sums when the rank count (${info.nranks}) ` +
        'is not a power of its base (2); the check reports what it computes (use bcube, the new-API version)');
    }
    if (options.collective === 'reduce_scatter' && options.glooAlgo === 'legacy_halving_doubling' && info.nranks > 1) {
      out.push('# Warning: Gloo\'s legacy ReduceScatterHalvingDoubling overwrites the start of its buffer while the ' +
        'reduce-scatter send from there may still be in flight: expect #wrong > 0 where a send does not complete at ' +
        'once (e.g. after a smaller size); the default (an all-reduce, as PyTorch does it) has no such race');
    }
    const half = (info as BackendInfo & { glooFloat16?: string }).glooFloat16;
    if (desc.reduces && half === 'gloo' && options.dtypes.includes('half') && info.nranks > 1) {
      out.push('# Warning: Gloo\'s gloo::float16 drops some stores (its operator= skips the copy when its ' +
        'operator!= reads the old bits as an integer): expect #wrong > 0 for half now and then; ' +
        'COLLBENCH_GLOO_FLOAT16=collbench reduces half with collbench\'s own arithmetic instead');
    }
    return out;
  },
  perIterTimer: 'host clock timing',
};
