// The nccl backend's driver, mirroring nccl-tests' process/thread/GPU structure (src/common.cu): GPU flag checks, the
// bootstrap (unique id via MPI, a torchrun-style rendezvous, or local), device choice, NCCL_TESTS_SPLIT, what the GPUs
// and library lack (fp8 below sm_90), the GPU-memory cap, rank lines and -M.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { CollectiveDescriptor } from '../collectives/descriptor.js';
import { BackendUnavailableError, UsageError } from '../core/errors.js';
import { givenAsAll } from '../config/cases.js';
import type { DTypeName, OpName } from '../core/types.js';
import type { ResolvedOptions } from '../config/flags.js';
import { underMpiLauncher } from '../launch/launcher.js';
import { launcherJobToken } from '../launch/job-token.js';
import {
  localRanksByHost,
  rendezvous,
  RendezvousError,
  rendezvousNotes,
  torchrunEnv,
  type TorchrunEnv,
} from '../launch/rendezvous.js';
import { COMBINE, isNativeError, type BackendInfo, type NativeBackend, type SpecField } from '../native/binding.js';
import { moduleBuilt, nativeDir, requireNativeModule } from '../native/loader.js';
import { gpuBusId, type MemoryUsage, type RankLineInfo } from '../core/ranks.js';
import { applyPerRankHostId, planDevices, type DevicePlan } from './nccl-devices.js';
import type { BackendDriver } from './driver.js';
import { LINK_PROFILER_LIBRARY, linksSetup } from './nccl-links.js';
import { ENV } from '../core/environment.js';

type Env = NodeJS.ProcessEnv;

export interface NcclLibraryInfo {
  path: string;
  how: string;
  version: string; // "2.30.7"
  versionCode: number; // 23007
  features: Record<
    | 'alltoall'
    | 'gather'
    | 'scatter'
    | 'preMulSum'
    | 'avg'
    | 'bfloat16'
    | 'fp8'
    | 'config'
    | 'ctaPolicy'
    | 'ctaPolicyZero'
    | 'split'
    | 'register'
    | 'window'
    | 'graphs'
    | 'lastError',
    boolean
  >;
  /** -D: '' when this build's device-API kernels run on this library, else why not (native nccl_device.cc). */
  deviceApiRefusal: string;
  /** Normalized NCCL versions (X*10000+Y*100+Z) of the nccl_device.h headers this build has -D kernels for. */
  deviceApiBuilt: number[];
}

export interface CudaDevicesInfo {
  count: number;
  cudaError: number;
  errorName: string;
  errorText: string;
  driverVersion: number;
  runtimeVersion: number;
}

export interface NcclDeviceInfo {
  worldRank: number;
  groupRank: number;
  ordinal: number;
  pciDomain: number;
  pciBus: number;
  pciDevice: number;
  ccMajor: number;
  ccMinor: number;
  totalMemBytes: number;
  name: string;
}

export interface NcclInfo extends BackendInfo {
  worldRank: number;
  worldRanks: number;
  localRanks: number;
  procRank: number;
  nprocs: number;
  library: NcclLibraryInfo;
  ncclVersion: number; // ncclGetVersion (nccl-tests' nccl-library=)
  ncclHeadersVersion: number; // the nccl.h our declarations follow (nccl-tests' nccl-headers=)
  controlPlane: string;
  cudaDriverVersion: number;
  cudaRuntimeVersion: number;
  devices: NcclDeviceInfo[];
}

export interface NcclInitConfig {
  lib?: string;
  procRank: number;
  nprocs: number;
  localRank: number;
  localSize: number;
  nThreads: number;
  nGpus: number;
  firstDevice: number;
  /** 1: local rank i on device (firstDevice + i) mod the device count (several ranks per GPU: nccl-devices.ts). */
  shareDevices: number;
  uniqueId: number[];
  splitColor: number;
  streamNull: number;
  ctaPolicy: number;
  localRegister: number;
  timeoutSec: number;
  deviceImpl: number;
  deviceCtaCount: number; // -D, -V (native nccl_device.cc)
  controlPlane?: unknown;
}

