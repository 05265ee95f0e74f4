// The gloo backend's driver: this process's rank, world size, store and TCP address from collbench's --np launcher,
// an MPI launcher, a torchrun-style environment or an srun step (as torch.distributed reads RANK, MASTER_*,
// GLOO_SOCKET_IFNAME), handed to the native module's init as one typed config object (native/src/addon/addon_gloo.cc).
import { mkdirSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import { REDIS_PASSWORD_IN_URL, type ResolvedOptions } from '../config/flags.js';
import { UsageError } from '../core/errors.js';
import type { GlooAlgo } from '../core/types.js';
import { isNativeError, type BackendInfo, type NativeBackend } from '../native/binding.js';
import { torchelasticRunId } from '../launch/job-token.js';
import { slurmStep } from '../launch/slurm.js';
import type { BackendDriver } from './driver.js';
import { cpuMemoryAdjust, cpuRankLine, refuseGpuOnlyFlags } from './cpu.js';
import { ENV } from '../core/environment.js';

type Env = NodeJS.ProcessEnv;

/** Who launched this process, as far as the gloo backend is concerned. */
export type GlooLauncher = 'collbench' | 'mpi' | 'torchrun' | 'slurm' | 'none';

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
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), a task of an srun job step (SLURM_PROCID,
 * SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE: launch/slurm.ts); otherwise a 1-rank
 * world. torchrun comes before Slurm: `srun torchrun …` starts one torchrun per node, whose workers carry
 * both, and the workers' RANK is theirs.
 */
export function glooWorld(env: Env = process.env): GlooWorld {
  const check = (w: GlooWorld): GlooWorld => {
    if (w.size < 1 || w.rank >= w.size) {
      throw new UsageError(
        `--backend gloo: rank ${w.rank} is not in a world of ${w.size} ranks (from the ${w.launcher} environment)`,
      );
    }
    return w;
  };
  const explicitRunId = env[ENV.GLOO_RUN_ID];
  if (env[ENV.GLOO_LAUNCHER] === 'collbench') {
    const rank = intVar(env, 'RANK') ?? 0,
      size = intVar(env, 'WORLD_SIZE') ?? 1;
    return check({
      launcher: 'collbench',
      rank,
      size,
      localRank: intVar(env, 'LOCAL_RANK') ?? rank,
      localSize: intVar(env, 'LOCAL_WORLD_SIZE') ?? size,
      runId: explicitRunId ?? 'collbench',
    });
  }
  const ompiRank = intVar(env, 'OMPI_COMM_WORLD_RANK'),
    ompiSize = intVar(env, 'OMPI_COMM_WORLD_SIZE');
  const pmiRank = intVar(env, 'PMI_RANK'),
    pmiSize = intVar(env, 'PMI_SIZE');
  if ((ompiRank !== undefined && ompiSize !== undefined) || (pmiRank !== undefined && pmiSize !== undefined)) {
    const rank = ompiRank ?? pmiRank!,
      size = ompiSize ?? pmiSize!;
    const job = env.PMIX_NAMESPACE ?? env.OMPI_MCA_ess_base_jobid ?? env.PMI_JOBID ?? 'mpi';
    // srun --mpi=pmi2 gives PMI_RANK/PMI_SIZE but nothing node-local: the step's layout says it.
    const step = ompiRank === undefined ? slurmStep(env) : null;
    return check({
      launcher: 'mpi',
      rank,
      size,
      localRank: intVar(env, 'OMPI_COMM_WORLD_LOCAL_RANK') ?? intVar(env, 'MPI_LOCALRANKID') ?? step?.localRank ?? rank,
      localSize: intVar(env, 'OMPI_COMM_WORLD_LOCAL_SIZE') ?? intVar(env, 'MPI_LOCALNRANKS') ?? step?.localSize ?? size,
      runId: explicitRunId ?? `mpi-${job}`,
    });
  }
  const rank = intVar(env, 'RANK'),
    size = intVar(env, 'WORLD_SIZE');
  if (rank !== undefined && size !== undefined) {
    const run = torchelasticRunId(env) ?? `${env.MASTER_ADDR ?? 'localhost'}-${env.MASTER_PORT ?? '0'}`;
    return check({
      launcher: 'torchrun',
      rank,
      size,
      localRank: intVar(env, 'LOCAL_RANK') ?? rank,
      localSize: intVar(env, 'LOCAL_WORLD_SIZE') ?? (isLoopback(env.MASTER_ADDR) ? size : 1),
      runId: explicitRunId ?? `torchrun-${run}`,
    });
  }
  const step = slurmStep(env);
  if (step !== null) {
    return check({
      launcher: 'slurm',
      rank: step.rank,
      size: step.size,
      localRank: step.localRank,
      localSize: step.localSize,
      runId: explicitRunId ?? `slurm-${step.jobId}.${step.stepId}`,
    });
  }
  return { launcher: 'none', rank: 0, size: 1, localRank: 0, localSize: 1, runId: explicitRunId ?? 'collbench' };
}

