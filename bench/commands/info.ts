// `collbench info [--json] [--nccl-lib PATH]`: what this installation can run here: version, Node and glibc, each
// backend module (built? loadable? usable? why not?), the libraries it loads and the GPUs. The check to run first on
// a new node, and the answer to "why did it pick that backend".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import { flag, helpFlag } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { UsageError } from '../core/errors.js';
import { prepareSingletonMpi, underMpiLauncher } from '../launch/launcher.js';
import { slurmMpiRefusal } from '../launch/slurm.js';
import type { BackendInfo } from '../native/binding.js';
import { BACKENDS, backendRecord, requireBackend, selectBackend } from '../backends/registry.js';
import type { BackendName } from '../core/types.js';
import { modulePath, nativeDir, packageRoot } from '../native/loader.js';
import { filterEnv } from '../report/provenance.js';
import { VERSION } from '../version.js';
import { BUNDLE_MANIFEST, type BundleManifest } from './bundle.js';
import { ENV } from '../core/environment.js';
import { multiRankGpuSupport } from '../backends/nccl-devices.js';

export interface BackendReport {
  name: BackendName;
  built: boolean;
  loadable: boolean;
  usable: boolean;
  /** Why it is not built / not loadable / not usable here. */
  reason: string | null;
  modulePath: string;
  /** Library version as the module reports it (e.g. "Open MPI v4.1.4", "NCCL 2.30.7"). */
  version: string | null;
  /** Shared libraries this module brought into the process (realpaths), e.g. libmpi.so.40.30.4. */
  libraries: string[];
  /** nccl only: the libnccl it would load and how it was found. */
  nccl?:
    | { path: string; how: string; version: string; versionCode: number; deviceApi: string; multiRankGpu: string }
    | { error: string };
  /** nccl only: CUDA's view of the machine. */
  cuda?: { devices: number; driverVersion: number; runtimeVersion: number; error: string | null };
  /** What the module needs from the system (its registry record). */
  needs: string;
}

export interface InfoReport {
  collbench: string;
  installation: { root: string; kind: 'bundle' | 'source'; bundle: BundleManifest | null; nativeDir: string };
  node: { version: string; execPath: string; platform: string; arch: string; glibc: string | null };
  backends: BackendReport[];
  defaultBackend: BackendName | null;
  gpus: string[] | null;
  env: Record<string, string>;
}

function glibcVersion(): string | null {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ?? null;
}

/** Shared objects mapped into this process whose file name matches one of the stems (libmpi.so, …). */
function mappedLibraries(stems: readonly string[]): string[] {
  let maps: string;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return [];
  }
  const found = new Set<string>();
  for (const line of maps.split('\n')) {
    if (!line.includes('/')) continue;
    const path = line.slice(line.indexOf('/'));
    const base = path.slice(path.lastIndexOf('/') + 1);
    if (stems.some((s) => base.startsWith(s + '.'))) found.add(path);
  }
  return [...found].sort();
}

function readManifest(): BundleManifest | null {
  const path = `${packageRoot}/${BUNDLE_MANIFEST}`;
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as BundleManifest;
  } catch {
    return null;
  }
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
}

interface NcclProbe {
  usable: boolean;
  reason?: string;
  library?: {
    path: string;
    how: string;
    version: string;
    versionCode: number;
    deviceApiRefusal: string;
    deviceApiBuilt: number[];
  };
  devices: {
    count: number;
    cudaError: number;
    errorName: string;
    errorText: string;
    driverVersion: number;
    runtimeVersion: number;
  };
}

/** -D's device-API kernels against this library: which NCCL headers they were built for, and whether they run on it. */
function deviceApiLine(lib: NonNullable<NcclProbe['library']>): string {
  const built = lib.deviceApiBuilt.map((v) => `${Math.floor(v / 10000)}.${Math.floor(v / 100) % 100}.${v % 100}`);
  const what = built.length > 0 ? `built for NCCL ${built.join(', ')}` : 'none built';
  return lib.deviceApiRefusal === ''
    ? `${what}; usable with this library`
    : `${what}; not with this library: ${lib.deviceApiRefusal}`;
}