/** collbench_nccl.node (native/src/addon/addon_nccl.cc). */
export interface NcclNative extends NativeBackend {
  probe(o: { lib?: string }): { usable: boolean; reason?: string; library?: NcclLibraryInfo; devices: CudaDevicesInfo };
  library(o: { lib?: string }): NcclLibraryInfo;
  devices(): CudaDevicesInfo;
  uniqueId(o: { lib?: string }): number[];
  init(config: NcclInitConfig): Promise<NcclInfo>;
  /** The fields init() reads and which it requires (native/src/addon/addon_nccl.cc; test/native/nccl-module.test.ts). */
  initFields(): Record<keyof NcclInitConfig, SpecField>;
  memoryUsage(): MemoryUsage;
  /** --links: the link profiler's rows as JSON from the copy NCCL loaded (path), or null when it is not loaded. */
  linksRead(path: string, reset: boolean): string | null;
}

/**
 * The environment, not the command line, is what stops this run (no libnccl, no GPU, too few GPUs,
 * an NCCL too old for a flag, a rendezvous that never completed): exit 5 with one line.
 */
export class NcclEnvironmentError extends BackendUnavailableError {
  constructor(
    message: string,
    readonly code: string,
    readonly backend = 'nccl',
    readonly site = '',
  ) {
    super(message);
    this.name = 'NcclEnvironmentError';
  }
}

const ENVIRONMENT_CODES = new Set([
  'NCCL_NOT_FOUND',
  'NCCL_TOO_OLD',
  'NCCL_SYMBOL_MISSING',
  'NCCL_DEVICE_API_UNSUPPORTED',
  'CUDA_NO_DEVICE',
  'CUDA_TOO_FEW_DEVICES',
  'CUDA_ERROR_INSUFFICIENT_DRIVER',
  'CUDA_ERROR_NO_DEVICE',
]);

/** A native failure caused by the machine (library, driver, devices) becomes an NcclEnvironmentError. */
function environmentFailure(e: unknown, native: NcclNative): unknown {
  if (!isNativeError(e)) return e;
  if (ENVIRONMENT_CODES.has(e.code) || native.devices().count === 0) {
    return new NcclEnvironmentError(`nccl backend unavailable (${e.code}): ${e.message}`, e.code, e.backend, e.site);
  }
  return e;
}

// ---------------------------------------------------------------------------------------------------
// NCCL_TESTS_SPLIT, NCCL_TESTS_DEVICE

const SPLIT_RE = /^\s*(and|or|mod|div|&|\||%|\/)\s*(0x[0-9a-f]+|0b[01]+|\d+)\s*$/i;

/**
 * The NCCL_TESTS_SPLIT colour of process `procRank`, or -1 when no split is asked for (as nccl-tests'
 * src/common.cu reads it; docs/nccl-tests-contract.md, "Flags"): NCCL_TESTS_SPLIT_MASK=<hex> gives rank & mask and wins; NCCL_TESTS_SPLIT=<op><value> with op
 * AND OR MOD DIV (or & | % /), value decimal, 0x hex or 0b binary.
 */
export function splitColor(procRank: number, env: Env = process.env): number {
  const mask = env.NCCL_TESTS_SPLIT_MASK;
  if (mask !== undefined && mask.trim() !== '') {
    const m = /^\s*(?:0x)?([0-9a-f]+)\s*$/i.exec(mask);
    if (!m) throw new UsageError(`NCCL_TESTS_SPLIT_MASK: '${mask}' is not a hexadecimal mask`);
    return procRank & parseInt(m[1], 16);
  }
  const spec = env.NCCL_TESTS_SPLIT;
  if (spec === undefined || spec.trim() === '') return -1;
  const m = SPLIT_RE.exec(spec);
  if (!m)
    throw new UsageError(`NCCL_TESTS_SPLIT: '${spec}' is not <op><value> with op AND, OR, MOD, DIV (or &, |, %, /)`);
  const text = m[2].toLowerCase();
  const value = text.startsWith('0x')
    ? parseInt(text.slice(2), 16)
    : text.startsWith('0b')
      ? parseInt(text.slice(2), 2)
      : Number(text);
  switch (m[1].toLowerCase()) {
    case 'and':
    case '&':
      return procRank & value;
    case 'or':
    case '|':
      return procRank | value;
    case 'mod':
    case '%':
      if (value === 0) throw new UsageError('NCCL_TESTS_SPLIT: MOD 0 is undefined');
      return procRank % value;
    default:
      if (value === 0) throw new UsageError('NCCL_TESTS_SPLIT: DIV 0 is undefined');
      return Math.floor(procRank / value);
  }
}