function isLoopback(addr: string | undefined): boolean {
  return addr === undefined || addr === 'localhost' || addr === '::1' || /^127\./.test(addr);
}

/** Where this run's ranks meet: the --gloo-store value, or a default that suits the launch. */
export interface GlooStorePlan {
  store: string | null; // null: a 1-rank world (in-memory store)
  /** A directory this driver created and rank 0 removes at exit (null when the user chose it). */
  ownedDir: string | null;
}

export function glooStorePlan(world: GlooWorld, option: string | null, env: Env = process.env): GlooStorePlan {
  if (option !== null) return { store: option, ownedDir: null };
  const store = env[ENV.GLOO_STORE];
  if (store && /^redis:\/\/.*@/.test(store)) {
    throw new UsageError(`${ENV.GLOO_STORE}: ${REDIS_PASSWORD_IN_URL}`);
  }
  if (store) return { store, ownedDir: null };
  if (world.size === 1) return { store: null, ownedDir: null };
  if (world.localSize < world.size) {
    throw new UsageError(
      `--gloo-store: ${world.size} ranks on several hosts (${world.launcher} launch) need a store ` +
        'they all reach: file:DIR on a shared file system, or redis://HOST:PORT',
    );
  }
  // One host: a directory named after the job, created by whichever rank comes first.
  const dir = join(tmpdir(), `collbench-gloo-${world.runId.replace(/[^A-Za-z0-9._-]/g, '_')}`);
  return { store: `file:${dir}`, ownedDir: dir };
}

/** The TCP address: --gloo-iface (a name or an address), GLOO_SOCKET_IFNAME, loopback on one host, else the host name. */
export function glooTransport(
  world: GlooWorld,
  option: string | null,
  env: Env = process.env,
): { iface?: string; hostname?: string } {
  const given = option ?? env.GLOO_SOCKET_IFNAME?.split(',')[0] ?? null;
  if (given) return isIP(given) ? { hostname: given } : { iface: given };
  if (world.localSize >= world.size) return { hostname: '127.0.0.1' };
  return { hostname: hostname() };
}

/** What collbench_gloo.node's init() takes; native/src/addon/addon_gloo.cc checks every field (GLOO_BAD_CONFIG). */
export interface GlooInitConfig {
  rank: number;
  size: number;
  localRank: number;
  localSize: number;
  /** Prefix of every store key (GlooWorld.runId). */
  runId: string;
  /** all_reduce algorithm (--gloo-algo). */
  algo: GlooAlgo;
  /** Rendezvous store: file:DIR or redis://HOST:PORT; absent for a 1-rank world (in-memory store). */
  store?: string;
  /** Redis AUTH password for a redis:// store (redisPassword()); never from argv, never in a report. */
  storePassword?: string;
  /** TCP transport: bind to this interface, or else to this address / host name. */
  iface?: string;
  hostname?: string;
  /** Every Gloo wait (rendezvous, collectives) gives up after this (COLLBENCH_GLOO_TIMEOUT_MS). */
  timeoutMs: number;
  /** The bring-up's rendezvous gives up after this instead (-T, when shorter): init blocks the JS thread, so the
   *  watchdog cannot time it. */
  connectTimeoutMs?: number;
  /** Reduce half with gloo::float16's operators (as Gloo and PyTorch do) or collbench's (COLLBENCH_GLOO_FLOAT16). */
  float16: GlooFloat16;
}

