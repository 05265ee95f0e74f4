// The one backend registry: per backend its name (in order of preference), what its module needs from the system,
// how --np starts its ranks and its driver. selectBackend() is the one way any command picks a backend (as
// torch.distributed keeps one table of backends and their constructors).
import { BackendUnavailableError } from '../core/errors.js';
import type { BackendName } from '../core/types.js';
import type { RankLauncher } from '../launch/mpirun.js';
import { slurmMpiRefusal } from '../launch/slurm.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import { moduleBuilt, modulePath, requireNativeModule } from '../native/loader.js';
import type { BackendDriver } from './driver.js';
import { createGlooDriver } from './gloo.js';
import { createMpiDriver } from './mpi.js';
import { createNcclDriver } from './nccl.js';
import { askNcclRas, type LibraryHangView } from './nccl-ras.js';

export interface BackendRecord {
  name: BackendName;
  /** How to get the module built (shown when it is missing). */
  howToGet: string;
  /** What the module needs from the system it runs on, beyond glibc and libstdc++ (which Node itself needs):
   *  `stems` name the libraries `collbench info` reports as loaded; `optional` matches every library `ldd`
   *  may find missing on a node without them (the bundle README documents both). */
  system: { stems: readonly string[]; optional: RegExp; needs: string };
  launcher: RankLauncher;
  /** A fresh driver for one run (drivers keep their run's state, never module-level state); `env` is where it
   *  reads the launcher's and the library's variables (default: process.env). */
  createDriver(env?: NodeJS.ProcessEnv): BackendDriver;
  /** When the watchdog expires: the library's own view of the hang, to print beside collbench's verdict and keep in
   *  the report (nccl: its RAS service). Absent: the library has no such service. */
  hangView?: (env: NodeJS.ProcessEnv, info: BackendInfo) => Promise<LibraryHangView>;
  /** What its bring-up waits for, named in the watchdog's line when that wait expires. */
  bringUp: string;
  /** Runs on GPUs: the launcher places its processes (collbench pins no loop thread), its module's probe() reports
   *  the CUDA devices and the libnccl it would load (`collbench info`), and it needs libnccl at run time. */
  gpu: boolean;
  /** Its library says, under NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING, which algorithm and protocol it chose per
   *  call: `compare` records that, and --tuner-csv can write it. */
  tuningLog: boolean;
  /** Its library's version is only known after init() (MPI): `collbench info` starts it alone, as a singleton,
   *  to read it. */
  versionFromInit: boolean;
  /** The report's libraryVersions key that holds the library's version (nccl's come from its own version fields). */
  reportVersionAs: 'mpi' | 'gloo' | null;
}

export const BACKENDS: readonly BackendRecord[] = Object.freeze([
  {
    name: 'nccl',
    howToGet:
      'install the CUDA toolkit (nvcc) and run make; NCCL itself is loaded at run time (--nccl-lib, COLLBENCH_NCCL_LIB)',
    system: {
      stems: ['libnccl.so', 'libcuda.so'],
      optional: /^$/, // nothing: the CUDA runtime is linked statically, libcuda and libnccl are dlopen'ed
      needs:
        'an NVIDIA driver (libcuda.so.1) and a libnccl.so.2, loaded at run time: --nccl-lib PATH or ' +
        'COLLBENCH_NCCL_LIB=PATH, else the system loader path and pip nvidia-nccl-cu* wheels in site-packages',
    },
    launcher: 'mpirun',
    createDriver: createNcclDriver,
    hangView: (env, info) => askNcclRas(env, info.libraryVersionShort.split(' ').slice(0, 2).join(' ')),
    bringUp: 'the NCCL bring-up (unique-id exchange, device choice, communicator init)',
    gpu: true,
    tuningLog: true,
    versionFromInit: false,
    reportVersionAs: null,
  },
  {
    name: 'mpi',
    howToGet: 'install OpenMPI (apt install openmpi-bin libopenmpi-dev) and run make',
    system: {
      stems: ['libmpi.so'],
      optional: /^lib(mpi|open-rte|open-pal|hwloc|event_core|event_pthreads|udev|z)[-.]/,
      needs:
        'Open MPI 4.x: libmpi.so.40 (Debian/Ubuntu: apt install libopenmpi3 openmpi-bin), mpirun for several ranks',
    },
    launcher: 'mpirun',
    createDriver: createMpiDriver,
    bringUp: 'the MPI bring-up',
    gpu: false,
    tuningLog: false,
    versionFromInit: true,
    reportVersionAs: 'mpi',
  },
  {
    name: 'gloo',
    howToGet: 'install Gloo (apt install libgloo-dev) and run make',
    system: {
      stems: ['libgloo.so'],
      optional: /^lib(gloo|hiredis|ibverbs|nl-3|nl-route-3)\./,
      needs: 'libgloo.so.0 and its libhiredis, libibverbs (Debian/Ubuntu: apt install libgloo0)',
    },
    launcher: 'local-processes',
    createDriver: createGlooDriver,
    bringUp: 'the Gloo bring-up (store rendezvous, connections)',
    gpu: false,
    tuningLog: false,
    versionFromInit: false,
    reportVersionAs: 'gloo',
  },
] satisfies BackendRecord[]);

