// `collbench bundle [-o FILE]`: one collbench-<version>-linux-<arch>.tar.xz that runs where there is no Node.js or npm
// (air-gapped GPU clusters): the Node runtime, dist/, the production dependencies, the built native modules, schema/,
// profiles/, POSIX launchers for collbench and the 11 nccl-tests names, and bundle/README.md.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import { flag, helpFlag } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { UsageError } from '../core/errors.js';
import { PROGRAMS } from '../core/types.js';
import { BACKENDS } from '../backends/registry.js';
import { nativeDir as builtModulesDir, packageRoot } from '../native/loader.js';
import { VERSION } from '../version.js';
import { LINK_PROFILER_LIBRARY } from '../backends/nccl-links.js';

/** The nccl-tests program names (from the collective list); each gets a launcher. */
export { PROGRAMS };

/** Written at the bundle's root; `collbench info` reads it to say it runs from a bundle and how it was built. */
export const BUNDLE_MANIFEST = 'BUNDLE.json';

/** Compressed size the bundle must stay under (issue: ≤ 40 MB; the node binary alone is ~23 MB of it). */
export const MAX_BUNDLE_BYTES = 40 * 1000 * 1000;

export interface BundleManifest {
  collbench: string;
  created: string;
  node: string;
  platform: string;
  arch: string;
  /** The build machine's glibc: the oldest the bundle is known to run on. */
  glibc: string | null;
  modules: string[];
  dependencies: string[];
}

const BUNDLE_FLAGS = [
  flag.text('o', 'output', 'output', 'Options', 'the tarball to write', {
    value: '<file>',
    defaultText: `collbench-${VERSION}-linux-<arch>.tar.xz`,
    check: (v) => (v === '' ? 'needs a file name' : null),
  }),
  flag.force('Options', 'replace an existing file (without it, it is refused before anything is staged)'),
  helpFlag('Options'),
] as const;

export const BUNDLE_OPTIONS: CommandOptions<typeof BUNDLE_FLAGS> = {
  command: 'bundle',
  usage: 'collbench bundle [-o FILE] [--force]',
  about:
    '  Writes a tarball of this Node.js runtime, the compiled JavaScript, production dependencies, every built native\n' +
    '  module, launchers for collbench and the *_perf programs, and a README. Extract it anywhere and run\n' +
    '  <dir>/bin/all_reduce_perf; no Node.js or npm needed there.',
  groups: ['Options'],
  flags: BUNDLE_FLAGS,
  footer: '',
};

export function bundleName(arch: string = process.arch): string {
  return `collbench-${VERSION}-linux-${arch}`;
}