export type GlooFloat16 = 'gloo' | 'collbench';

/** What the gloo module's init() returns besides the common fields. */
export interface GlooInfo extends BackendInfo {
  transport: string; // the TCP device as Gloo describes it
  glooAlgo: GlooAlgo;
  glooFloat16: GlooFloat16;
}

/** collbench_gloo.node (native/src/addon/addon_gloo.cc). */
export interface GlooNative extends NativeBackend {
  /** Synchronous: connects the full mesh (waits up to timeoutMs for the other ranks). */
  init(config: GlooInitConfig): GlooInfo;
}

export const GLOO_DEFAULT_TIMEOUT_MS = 30_000;

/** COLLBENCH_GLOO_TIMEOUT_MS: milliseconds, a positive integer (unset or empty: 30000). */
function glooTimeoutMs(env: Env): number {
  const v = env[ENV.GLOO_TIMEOUT_MS];
  if (v === undefined || v === '') return GLOO_DEFAULT_TIMEOUT_MS;
  const ms = /^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN;
  if (!(ms >= 1 && ms <= 2 ** 30)) {
    throw new UsageError(
      `--backend gloo: ${ENV.GLOO_TIMEOUT_MS}=${v} is not a timeout in milliseconds (an integer from 1 to 2^30)`,
    );
  }
  return ms;
}

/**
 * The Redis store's password: COLLBENCH_GLOO_REDIS_PASSWORD, else REDISCLI_AUTH (the variable redis-cli reads), else
 * none. Only the environment: a command-line value would show in ps and in the reports' argv. Reports never record
 * either variable (report/provenance.ts leaves out every variable whose name says password, secret, token or auth).
 */
export function redisPassword(env: Env = process.env): string | null {
  const v = env[ENV.GLOO_REDIS_PASSWORD] || env.REDISCLI_AUTH;
  return v ? v : null;
}

/** COLLBENCH_GLOO_FLOAT16: gloo (default) or collbench. */
function glooFloat16(env: Env): GlooFloat16 {
  const v = env[ENV.GLOO_FLOAT16];
  if (v === undefined) return 'gloo';
  if (v !== 'gloo' && v !== 'collbench') {
    throw new UsageError(`--backend gloo: ${ENV.GLOO_FLOAT16}=${v} must be gloo or collbench`);
  }
  return v;
}

/**
 * The native init's config for this process, the store directory this driver must create (null when
 * the user chose the store) and the world it was built from. Pure (for tests): reads `env` only, and
 * throws UsageError naming the variable for a bad value.
 */
export function glooInitConfig(
  options: ResolvedOptions,
  env: Env = process.env,
): { config: GlooInitConfig; ownedDir: string | null; world: GlooWorld } {
  const world = glooWorld(env);
  const plan = glooStorePlan(world, options.glooStore, env);
  const transport = glooTransport(world, options.glooIface, env);
  const config: GlooInitConfig = {
    rank: world.rank,
    size: world.size,
    localRank: world.localRank,
    localSize: world.localSize,
    runId: world.runId,
    algo: options.glooAlgo,
    timeoutMs: glooTimeoutMs(env),
    float16: glooFloat16(env),
  };
  if (options.timeoutSec !== null && options.timeoutSec > 0 && options.timeoutSec * 1000 < config.timeoutMs) {
    config.connectTimeoutMs = Math.max(1, Math.round(options.timeoutSec * 1000));
  }
  if (plan.store !== null) config.store = plan.store;
  const password = redisPassword(env);
  if (plan.store?.startsWith('redis://') && password !== null) config.storePassword = password;
  if (transport.iface) config.iface = transport.iface;
  if (transport.hostname) config.hostname = transport.hostname;
  return { config, ownedDir: plan.ownedDir, world };
}

