// Finds and loads the native backend modules (build/Release/collbench_<name>.node) and, when one is
// missing, says exactly what is missing and how to get it (DESIGN.md §2: "the TS loader loads
// whichever exist and explains what is missing").
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeBackend } from './binding.js';

/** Backends in order of preference when none is asked for. */
export const BACKENDS = ['nccl', 'mpi', 'gloo'] as const;
export type BackendName = (typeof BACKENDS)[number];

const HOW_TO_GET: Record<BackendName, string> = {
  mpi: 'install OpenMPI (apt install openmpi-bin libopenmpi-dev) and run make',
  gloo: 'install Gloo (apt install libgloo-dev) and run make',
  nccl: 'install the CUDA toolkit (nvcc) and run make; NCCL itself is loaded at run time (--nccl-lib, COLLBENCH_NCCL_LIB)',
};

/** The package root: two levels above this file, in bench/ (tsx) and in dist/ (compiled) alike. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function modulePath(name: BackendName): string {
  const dir = process.env.COLLBENCH_NATIVE_DIR ?? join(packageRoot, 'build', 'Release');
  return join(dir, `collbench_${name}.node`);
}

export function builtBackends(): BackendName[] {
  return BACKENDS.filter((b) => existsSync(modulePath(b)));
}

export class BackendUnavailableError extends Error {}

/** Explains why no backend (or not the one asked for) can be used. */
export function missingBackendMessage(wanted: BackendName | null): string {
  if (wanted) return `backend ${wanted} is not built (${modulePath(wanted)} missing): ${HOW_TO_GET[wanted]}`;
  return `no backend built: ${HOW_TO_GET.mpi}`;
}

const requireNative = createRequire(import.meta.url);

export function requireBackend(name: BackendName): NativeBackend {
  try {
    return requireNative(modulePath(name)) as NativeBackend;
  } catch (e) {
    throw new BackendUnavailableError(
      `backend ${name} is built but cannot be loaded (${(e as Error).message.split('\n')[0]}): ${HOW_TO_GET[name]}`,
    );
  }
}

/** What a module's probe() says (modules whose library or devices may be missing at run time: nccl). */
interface Probing { probe?(o: { lib?: string }): { usable: boolean; reason?: string } }

/**
 * The backend asked for, or else the first built one (BACKENDS order) whose module says it can run
 * here: a built nccl module on a machine without a GPU or libnccl gives way to the next backend.
 * `probe.ncclLib` is --nccl-lib (the module reads COLLBENCH_NCCL_LIB itself).
 */
export function loadBackend(wanted: BackendName | null, probe: { ncclLib?: string | null } = {}):
  { name: BackendName; module: NativeBackend } {
  const built = builtBackends();
  if (wanted !== null) {
    if (!built.includes(wanted)) throw new BackendUnavailableError(missingBackendMessage(wanted));
    return { name: wanted, module: requireBackend(wanted) };
  }
  const passed: string[] = [];
  for (const name of built) {
    // A module whose system library is missing here (libmpi, libgloo) gives way to the next one.
    let module: NativeBackend;
    try { module = requireBackend(name); } catch (e) { passed.push((e as Error).message); continue; }
    const p = (module as Probing).probe?.({ lib: probe.ncclLib ?? undefined });
    if (!p || p.usable) return { name, module };
    passed.push(`${name}: ${p.reason ?? 'not usable here'}`);
  }
  if (passed.length === 0) throw new BackendUnavailableError(missingBackendMessage(null));
  throw new BackendUnavailableError(`no built backend can run here (${passed.join('; ')}); ${HOW_TO_GET.mpi}`);
}