function probeBackend(name: BackendName, ncclLib: string | undefined): BackendReport {
  const system = backendRecord(name).system;
  const r: BackendReport = {
    name,
    built: existsSync(modulePath(name)),
    loadable: false,
    usable: false,
    reason: null,
    modulePath: modulePath(name),
    version: null,
    libraries: [],
    needs: system.needs,
  };
  if (!r.built) {
    r.reason = `not built (${r.modulePath} missing)`;
    return r;
  }
  let module;
  try {
    module = requireBackend(name);
  } catch (e) {
    r.reason = firstLine(e);
    return r;
  }
  r.loadable = true;
  r.libraries = mappedLibraries(system.stems);
  if (backendRecord(name).gpu) {
    const p = (module as unknown as { probe(o: { lib?: string }): NcclProbe }).probe({ lib: ncclLib });
    const d = p.devices;
    r.cuda = {
      devices: d.count,
      driverVersion: d.driverVersion,
      runtimeVersion: d.runtimeVersion,
      error: d.cudaError !== 0 ? `${d.errorName}: ${d.errorText}` : null,
    };
    if (p.library) {
      r.nccl = {
        path: p.library.path,
        how: p.library.how,
        version: p.library.version,
        versionCode: p.library.versionCode,
        deviceApi: deviceApiLine(p.library),
        multiRankGpu: multiRankGpuSupport(p.library.version, p.library.versionCode),
      };
      r.version = `NCCL ${p.library.version}`;
      r.libraries = mappedLibraries(system.stems);
    } else r.nccl = { error: p.reason ?? 'libnccl not found' };
    r.usable = p.usable;
    if (!p.usable) r.reason = p.reason ?? 'not usable here';
    return r;
  }
  if (backendRecord(name).versionFromInit) {
    if (underMpiLauncher()) {
      r.usable = true;
      r.version = null;
      return r;
    } // init would be collective
    // An srun task without PMIx: Open MPI would abort this process in MPI_Init.
    const refusal = slurmMpiRefusal();
    if (refusal !== null) {
      r.reason = refusal;
      return r;
    }
    try {
      prepareSingletonMpi();
      const info = module.init() as BackendInfo;
      r.version = info.libraryVersionShort || info.libraryVersion;
      module.finalize();
      r.usable = true;
    } catch (e) {
      r.reason = `MPI_Init failed: ${firstLine(e)}`;
    }
    return r;
  }
  // gloo: the version is the headers' (libgloo has no version call); a single rank needs no peers.
  r.usable = true;
  return r;
}

/** The backend a run would pick here (the one selectBackend() every command uses). */
function defaultBackend(ncclLib: string | undefined): BackendName | null {
  try {
    return selectBackend(null, { ncclLib }).record.name;
  } catch {
    return null;
  }
}

function gpuList(): string[] | null {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=index,name,pci.bus_id,memory.total,driver_version', '--format=csv,noheader'],
    { encoding: 'utf8', timeout: 15_000 },
  );
  if (r.error || r.status !== 0) return null;
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

export function collectInfo(ncclLib?: string): InfoReport {
  const manifest = readManifest();
  const env = filterEnv(process.env); // before probing: MPI_Init adds OMPI_* variables of its own
  const backends = BACKENDS.map((b) => probeBackend(b.name, ncclLib ?? process.env[ENV.NCCL_LIB]));
  return {
    collbench: VERSION,
    installation: { root: packageRoot, kind: manifest ? 'bundle' : 'source', bundle: manifest, nativeDir: nativeDir() },
    node: {
      version: process.version,
      execPath: realpathSync(process.execPath),
      platform: process.platform,
      arch: process.arch,
      glibc: glibcVersion(),
    },
    backends,
    defaultBackend: defaultBackend(ncclLib),
    gpus: gpuList(),
    env,
  };
}

function cudaVersion(v: number): string {
  return v > 0 ? `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}` : 'none';
}