/** CUDA ordinal of this process's first GPU: NCCL_TESTS_DEVICE, else local rank × t × g (nccl-tests). */
export function firstDevice(
  localRank: number,
  options: Pick<ResolvedOptions, 'nThreads' | 'nGpus'>,
  env: Env = process.env,
): number {
  const d = env.NCCL_TESTS_DEVICE;
  if (d !== undefined && d.trim() !== '') {
    if (!/^\s*\d+\s*$/.test(d)) throw new UsageError(`NCCL_TESTS_DEVICE: '${d}' is not a CUDA device index`);
    return Number(d);
  }
  return localRank * options.nThreads * options.nGpus;
}

// ---------------------------------------------------------------------------------------------------
// What the library and the devices can do

/**
 * Datatypes and ops this run may use, given what NCCL and the GPUs offer: `-d all` / `-o all` silently
 * drop what is missing (nccl-tests drops fp8 below sm_90); an explicit request for it is refused.
 */
export function availableCases(
  options: Pick<ResolvedOptions, 'dtypes' | 'ops'>,
  features: NcclLibraryInfo['features'],
  minComputeCapability: number,
  versionText: string,
): { dtypes: DTypeName[]; ops: OpName[] } {
  const missingType = (t: DTypeName): string | null => {
    if ((t === 'f8e4m3' || t === 'f8e5m2') && !features.fp8) return `needs NCCL 2.24 or newer (this is ${versionText})`;
    if ((t === 'f8e4m3' || t === 'f8e5m2') && minComputeCapability < 90) {
      return `needs compute capability 9.0 (sm_90) or newer on every GPU; the job has sm_${minComputeCapability}`;
    }
    if (t === 'bfloat16' && !features.bfloat16) return `needs NCCL 2.10 or newer (this is ${versionText})`;
    return null;
  };
  const missingOp = (o: OpName): string | null => {
    if (o === 'avg' && !features.avg) return `needs NCCL 2.10 or newer (this is ${versionText})`;
    if (o === 'mulsum' && !features.preMulSum)
      return `needs ncclRedOpCreatePreMulSum, NCCL 2.11 or newer (this is ${versionText})`;
    return null;
  };
  const { dtypes: allTypes, ops: allOps } = givenAsAll(options);
  const dtypes = options.dtypes.filter((t) => {
    const why = missingType(t);
    if (why && !allTypes) throw new UsageError(`-d: ${t} ${why}`);
    return why === null;
  });
  const ops = options.ops.filter((o) => {
    const why = missingOp(o);
    if (why && !allOps) throw new UsageError(`-o: ${o} ${why}`);
    return why === null;
  });
  return { dtypes, ops };
}

/**
 * nccl-tests' cap on the largest size against GPU memory, for our two buffers (send + recv: the check
 * regenerates expected values instead of holding a third buffer): reserve = min(⌈mem / 16 GiB⌉ GiB,
 * 4 GiB), limit = (mem − reserve − 1 GiB) / 2. Returns the reduced maximum, or null when it fits.
 */
export function memoryCappedMaxBytes(maxBytes: number, minTotalMemBytes: number): number | null {
  const GiB = 1024 ** 3;
  const reserve = Math.min(Math.ceil(minTotalMemBytes / (16 * GiB)) * GiB, 4 * GiB);
  const limit = Math.max(0, Math.floor((minTotalMemBytes - reserve - GiB) / 2));
  return maxBytes > limit ? limit : null;
}