function isPowerOf(n: number, base: number): boolean {
  let x = 1;
  while (x < n) x *= base;
  return x === n;
}

/** The gloo driver of one run (the registry's constructor); `env` holds the launcher's and COLLBENCH_GLOO_* variables.
 *  Nothing is process-wide: init() hands the module its whole configuration. */
export function createGlooDriver(env: Env = process.env): BackendDriver {
  return {
    async init(native, options) {
      const { config, ownedDir, world } = glooInitConfig(options, env);
      if (ownedDir !== null) {
        mkdirSync(ownedDir, { recursive: true, mode: 0o700 }); // the store's keys are this job's alone
        // Rank 0 leaves last (it reports after the final barrier): it removes the job's directory.
        if (world.rank === 0) process.on('exit', () => rmSync(ownedDir, { recursive: true, force: true }));
      }
      const started = Date.now();
      try {
        return (native as GlooNative).init(config);
      } catch (e) {
        // The bring-up's rendezvous ran out of -T: a watchdog timeout (exit 4) as any other wait's.
        const limit = config.connectTimeoutMs;
        if (limit === undefined || !isNativeError(e) || Date.now() - started < limit) throw e;
        throw Object.assign(
          new Error(
            `Test timeout (${options.timeoutSec}s) in the Gloo bring-up (store rendezvous, ` +
              `connections): ${e.message}`,
          ),
          { code: 'TIMEOUT', backend: 'gloo', site: e.site },
        );
      }
    },
    validate(options) {
      refuseGpuOnlyFlags(options, 'gloo');
    },
    adjust: cpuMemoryAdjust,
    rankLine: (info) => cpuRankLine(info),
    warnings(options, desc: CollectiveDescriptor, info: BackendInfo) {
      const out: string[] = [];
      if (options.collective === 'all_reduce' && options.glooAlgo === 'legacy_bcube' && !isPowerOf(info.nranks, 2)) {
        out.push(
          `# Warning: Gloo's legacy AllreduceBcube is known to give wrong sums when the rank count (${info.nranks}) ` +
            'is not a power of its base (2); the check reports what it computes (use bcube, the new-API version)',
        );
      }
      if (
        options.collective === 'reduce_scatter' &&
        options.glooAlgo === 'legacy_halving_doubling' &&
        info.nranks > 1
      ) {
        out.push(
          "# Warning: Gloo's legacy ReduceScatterHalvingDoubling overwrites the start of its buffer while the " +
            'reduce-scatter send from there may still be in flight: expect #wrong > 0 where a send does not complete at ' +
            'once (e.g. after a smaller size); the default (an all-reduce, as PyTorch does it) has no such race',
        );
      }
      const half = (info as BackendInfo & { glooFloat16?: string }).glooFloat16;
      if (desc.reduces && half === 'gloo' && options.dtypes.includes('half') && info.nranks > 1) {
        out.push(
          "# Warning: Gloo's gloo::float16 drops some stores (its operator= skips the copy when its " +
            'operator!= reads the old bits as an integer): expect #wrong > 0 for half now and then; ' +
            "COLLBENCH_GLOO_FLOAT16=collbench reduces half with collbench's own arithmetic instead",
        );
      }
      return out;
    },
    perIterTimer: 'host clock timing',
    // Gloo's answer to an op it does not implement; collbench supplies every datatype × op's reduction function
    // itself (gloo_collectives.cc), so none of collbench's pairs is refused today.
    refusals: ['GLOO_INVALID_OPERATION'],
  };
}
