// Which GPU each local rank of the nccl backend drives when the job has more local ranks than GPUs: NCCL >= 2.30
// accepts several ranks on one GPU with NCCL_MULTI_RANK_GPU_ENABLE=1; any NCCL does when every rank has its own
// NCCL_HOSTID (each rank its own "node"). Otherwise the run is refused in one line naming both ways out.

import { ENV } from '../core/environment.js';
import { shortHost } from '../core/ranks.js';

type Env = NodeJS.ProcessEnv;

/** NCCL's version code (X*10000+Y*100+Z) from which NCCL_MULTI_RANK_GPU_ENABLE exists (src/init.cc, v2.30.3-1). */
export const MULTI_RANK_GPU_SINCE = 23000;

/** How local ranks were put on GPUs: one each (`own`), or round-robin over fewer GPUs and by which of NCCL's rules. */
export type DeviceSharing = 'own' | 'multi-rank-gpu' | 'host-id';

export interface DevicePlan {
  /** CUDA ordinal of local rank 0; local rank i drives (first + i) mod deviceCount (native NcclOptions). */
  first: number;
  sharing: DeviceSharing;
  /** What the rank lines say after the GPU name ('' when every rank has its own GPU). */
  note: string;
}

export interface DevicePlanInput {
  /** Local rank 0's ordinal as nccl-tests numbers it (firstDevice(): local rank x t x g, or NCCL_TESTS_DEVICE). */
  first: number;
  /** -t x -g: the ranks this process drives. */
  localRanks: number;
  /** Processes of this job on this host (1 when unknown): where there are more of their ranks than GPUs, the GPU
   *  of local process 0 is shared too, though its own ranks fit. */
  localProcesses?: number;
  /** CUDA devices visible to this process (0: the native module describes the missing GPU itself). */
  deviceCount: number;
  /** The loaded NCCL: its version text ("2.28.9") and code (22809). */
  version: string;
  versionCode: number;
}

/** NCCL_MULTI_RANK_GPU_ENABLE as NCCL reads it (NCCL_PARAM: an integer, non-zero is on; anything else is 0). */
export function multiRankGpuSwitch(env: Env): boolean {
  const v = env.NCCL_MULTI_RANK_GPU_ENABLE?.trim();
  return v !== undefined && /^[+-]?\d+$/.test(v) && Number(v) !== 0;
}

/** What the loaded NCCL offers for several ranks on one GPU, for `collbench info`. */
export function multiRankGpuSupport(version: string, versionCode: number): string {
  return versionCode >= MULTI_RANK_GPU_SINCE
    ? `NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL ${version} has it), or a distinct NCCL_HOSTID per rank`
    : `a distinct NCCL_HOSTID per rank (NCCL ${version}; NCCL_MULTI_RANK_GPU_ENABLE needs 2.30 or newer)`;
}

/**
 * The GPUs of this process's local ranks, or the refusal (one line) when they need more GPUs than there are and
 * neither of NCCL's rules for sharing one applies. NCCL <= 2.29 refuses two ranks with the same host hash on one
 * GPU ("Duplicate GPU detected", src/init.cc); the host hash is NCCL_HOSTID when set (src/misc/utils.cc), so
 * ranks with distinct host ids may share it, but the local ranks of one process share that process's host id.
 */
export function planDevices(input: DevicePlanInput, env: Env): DevicePlan | { refusal: string } {
  const { first, localRanks, deviceCount } = input;
  // With NCCL_TESTS_DEVICE each process names its GPU (one visible device per process, say): only its own count.
  const named = env.NCCL_TESTS_DEVICE !== undefined && env.NCCL_TESTS_DEVICE.trim() !== '';
  const needed = Math.max(first + localRanks, named ? 0 : (input.localProcesses ?? 1) * localRanks);
  if (deviceCount <= 0 || needed <= deviceCount) return { first, sharing: 'own', note: '' };
  const span = `devices ${first}..${first + localRanks - 1}: local process rank x -t x -g, or NCCL_TESTS_DEVICE`;
  const head =
    `Invalid number of GPUs: ${needed} requested but only ${deviceCount} were found ` + `(this process uses ${span})`;
  const gpus = `${deviceCount} GPU${deviceCount === 1 ? '' : 's'}`;
  const switchOn = multiRankGpuSwitch(env);
  if (switchOn && input.versionCode >= MULTI_RANK_GPU_SINCE) {
    const note = `round-robin over ${gpus}: NCCL_MULTI_RANK_GPU_ENABLE=1`;
    return { first: first % deviceCount, sharing: 'multi-rank-gpu', note };
  }
  const hostId = env.NCCL_HOSTID;
  if (hostId !== undefined && hostId !== '') {
    if (localRanks > deviceCount) {
      return {
        refusal:
          `${head}; this process's ${localRanks} ranks (-t x -g) share its NCCL_HOSTID '${hostId}', ` +
          `and NCCL ${input.version} refuses two of them on one GPU: one rank per process, or ` +
          'NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30 or newer)',
      };
    }
    return {
      first: first % deviceCount,
      sharing: 'host-id',
      note: `round-robin over ${gpus}: own node, NCCL_HOSTID=${hostId}`,
    };
  }
  const ways =
    'several ranks on one GPU need NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30 or newer) or a distinct ' +
    'NCCL_HOSTID per rank (each its own node to NCCL: the network transport, e.g. NCCL_SOCKET_IFNAME=lo)';
  const loaded = switchOn
    ? `NCCL_MULTI_RANK_GPU_ENABLE=1 is set but the loaded NCCL is ${input.version}`
    : `the loaded NCCL is ${input.version}`;
  return { refusal: `${head}; ${ways}; ${loaded}` };
}

/**
 * ENV.NCCL_HOSTID_PER_RANK=1: sets NCCL_HOSTID to `<host>-rank<procRank>` in `env` and in this process's environment,
 * where NCCL reads it (getHostHash, at the first communicator's init: after the bootstrap, which knows the rank).
 * Returns the id set, or null when the variable is off.
 */
export function applyPerRankHostId(env: Env, procRank: number, host: string): string | null {
  if (env[ENV.NCCL_HOSTID_PER_RANK] !== '1') return null;
  const id = `${shortHost(host)}-rank${procRank}`;
  env.NCCL_HOSTID = id;
  process.env.NCCL_HOSTID = id;
  return id;
}