/** Flags the loaded NCCL is too old for (checked before any communicator exists). */
export function libraryRefusals(options: ResolvedOptions, lib: NcclLibraryInfo): string | null {
  const v = `NCCL ${lib.version} from ${lib.path}`;
  if (options.localRegister === 1 && !lib.features.register)
    return `-R 1: buffer registration needs NCCL 2.19 or newer; loaded ${v}`;
  if (options.localRegister === 2 && !lib.features.window)
    return `-R 2: symmetric window registration needs NCCL 2.27 or newer; loaded ${v}`;
  if (options.ctaPolicy >= 0 && !lib.features.ctaPolicy)
    return `-x: the CTA policy needs NCCL 2.27 or newer; loaded ${v}`;
  if (options.ctaPolicy === 2 && !lib.features.ctaPolicyZero)
    return `-x 2: the zero CTA policy needs NCCL 2.28 or newer; loaded ${v}`;
  if (options.cudaGraph > 0 && !lib.features.graphs)
    return `-G: CUDA graph capture of NCCL calls needs NCCL 2.9 or newer; loaded ${v}`;
  if (options.deviceImpl > 0 && lib.deviceApiRefusal)
    return `-D ${options.deviceImpl}: ${lib.deviceApiRefusal} (${lib.path})`;
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Bootstrap

interface World {
  procRank: number;
  nprocs: number;
  localRank: number;
  localSize: number;
  uniqueId: number[];
  controlPlane?: unknown;
  launch: 'single' | 'mpi' | 'torchrun';
}

const RENDEZVOUS_TIMEOUT_S = 300;

function rendezvousTimeoutMs(env: Env): number {
  const t = env[ENV.RENDEZVOUS_TIMEOUT];
  if (t === undefined || t.trim() === '') return RENDEZVOUS_TIMEOUT_S * 1000;
  if (!/^\s*\d+(\.\d+)?\s*$/.test(t))
    throw new UsageError(`${ENV.RENDEZVOUS_TIMEOUT}: '${t}' is not a number of seconds`);
  return Number(t) * 1000;
}

/** torchrun-style variables, or the MPI launcher's when it started us but no mpi module exists. */
function launchEnv(env: Env): TorchrunEnv | null {
  if (underMpiLauncher(env) && env.OMPI_COMM_WORLD_SIZE && env.MASTER_ADDR && env.MASTER_PORT) {
    return torchrunEnv({
      RANK: env.OMPI_COMM_WORLD_RANK,
      WORLD_SIZE: env.OMPI_COMM_WORLD_SIZE,
      LOCAL_RANK: env.OMPI_COMM_WORLD_LOCAL_RANK,
      MASTER_ADDR: env.MASTER_ADDR,
      MASTER_PORT: env.MASTER_PORT,
    });
  }
  return torchrunEnv(env);
}

async function mpiWorld(
  native: NcclNative,
  lib: string | undefined,
  state: DriverState,
  initTimeoutSec: number,
  env: Env,
): Promise<World> {
  const mpi = requireNativeModule<NativeBackend>('mpi');
  // MPI_Init under the watchdog as the mpi backend's (a native alarm: it blocks the JS thread).
  const m = mpi.init({ initTimeoutSec }) as BackendInfo;
  state.mpi = mpi;
  state.peers = m.nranks > 1;
  applyPerRankHostId(env, m.rank, hostname());
  // Process 0 makes the id; MPI broadcasts it (as 128 numbers). A failure is broadcast too (-1s),
  // so no process waits for an id that never comes.
  let id = new Array<number>(128).fill(0);
  let failure: unknown = null;
  if (m.rank === 0) {
    try {
      id = native.uniqueId({ lib });
    } catch (e) {
      failure = e;
      id = new Array<number>(128).fill(-1);
    }
  }
  // On the executor, so that the bring-up watchdog (engine/bring-up.ts) can fire while a peer never arrives.
  const got = await mpi.allreduceAsync(id, COMBINE.rank0);
  if (failure) throw failure as Error;
  if (got[0] === -1)
    throw new NcclEnvironmentError(
      'nccl backend unavailable: process 0 could not create the NCCL unique id',
      'NCCL_NO_UNIQUE_ID',
    );
  return {
    procRank: m.rank,
    nprocs: m.nranks,
    localRank: m.localRank,
    localSize: m.localSize,
    uniqueId: got,
    controlPlane: mpi.controlPlane?.(),
    launch: 'mpi',
  };
}

async function torchrunWorld(
  native: NcclNative,
  lib: string | undefined,
  world: TorchrunEnv,
  env: Env,
  state: DriverState,
): Promise<World> {
  const mine: { host: string; pid: number; uniqueId?: number[]; error?: string } = {
    host: hostname(),
    pid: process.pid,
  };
  applyPerRankHostId(env, world.rank, mine.host);
  let failure: unknown = null;
  if (world.rank === 0) {
    try {
      mine.uniqueId = native.uniqueId({ lib });
    } catch (e) {
      failure = e;
      mine.error = (e as Error).message;
    }
  }
  let all: (typeof mine)[];
  try {
    const token = launcherJobToken(env);
    const met = await rendezvous(world, JSON.stringify(mine), rendezvousTimeoutMs(env), { token, env });
    state.notes = rendezvousNotes(world, met, token);
    all = met.all.map((s, rank) => {
      try {
        const p = JSON.parse(s) as typeof mine;
        if (typeof p === 'object' && p !== null && typeof p.host === 'string') return p;
      } catch {
        /* said below */
      }
      throw new RendezvousError(
        `rendezvous: rank ${rank}'s payload is not collbench's: ${JSON.stringify(s.slice(0, 40))}`,
      );
    });
  } catch (e) {
    if (e instanceof RendezvousError)
      throw new NcclEnvironmentError(`nccl backend unavailable: ${e.message}`, 'RENDEZVOUS');
    throw e;
  }
  if (failure) throw failure as Error;
  if (!all[0].uniqueId) {
    throw new NcclEnvironmentError(
      `nccl backend unavailable: rank 0 could not create the NCCL unique id (${all[0].error ?? 'no id'})`,
      'NCCL_NO_UNIQUE_ID',
    );
  }
  const byHost = localRanksByHost(all.map((p) => p.host));
  return {
    procRank: world.rank,
    nprocs: world.worldSize,
    localRank: world.localRank ?? byHost.localRank[world.rank],
    localSize: byHost.localSize[world.rank],
    uniqueId: all[0].uniqueId,
    launch: 'torchrun',
  };
}

/**
 * Seconds the native wait for completion gives beyond -T: it is a backstop, and the JavaScript watchdog's expiry
 * comes first with its verdict (a survey of the peers, a lower rank's grace period, a second ask: engine/watchdog.ts)
 * and NCCL RAS's view (RAS_DEADLINE_MS), then aborts. At -T alone the native limit won that race on one H100 (4 ranks,
 * one SIGSTOPped): every rank ended at T with neither the verdict nor RAS's view.
 */
export const NATIVE_BACKSTOP_EXTRA_SEC = 15;

interface DriverState {
  mpi: NativeBackend | null;
  color: number;
  /** The job has other processes: a failed one leaves without MPI_Finalize, whose fence would wait for them. */
  peers: boolean;
  /** The preamble's lines about the torchrun-style rendezvous (launch/rendezvous.ts rendezvousNotes). */
  notes: string[];
  /** This process's GPUs (planDevices): what its rank lines say when ranks share a GPU. */
  devices: DevicePlan | null;
  /** --links: the profiler library NCCL_PROFILER_PLUGIN names, or the line saying why the run goes without. */
  links: string | null;
  linksNote: string | null;
}

/** Finalizes the MPI module the bootstrap used; after a failure with peers, leaves it (the exit ends the job). */
function shutdownMpi(state: DriverState, failed = false): void {
  const mpi = state.mpi;
  state.mpi = null;
  if (!(failed && state.peers)) mpi?.finalize();
}

async function initNccl(
  state: DriverState,
  nativeAny: NativeBackend,
  options: ResolvedOptions,
  limitSec: number,
  env: Env,
): Promise<NcclInfo> {
  const native = nativeAny as NcclNative;
  const lib = options.ncclLib ?? undefined;
  let library: NcclLibraryInfo;
  try {
    library = native.library({ lib });
  } catch (e) {
    throw environmentFailure(e, native);
  }
  const refusal = libraryRefusals(options, library);
  if (refusal) throw new NcclEnvironmentError(refusal, 'NCCL_TOO_OLD');

  let world: World;
  try {
    if (underMpiLauncher(env) && moduleBuilt('mpi', env)) {
      world = await mpiWorld(native, lib, state, limitSec, env);
    } else {
      const t = launchEnv(env);
      if (t) {
        world = await torchrunWorld(native, lib, t, env, state);
      } else if (underMpiLauncher(env) && Number(env.OMPI_COMM_WORLD_SIZE ?? env.PMI_SIZE ?? 1) > 1) {
        throw new NcclEnvironmentError(
          "nccl backend: started by an MPI launcher, but collbench's mpi module is not built, " +
            'so the processes cannot exchange the NCCL unique id; build it (apt install openmpi-bin libopenmpi-dev; make) or ' +
            'set MASTER_ADDR and MASTER_PORT for a TCP rendezvous',
          'NO_BOOTSTRAP',
        );
      } else {
        world = {
          procRank: 0,
          nprocs: 1,
          localRank: 0,
          localSize: 1,
          uniqueId: native.uniqueId({ lib }),
          launch: 'single',
        };
      }
    }
  } catch (e) {
    shutdownMpi(state, true);
    if (e instanceof RendezvousError)
      throw new NcclEnvironmentError(`nccl backend unavailable: ${e.message}`, 'RENDEZVOUS');
    throw environmentFailure(e, native);
  }

  state.peers = world.nprocs > 1;
  try {
    state.color = splitColor(world.procRank, env);
    const plan = planDevices(
      {
        first: firstDevice(world.localRank, options, env),
        localRanks: options.nThreads * options.nGpus,
        localProcesses: world.localSize,
        deviceCount: native.devices().count,
        version: library.version,
        versionCode: library.versionCode,
      },
      env,
    );
    if ('refusal' in plan) {
      throw new NcclEnvironmentError(
        `nccl backend unavailable (CUDA_TOO_FEW_DEVICES): ${plan.refusal}`,
        'CUDA_TOO_FEW_DEVICES',
      );
    }
    state.devices = plan;
    const info = await native.init({
      lib,
      procRank: world.procRank,
      nprocs: world.nprocs,
      localRank: world.localRank,
      localSize: world.localSize,
      nThreads: options.nThreads,
      nGpus: options.nGpus,
      firstDevice: plan.first,
      shareDevices: plan.sharing === 'own' ? 0 : 1,
      uniqueId: world.uniqueId,
      splitColor: state.color,
      streamNull: options.streamNull,
      ctaPolicy: options.ctaPolicy,
      localRegister: options.localRegister,
      timeoutSec: options.timeoutSec ? options.timeoutSec + NATIVE_BACKSTOP_EXTRA_SEC : 0,
      controlPlane: world.controlPlane,
      deviceImpl: options.deviceImpl,
      deviceCtaCount: options.deviceCtaCount,
    });
    return info;
  } catch (e) {
    shutdownMpi(state, true);
    throw environmentFailure(e, native);
  }
}

async function adjustOptions(options: ResolvedOptions, infoAny: BackendInfo, native: NativeBackend) {
  const info = infoAny as NcclInfo;
  // Combined over the job: the smallest compute capability and the smallest GPU memory.
  const mine = [
    Math.min(...info.devices.map((d) => d.ccMajor * 10 + d.ccMinor)),
    Math.min(...info.devices.map((d) => d.totalMemBytes)),
  ];
  const [minCc, minMem] = await native.allreduceAsync(mine, COMBINE.min); // under the watchdog (engine/bring-up.ts)
  const { dtypes, ops } = availableCases(options, info.library.features, minCc, `NCCL ${info.library.version}`);
  const reduced = memoryCappedMaxBytes(options.maxBytes, minMem);
  const maxBytes = reduced ?? options.maxBytes;
  const adjusted: ResolvedOptions = Object.freeze({
    ...options,
    dtypes: Object.freeze(dtypes) as DTypeName[],
    ops: Object.freeze(ops) as OpName[],
    maxBytes,
    minBytes: Math.min(options.minBytes, maxBytes),
  });
  return { options: adjusted, reducedMaxBytes: reduced };
}

/** Datatypes each -D kernel exists for (native nccl_device_kernels.cu); every one reduces with sum only. */
export const DEVICE_API_DTYPES: Record<1 | 2 | 3 | 4, readonly DTypeName[]> = {
  1: ['int8', 'uint8', 'int32', 'uint32', 'int64', 'uint64', 'half', 'float', 'double'],
  2: ['int8', 'uint8', 'int32', 'uint32', 'int64', 'uint64', 'half', 'float', 'double'],
  3: ['float', 'double'],
  4: ['float'],
};

/** What -D/-V ask that collbench's device-API kernels do not do: one UsageError line (exit 2), before any library work. */
export function refuseDeviceApiCases(options: ResolvedOptions): void {
  const impl = options.deviceImpl as 0 | 1 | 2 | 3 | 4;
  if (impl === 0) {
    if (options.deviceCtaCount !== 16)
      throw new UsageError('-V/--device_cta_count: sets the CTAs of the -D kernels; give -D 1..4 with it');
    return;
  }
  if (options.collective !== 'all_reduce') {
    throw new UsageError(
      `-D/--device_implementation: collbench's device-API kernels exist for all_reduce only, not ${options.collective}`,
    );
  }
  const types = DEVICE_API_DTYPES[impl];
  const badOps = options.ops.filter((o) => o !== 'sum');
  if (badOps.length > 0)
    throw new UsageError(`-D ${impl}: the device-API kernels reduce with sum only, not ${badOps.join(', ')} (-o sum)`);
  const badTypes = options.dtypes.filter((t) => !types.includes(t));
  if (badTypes.length > 0) {
    throw new UsageError(`-D ${impl}: no device-API kernel for ${badTypes.join(', ')}; it has ${types.join(', ')}`);
  }
}

/** The nccl driver of one run; `env` is where NCCL_TESTS_*, the launcher's and the rendezvous variables are read. */
export function createNcclDriver(env: Env = process.env): BackendDriver {
  const state: DriverState = {
    mpi: null,
    color: -1,
    peers: false,
    notes: [],
    devices: null,
    links: null,
    linksNote: null,
  };
  const linksLibrary = () => join(nativeDir(env), LINK_PROFILER_LIBRARY);
  return {
    prepare(options) {
      if (!options.links) return;
      const setup = linksSetup(linksLibrary(), process.env);
      state.linksNote = setup.note;
      if (setup.note) return;
      Object.assign(process.env, setup.env); // NCCL reads it from this process's environment at its first init
      state.links = linksLibrary();
    },
    validate(options) {
      refuseDeviceApiCases(options);
      if (options.links && !existsSync(linksLibrary())) {
        throw new UsageError(`--links: ${linksLibrary()} is not built (make native builds it beside the nccl module)`);
      }
      if (options.cudaGraph > 0 && options.streamNull) {
        throw new UsageError(
          '-G: CUDA graphs capture created streams; -y 1 uses the legacy default stream, which cannot be captured',
        );
      }
    },
    init: (native, options, limitSec) => initNccl(state, native, options, limitSec, env),
    adjust: adjustOptions,
    rankLine(infoAny) {
      const info = infoAny as NcclInfo;
      return info.devices.map((d): RankLineInfo => ({
        rank: d.worldRank,
        group: Math.max(state.color, 0),
        pid: info.pid,
        host: hostname().split('.')[0],
        device: d.ordinal,
        bus: gpuBusId(d.pciDomain, d.pciBus, d.pciDevice),
        name: d.name,
        ...(state.devices?.note ? { note: state.devices.note } : {}),
      }));
    },
    warnings(_options, _desc: CollectiveDescriptor, _info) {
      return [...state.notes, ...(state.linksNote ? [state.linksNote] : [])];
    },
    linkRows: (native, reset) => (state.links ? (native as NcclNative).linksRead(state.links, reset) : null),
    memoryUsage(native) {
      const m = (native as NcclNative).memoryUsage();
      const [initialization, userAllocated, collective] = native.allreduce(
        [m.initialization, m.userAllocated, m.collective],
        COMBINE.max,
      );
      return { initialization, userAllocated, collective };
    },
    shutdown: ({ leave }) => shutdownMpi(state, leave),
    perIterTimer: 'CUDA event timing',
    // ncclInvalidArgument: NCCL 2.24-2.28 refuse avg and mulsum (PreMulSum) on fp8 this way (issue 28).
    refusals: ['NCCL_INVALID_ARGUMENT'],
    deviceArrivals: true,
  };
}