interface LockPackage {
  dev?: boolean;
  optional?: boolean;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/**
 * The lockfile keys (node_modules/a, node_modules/a/node_modules/b, …) of the packages the runtime needs:
 * package.json's dependencies (build-time packages such as cmake-js are devDependencies), followed through package-lock.json with Node's resolution
 * (nearest node_modules upwards) — npm's own --omit=dev graph, read offline.
 */
export function runtimePackages(root: string): string[] {
  const lockPath = join(root, 'package-lock.json');
  if (!existsSync(lockPath))
    throw new UsageError(`bundle: ${lockPath} missing: run collbench bundle from a source tree`);
  const lock = JSON.parse(readFileSync(lockPath, 'utf8')) as { packages: Record<string, LockPackage> };
  const pkgs = lock.packages;
  const resolveDep = (name: string, from: string): string | null => {
    let base = from;
    for (;;) {
      const key = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (pkgs[key]) return key;
      if (!base) return null;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
  };
  const wanted = new Set<string>();
  const visit = (key: string, deps: Record<string, string>, optional: Set<string>): void => {
    for (const name of Object.keys(deps)) {
      const dep = resolveDep(name, key);
      if (dep === null) {
        if (optional.has(name)) continue;
        throw new UsageError(`bundle: ${name} (needed by ${key || 'collbench'}) is not in package-lock.json`);
      }
      if (!existsSync(join(root, dep))) {
        if (optional.has(name) || pkgs[dep]!.optional) continue; // another platform's optional package
        throw new UsageError(`bundle: ${dep} is not installed: run npm ci`);
      }
      if (wanted.has(dep)) continue;
      wanted.add(dep);
      const p = pkgs[dep]!;
      const opt = new Set([...Object.keys(p.optionalDependencies ?? {}), ...Object.keys(p.peerDependencies ?? {})]);
      visit(dep, { ...p.dependencies, ...p.optionalDependencies, ...p.peerDependencies }, opt);
    }
  };
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const top = manifest.dependencies ?? {};
  visit('', top, new Set());
  return [...wanted].sort();
}

/** Not shipped: TypeScript (sources and declarations), source maps, npm's .bin links. */
function shipped(path: string): boolean {
  const base = basename(path);
  return base !== '.bin' && !/\.(map|ts|mts|cts)$/.test(base);
}

function launcher(program: string): string {
  return `#!/bin/sh
# collbench bundle launcher for ${program}: runs it with the Node.js runtime inside this bundle, wherever
# the bundle was extracted and whatever PATH holds (a symlink to this script works too).
here="$(dirname "$(readlink -f "$0")")"
root="$(dirname "$here")"
exec "$root/node/bin/node" "$root/libexec/${program}" "$@"
`;
}

function glibcVersion(): string | null {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ?? null;
}

/** Fills the staging directory `top` with the bundle's tree; returns its manifest. */
export function stageBundle(top: string, root: string = packageRoot): BundleManifest {
  const dist = join(root, 'dist');
  if (!existsSync(join(dist, 'bin', 'collbench.js')))
    throw new UsageError(`bundle: ${dist} is not built: run make build`);
  const nativeDir = builtModulesDir();
  const modules = existsSync(nativeDir)
    ? readdirSync(nativeDir)
        .filter((f) => f.endsWith('.node'))
        .sort()
    : [];
  if (modules.length === 0) throw new UsageError(`bundle: no native module in ${nativeDir}: run make build`);
  const packages = runtimePackages(root);

  mkdirSync(join(top, 'node', 'bin'), { recursive: true });
  copyFileSync(process.execPath, join(top, 'node', 'bin', 'node'));
  chmodSync(join(top, 'node', 'bin', 'node'), 0o755);
  cpSync(dist, join(top, 'dist'), { recursive: true, filter: shipped });
  cpSync(join(root, 'schema'), join(top, 'schema'), { recursive: true });
  cpSync(join(root, 'profiles'), join(top, 'profiles'), { recursive: true }); // collbench accept's shipped profiles
  mkdirSync(join(top, 'build', 'Release'), { recursive: true });
  for (const m of modules) copyFileSync(join(nativeDir, m), join(top, 'build', 'Release', m));
  // --links loads the NCCL profiler plugin from beside the modules (backends/nccl-links.ts).
  const plugin = join(nativeDir, LINK_PROFILER_LIBRARY);
  if (existsSync(plugin)) copyFileSync(plugin, join(top, 'build', 'Release', LINK_PROFILER_LIBRARY));
  for (const key of packages) {
    const src = join(root, key);
    const nested = src + sep + 'node_modules';
    // Nested node_modules are packages of their own in the lockfile, copied (or left out) by that entry.
    cpSync(src, join(top, key), {
      recursive: true,
      dereference: true,
      filter: (p) => p !== nested && !p.startsWith(nested + sep) && shipped(p),
    });
  }
  // dist/ is ESM: the bundle's package.json says so, and names the version (nothing else reads it).
  writeFileSync(
    join(top, 'package.json'),
    JSON.stringify(
      {
        name: 'collbench',
        version: VERSION,
        private: true,
        type: 'module',
        description: 'collbench self-contained bundle (see README.md)',
      },
      null,
      2,
    ) + '\n',
  );
  // The launchers: bin/<name> (sh) → bundled node → libexec/<name>, a link to dist/bin/collbench.js whose
  // name selects the collective, exactly as the source tree's bin/ links do.
  mkdirSync(join(top, 'bin'));
  mkdirSync(join(top, 'libexec'));
  for (const p of ['collbench', ...PROGRAMS]) {
    writeFileSync(join(top, 'bin', p), launcher(p), { mode: 0o755 });
    symlinkSync(join('..', 'dist', 'bin', 'collbench.js'), join(top, 'libexec', p));
  }
  const manifest: BundleManifest = {
    collbench: VERSION,
    created: new Date().toISOString(),
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    glibc: glibcVersion(),
    modules,
    dependencies: packages.map((k) => k.replace(/^node_modules\//, '')),
  };
  writeFileSync(join(top, BUNDLE_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
  writeFileSync(join(top, 'README.md'), readme(root, manifest));
  return manifest;
}

function readme(root: string, m: BundleManifest): string {
  // The template opens with an HTML comment about itself: not for the bundle's reader.
  const template = readFileSync(join(root, 'bundle', 'README.md'), 'utf8').replace(/^<!--[\s\S]*?-->\n/, '');
  const modules = BACKENDS.map(({ name: b, system }) => {
    const built = m.modules.includes(`collbench_${b}.node`);
    return `| ${b} | ${built ? `build/Release/collbench_${b}.node` : 'not in this bundle (not built)'} | ${system.needs} |`;
  }).join('\n');
  const vars: Record<string, string> = {
    VERSION: m.collbench,
    NAME: bundleName(m.arch),
    ARCH: m.arch,
    NODE: m.node,
    GLIBC: m.glibc ?? 'unknown',
    CREATED: m.created,
    MODULES: modules,
    PROGRAMS: PROGRAMS.join(', '),
  };
  return template.replace(/\{\{(\w+)\}\}/g, (all, k: string) => vars[k] ?? all);
}

function run(cmd: string, args: string[], cwd?: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.error)
    throw new UsageError(
      `bundle: cannot run ${cmd}: ${r.error.message}${cmd === 'tar' || cmd === 'xz' ? ' (install tar and xz-utils)' : ''}`,
    );
  if (r.status !== 0) throw new Error(`bundle: ${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr.trim()}`);
}

/** Stages, then tars with xz -6 (reproducible order and owners) into `output`; returns its size in bytes. */
export function writeBundle(output: string, io: IO): number {
  if (process.platform !== 'linux')
    throw new UsageError(`bundle: only Linux bundles are supported (this is ${process.platform})`);
  const staging = mkdtempSync(join(tmpdir(), 'collbench-bundle-'));
  const name = bundleName();
  try {
    const m = stageBundle(join(staging, name));
    io.err(
      `collbench bundle: staged ${name} (Node.js ${m.node}, modules ${m.modules.join(' ')}, ${m.dependencies.length} packages)`,
    );
    const partial = `${output}.partial`;
    mkdirSync(dirname(output), { recursive: true });
    run(
      'tar',
      [
        '--sort=name',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        `--mtime=${m.created}`,
        '-I',
        'xz -6 -T0',
        '-cf',
        partial,
        name,
      ],
      staging,
    );
    renameSync(partial, output);
    return statSync(output).size;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

export async function bundleCommand(argv: string[], io: IO): Promise<number> {
  const { stop, positionals, values } = parseOptions(argv, BUNDLE_OPTIONS);
  if (stop === 'help') {
    io.out(commandHelp(BUNDLE_OPTIONS));
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError(`bundle: unknown argument '${positionals[0]}' (usage: collbench bundle [-o FILE] [--force])`);
  const file = resolve(values.output ?? `${bundleName()}.tar.xz`);
  if (existsSync(file) && !values.force) {
    throw new UsageError(`bundle: ${file} already exists; refusing to overwrite it (give --force to replace it)`);
  }
  const size = writeBundle(file, io);
  const mb = (size / 1e6).toFixed(1);
  io.out(`${file} (${mb} MB)`);
  if (size > MAX_BUNDLE_BYTES)
    io.err(`collbench bundle: warning: ${mb} MB is over the ${MAX_BUNDLE_BYTES / 1e6} MB budget`);
  return 0;
}