export function backendRecord(name: BackendName): BackendRecord {
  return BACKENDS.find((b) => b.name === name)!;
}

/** The record of a name read from outside (a native module's info, another program's options), or null. */
export function findBackendRecord(name: string): BackendRecord | null {
  return BACKENDS.find((b) => b.name === name) ?? null;
}

/** Backends whose module is built, in order of preference. */
export function builtBackends(env: NodeJS.ProcessEnv = process.env): BackendName[] {
  return BACKENDS.filter((b) => moduleBuilt(b.name, env)).map((b) => b.name);
}

export function missingBackendMessage(wanted: BackendName | null, env: NodeJS.ProcessEnv = process.env): string {
  if (wanted)
    return `backend ${wanted} is not built (${modulePath(wanted, env)} missing): ${backendRecord(wanted).howToGet}`;
  return `no backend built: ${backendRecord('mpi').howToGet}`;
}

/** Loads a built module; a module whose system library is missing here becomes a BackendUnavailableError. */
export function requireBackend(name: BackendName, env: NodeJS.ProcessEnv = process.env): NativeBackend {
  try {
    return requireNativeModule<NativeBackend>(name, env);
  } catch (e) {
    throw new BackendUnavailableError(
      `backend ${name} is built but cannot be loaded (${(e as Error).message.split('\n')[0]}): ${backendRecord(name).howToGet}`,
    );
  }
}

/** What a module's probe() says (modules whose library or devices may be missing at run time: nccl). */
interface Probing {
  probe?(o: { lib?: string }): { usable: boolean; reason?: string; library?: { version: string; path: string } };
}

export interface SelectedBackend {
  record: BackendRecord;
  module: NativeBackend;
  /** Why a preferred backend whose library is here was passed over (nccl: libnccl found, no GPU visible), as the
   *  one stderr line a run prints (rank 0); null when nothing was, or only backends whose library is missing. */
  passedOver: string | null;
  /** That backend and why it cannot run here: a flag only it implements refuses the fallback (engine/preflight.ts). */
  fallbackFrom: { name: BackendName; why: string } | null;
}

/** Why a backend whose library loads cannot run (nccl without a GPU): what was found, and what CUDA said. */
function devicesMissing(
  name: BackendName,
  library: { version: string; path: string },
  reason: string,
  env: NodeJS.ProcessEnv,
): string {
  const cvd = env.CUDA_VISIBLE_DEVICES;
  const visible = cvd === undefined ? '' : `; CUDA_VISIBLE_DEVICES='${cvd}'`;
  return (
    `${name} is built and its library was found (${library.version}, ${library.path}), but no GPU is visible ` +
    `(${reason}${visible})`
  );
}

/**
 * The backend asked for, or else the first built one (in order of preference) whose module says it can
 * run here: a built nccl module on a machine without a GPU or libnccl gives way to the next backend, and
 * mpi does in an srun task without PMIx (where MPI_Init would abort), so plain `srun -n N` runs on gloo.
 * `probe.ncclLib` is --nccl-lib (the module reads COLLBENCH_NCCL_LIB itself). A backend passed over although its
 * library is here (nccl: libnccl found, no GPU visible) is said in `passedOver` and `fallbackFrom`.
 */
export function selectBackend(
  wanted: BackendName | null,
  probe: { ncclLib?: string | null } = {},
  env: NodeJS.ProcessEnv = process.env,
): SelectedBackend {
  const built = builtBackends(env);
  if (wanted !== null) {
    if (!built.includes(wanted)) throw new BackendUnavailableError(missingBackendMessage(wanted, env));
    return { record: backendRecord(wanted), module: requireBackend(wanted, env), passedOver: null, fallbackFrom: null };
  }
  const passed: string[] = [];
  let missing: { name: BackendName; why: string } | null = null;
  for (const name of built) {
    const refusal = name === 'mpi' ? slurmMpiRefusal(env) : null;
    if (refusal !== null) {
      passed.push(refusal);
      continue;
    }
    let module: NativeBackend;
    try {
      module = requireBackend(name, env);
    } catch (e) {
      passed.push((e as Error).message);
      continue;
    }
    const p = (module as Probing).probe?.({ lib: probe.ncclLib ?? undefined });
    if (!p || p.usable) {
      const passedOver = missing && `# Warning: ${missing.name} not used: ${missing.why}; running on ${name}`;
      return { record: backendRecord(name), module, passedOver, fallbackFrom: missing };
    }
    if (p.library && missing === null)
      missing = { name, why: devicesMissing(name, p.library, p.reason ?? 'not usable here', env) };
    passed.push(`${name}: ${p.reason ?? 'not usable here'}`);
  }
  if (passed.length === 0) throw new BackendUnavailableError(missingBackendMessage(null, env));
  throw new BackendUnavailableError(
    `no built backend can run here (${passed.join('; ')}); ${backendRecord('mpi').howToGet}`,
  );
}