export function formatInfo(info: InfoReport): string[] {
  const out: string[] = [];
  const b = info.installation.bundle;
  out.push(`collbench ${info.collbench}`);
  out.push(
    `  installation  ${info.installation.root} (${b ? `bundle built ${b.created} with Node.js ${b.node}, glibc ${b.glibc ?? '?'}` : 'source tree'})`,
  );
  out.push(
    `  runtime       Node.js ${info.node.version} ${info.node.platform}-${info.node.arch} (${info.node.execPath}), glibc ${info.node.glibc ?? 'unknown'}`,
  );
  if (b?.glibc && info.node.glibc && compareVersions(info.node.glibc, b.glibc) < 0)
    out.push(
      `  WARNING       this glibc ${info.node.glibc} is older than the build machine's ${b.glibc}: modules may fail to load`,
    );
  out.push(
    `  modules       ${info.installation.nativeDir}${process.env[ENV.NATIVE_DIR] ? ` (${ENV.NATIVE_DIR})` : ''}`,
  );
  out.push(`backends (in order of preference; default here: ${info.defaultBackend ?? 'none usable'})`);
  for (const r of info.backends) {
    const state = !r.built
      ? 'not built'
      : !r.loadable
        ? 'UNAVAILABLE'
        : r.usable
          ? 'usable'
          : 'loaded, not usable here';
    out.push(`  ${r.name.padEnd(5)} ${state}${r.version ? `: ${r.version}` : ''}`);
    if (r.reason) out.push(`        why: ${r.reason}`);
    if (r.nccl)
      out.push(
        'error' in r.nccl
          ? `        libnccl: not found (--nccl-lib PATH or COLLBENCH_NCCL_LIB=PATH)`
          : `        libnccl: NCCL ${r.nccl.version} (${r.nccl.versionCode}) ${r.nccl.path} (found via ${r.nccl.how})\n` +
              `        -D kernels: ${r.nccl.deviceApi}\n` +
              `        several ranks per GPU: ${r.nccl.multiRankGpu}`,
      );
    if (r.cuda)
      out.push(
        `        CUDA: ${r.cuda.devices} device(s), driver ${cudaVersion(r.cuda.driverVersion)}, runtime ${cudaVersion(r.cuda.runtimeVersion)}${r.cuda.error ? ` (${r.cuda.error})` : ''}`,
      );
    for (const lib of r.libraries) out.push(`        loads ${lib}`);
    if (r.built && !r.usable) out.push(`        needs: ${r.needs}`);
  }
  if (info.gpus) {
    out.push('GPUs (nvidia-smi)');
    for (const g of info.gpus) out.push(`  ${g}`);
  }
  const env = Object.entries(info.env).filter(([k]) => k !== ENV.ARGV);
  if (env.length > 0) {
    out.push('environment');
    for (const [k, v] of env) out.push(`  ${k}=${v}`);
  }
  return out;
}

function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number),
    pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

const INFO_FLAGS = [
  flag.toggle('json', 'json', 'Options', 'one JSON object instead of text'),
  flag.text(
    undefined,
    'nccl-lib',
    'ncclLib',
    'Options',
    'the libnccl.so.2 (or its directory) to try, as for a benchmark run',
    { value: '<path>', defaultText: ENV.NCCL_LIB, check: (v) => (v === '' ? 'needs a path' : null) },
  ),
  helpFlag('Options'),
] as const;

export const INFO_OPTIONS: CommandOptions<typeof INFO_FLAGS> = {
  command: 'info',
  usage: 'collbench info [--json] [--nccl-lib PATH]',
  about:
    "  Prints collbench's version, the Node.js runtime, each backend module (built, loadable, usable here, and why\n" +
    '  not), the libraries they load (libmpi, libgloo, the libnccl the nccl backend would use) and the GPUs.',
  groups: ['Options'],
  flags: INFO_FLAGS,
  footer: '',
};

export async function infoCommand(argv: string[], io: IO): Promise<number> {
  const { stop, positionals, values } = parseOptions(argv, INFO_OPTIONS);
  if (stop === 'help') {
    io.out(commandHelp(INFO_OPTIONS));
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError(`info: unknown argument '${positionals[0]}' (try collbench info --help)`);
  const info = collectInfo(values.ncclLib ?? undefined);
  if (values.json) io.out(JSON.stringify(info, null, 2));
  else for (const line of formatInfo(info)) io.out(line);
  return 0;
}
