// Where the native backend modules live (build/Release/collbench_<name>.node, or COLLBENCH_NATIVE_DIR) and
// how one is loaded. Knows no backend by name: which modules exist, their order of preference and what each
// needs are the backend registry's (bench/backends/registry.ts).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV } from '../core/environment.js';

/** The package root: two levels above this file, in bench/ (tsx) and in dist/ (compiled) alike. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The folder of the built modules. */
export function nativeDir(env: NodeJS.ProcessEnv = process.env): string {
  return env[ENV.NATIVE_DIR] ?? join(packageRoot, 'build', 'Release');
}

export function modulePath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(nativeDir(env), `collbench_${name}.node`);
}

export function moduleBuilt(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return existsSync(modulePath(name, env));
}

const requireNative = createRequire(import.meta.url);

/** Loads collbench_<name>.node; throws what the dynamic loader said (e.g. a system library is missing). */
export function requireNativeModule<T>(name: string, env: NodeJS.ProcessEnv = process.env): T {
  return requireNative(modulePath(name, env)) as T;
}
