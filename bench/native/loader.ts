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
  gloo: 'the gloo backend is not available in this version of collbench',
  nccl: 'the nccl backend is not available in this version of collbench',
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

export function loadBackend(wanted: BackendName | null): { name: BackendName; module: NativeBackend } {
  const built = builtBackends();
  const name = wanted ?? built[0];
  if (!name || !built.includes(name)) throw new BackendUnavailableError(missingBackendMessage(wanted));
  try {
    return { name, module: requireNative(modulePath(name)) as NativeBackend };
  } catch (e) {
    throw new BackendUnavailableError(
      `backend ${name} is built but cannot be loaded (${(e as Error).message.split('\n')[0]}): ${HOW_TO_GET[name]}`,
    );
  }
}
