// `collbench bundle` end to end (issue 7): build the tarball once, extract it, and run it the way a GPU node
// without Node.js would — PATH holding no node, an empty HOME, another working directory — single rank,
// 2 ranks under /usr/bin/mpirun, `--np 2`, `collbench info`; plus size, contents, and what each module needs (ldd).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binDir, footer, mpirunArgs, parseRows, repoRoot } from '../helpers/cli.js';
import { backendRecord } from '../../bench/backends/registry.js';
import { bundleName, MAX_BUNDLE_BYTES, PROGRAMS } from '../../bench/commands/bundle.js';
import type { InfoReport } from '../../bench/commands/info.js';
import type { BackendName } from '../../bench/core/types.js';

const work = mkdtempSync(join(tmpdir(), 'collbench-bundle-test-'));
const tarball = join(work, 'out', `${bundleName()}.tar.xz`);
const root = join(work, 'x', bundleName());
const home = join(work, 'home'); // empty HOME
const cwd = join(work, 'elsewhere'); // not the bundle, not the repo
const pathDir = join(work, 'path'); // PATH: only the tools the launchers and mpirun need, no node
const builtModules = readdirSync(join(repoRoot, 'build', 'Release'))
  .filter((f) => f.endsWith('.node'))
  .sort();
// The NCCL link profiler (--links) travels beside the modules when it was built.
const builtLibraries = readdirSync(join(repoRoot, 'build', 'Release')).filter(
  (f) => f === 'libcollbench_nccl_profiler.so',
);
const ncclCache = join(repoRoot, '.cache', 'nccl', 'nvidia', 'nccl', 'lib', 'libnccl.so.2');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
/** A clean environment: no inherited NODE_* or PATH entries; the bundle must bring everything itself. */
function bare(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: pathDir, HOME: home, LANG: 'C', ...extra };
}
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = bare(), timeout = 180_000): Run {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout });
  return { code: r.status, stdout: r.stdout ?? '', stderr: (r.stderr ?? '') + (r.error ? String(r.error) : '') };
}
function which(tool: string): string | null {
  const r = spawnSync('/bin/sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}
const EXPECTED_ROWS = 18; // 8 B … 1 MiB, factor 2
function assertTable(r: Run, what: string): void {
  assert.equal(r.code, 0, `${what} failed:\n${r.stdout}\n${r.stderr}`);
  const rows = parseRows(r.stdout);
  assert.equal(rows.length, EXPECTED_ROWS, `${what}: rows\n${r.stdout}`);
  assert.ok(
    rows.every((row) => row.oop.wrong === 0 && row.ip.wrong === 0),
    `${what}: wrong results\n${r.stdout}`,
  );
  assert.equal(footer(r.stdout).oobVerdict, 'OK');
}

describe('collbench bundle', () => {
  let build: Run;
  before(() => {
    for (const d of [home, cwd, pathDir, join(work, 'x')]) mkdirSync(d, { recursive: true });
    // The tools the launchers (readlink, dirname) and a local mpirun use; node is deliberately absent.
    for (const tool of ['readlink', 'dirname', 'mpirun', 'orterun', 'orted']) {
      const p = which(tool);
      if (p) symlinkSync(p, join(pathDir, tool));
    }
    const r = spawnSync(join(binDir, 'collbench'), ['bundle', '-o', tarball], {
      cwd: work,
      encoding: 'utf8',
      timeout: 600_000,
    });
    build = { code: r.status, stdout: r.stdout, stderr: r.stderr };
    if (build.code === 0) spawnSync('tar', ['-xJf', tarball, '-C', join(work, 'x')], { stdio: 'inherit' });
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  test('writes one collbench-<version>-linux-<arch>.tar.xz of at most 40 MB', () => {
    assert.equal(build.code, 0, build.stderr);
    assert.match(build.stdout, new RegExp(`${bundleName()}\\.tar\\.xz \\(\\d+\\.\\d MB\\)`));
    const size = statSync(tarball).size;
    assert.ok(size <= MAX_BUNDLE_BYTES, `bundle is ${(size / 1e6).toFixed(1)} MB`);
    assert.ok(size > 15e6, `bundle is only ${(size / 1e6).toFixed(1)} MB: the Node runtime cannot be in it`);
  });

  test('holds the runtime, dist, native modules, schema, launchers, README; no dev dependencies, TypeScript or maps', () => {
    assert.equal(build.code, 0, build.stderr);
    const node = join(root, 'node', 'bin', 'node');
    assert.ok(
      statSync(node).size === statSync(process.execPath).size,
      'the runtime is the one that built it, unstripped',
    );
    assert.ok(existsSync(join(root, 'dist', 'bin', 'collbench.js')));
    assert.deepEqual(readdirSync(join(root, 'build', 'Release')).sort(), [...builtModules, ...builtLibraries].sort());
    assert.ok(readdirSync(join(root, 'schema')).some((f) => f.endsWith('.schema.json')));
    // collbench accept: its shipped profiles and the runtime packages it loads them with
    assert.ok(
      existsSync(join(root, 'profiles', 'cpu-smoke.yaml')) && existsSync(join(root, 'profiles', 'h100-node.yaml')),
    );
    for (const dep of ['yaml', 'simple-statistics'])
      assert.ok(existsSync(join(root, 'node_modules', dep, 'package.json')), dep);
    for (const p of ['collbench', ...PROGRAMS]) {
      const text = readFileSync(join(root, 'bin', p), 'utf8');
      assert.match(text, /^#!\/bin\/sh\n/, p);
      assert.ok(text.includes('"$(dirname "$(readlink -f "$0")")"') && text.includes('/node/bin/node'), p);
    }
    const list = spawnSync('tar', ['-tJf', tarball], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout.split('\n');
    assert.deepEqual(
      list.filter((f) => /\.(ts|map)$/.test(f)),
      [],
      'TypeScript or source maps shipped',
    );
    assert.ok(
      list.every((f) => f === '' || f.startsWith(`${bundleName()}/`)),
      'one top directory',
    );
    const deps = readdirSync(join(root, 'node_modules'));
    for (const dev of ['typescript', 'tsx', 'playwright-core', 'cmake-js', '.bin'])
      assert.ok(!deps.includes(dev), `${dev} shipped`);
    assert.ok(!existsSync(join(root, 'node_modules', '@types', 'node')), '@types/node (a devDependency) shipped');
    for (const prod of ['ajv', 'cli-table3', 'csv-stringify', 'vega', 'vega-lite'])
      assert.ok(deps.includes(prod), `${prod} missing`);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    for (const s of [
      '--nccl-lib',
      'COLLBENCH_NCCL_LIB',
      'libmpi',
      'libgloo',
      'libnccl',
      'NVIDIA driver',
      'bin/collbench info',
    ])
      assert.ok(readme.includes(s), `README lacks ${s}`);
    assert.ok(!readme.includes('{{'), 'README template not filled');
  });

  test('ldd: every library a module needs beyond glibc/libstdc++ is one of its documented optional ones', (t) => {
    assert.equal(build.code, 0, build.stderr);
    if (!which('ldd')) return t.skip('no ldd');
    const base = /^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)[-.]/;
    for (const file of builtModules) {
      const name = file.replace(/^collbench_|\.node$/g, '') as BackendName;
      const r = spawnSync('ldd', [join(root, 'build', 'Release', file)], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const libs = r.stdout
        .split('\n')
        .map((l) => l.trim().split(/\s+/)[0]!)
        .filter(Boolean);
      const missing = r.stdout
        .split('\n')
        .filter((l) => l.includes('not found'))
        .map((l) => l.trim().split(/\s+/)[0]!);
      const undocumented = libs.filter(
        (l) => !base.test(l) && !l.startsWith('/') && !backendRecord(name).system.optional.test(l),
      );
      assert.deepEqual(undocumented, [], `${file} needs libraries its documentation does not name:\n${r.stdout}`);
      assert.deepEqual(
        missing.filter((l) => !backendRecord(name).system.optional.test(l)),
        [],
        `${file}:\n${r.stdout}`,
      );
    }
    // The GPU-node promise: the nccl module links neither libnccl, the CUDA runtime, MPI nor Gloo.
    if (builtModules.includes('collbench_nccl.node')) {
      const r = spawnSync('ldd', [join(root, 'build', 'Release', 'collbench_nccl.node')], { encoding: 'utf8' });
      assert.doesNotMatch(r.stdout, /libnccl|libcudart|libcuda\.|libmpi|libgloo/);
    }
  });

  test('runs without node on PATH, with an empty HOME, from another directory: info, 1 rank, 2 ranks under mpirun, --np 2', (t) => {
    assert.equal(build.code, 0, build.stderr);
    assert.notEqual(run('/bin/sh', ['-c', 'command -v node']).code, 0, 'node is reachable through PATH');
    const launcher = (p: string) => join(root, 'bin', p);

    const info = run(launcher('collbench'), [
      'info',
      '--json',
      ...(existsSync(ncclCache) ? ['--nccl-lib', ncclCache] : []),
    ]);
    assert.equal(info.code, 0, info.stderr);
    const report = JSON.parse(info.stdout) as InfoReport;
    assert.equal(report.installation.kind, 'bundle');
    assert.equal(report.node.execPath, join(root, 'node', 'bin', 'node'));
    assert.equal(readdirSync(home).length, 0, 'HOME was written to');
    const mpi = report.backends.find((b) => b.name === 'mpi')!;
    assert.ok(mpi.loadable && mpi.usable && /Open MPI/.test(mpi.version ?? ''), JSON.stringify(mpi));
    assert.ok(mpi.libraries.some((l) => /libmpi\.so/.test(l)));
    const nccl = report.backends.find((b) => b.name === 'nccl')!;
    if (builtModules.includes('collbench_nccl.node')) {
      assert.ok(nccl.loadable, nccl.reason ?? '');
      if (existsSync(ncclCache))
        assert.ok(nccl.nccl && 'version' in nccl.nccl && nccl.nccl.how === '--nccl-lib', JSON.stringify(nccl));
    }
    const text = run(launcher('collbench'), ['info']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^collbench \\d+\\.\\d+\\.\\d+\\n  installation  ${root} \\(bundle built`));
    assert.match(text.stdout, /^ {2}mpi +usable: Open MPI/m);

    const args = ['-b', '8', '-e', '1M', '-f', '2'];
    assertTable(run(launcher('all_reduce_perf'), args), 'single rank');

    // mpirun from /usr/bin starts the bundle's launcher; plm isolated: a one-node job needs no ssh on PATH.
    const two = run(join(pathDir, 'mpirun'), [
      ...mpirunArgs(2),
      '--mca',
      'plm',
      'isolated',
      launcher('all_reduce_perf'),
      ...args,
    ]);
    assertTable(two, 'mpirun -np 2');
    assert.match(two.stdout, /^# {2}Rank {2}1 /m);
    assert.match(two.stdout, /backend mpi/);

    // --np re-executes the bundled runtime (process.execPath) under mpirun.
    if (process.getuid?.() !== 0) return t.skip('--np: mpirun as non-root needs no flags; covered elsewhere');
    const np = run(
      launcher('all_reduce_perf'),
      [...args, '--np', '2'],
      bare({
        OMPI_ALLOW_RUN_AS_ROOT: '1',
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
        OMPI_MCA_plm: 'isolated',
        OMPI_MCA_rmaps_base_oversubscribe: '1',
      }),
    );
    assertTable(np, '--np 2');
    assert.match(np.stdout, /^# {2}Rank {2}1 /m);
  });

  test('on a node without node and without libmpi (mount namespace): mpi is unavailable and says why, gloo runs', (t) => {
    assert.equal(build.code, 0, build.stderr);
    if (!builtModules.includes('collbench_gloo.node') || !builtModules.includes('collbench_mpi.node'))
      return t.skip('needs mpi and gloo modules');
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-m', 'true']).status !== 0)
      return t.skip('needs root and unshare -m');
    const libmpi = spawnSync(
      '/bin/sh',
      [
        '-c',
        'ldd "$1" | sed -n "s/.*libmpi\\.so[^ ]* => \\([^ ]*\\).*/\\1/p"',
        'sh',
        join(root, 'build', 'Release', 'collbench_mpi.node'),
      ],
      { encoding: 'utf8' },
    ).stdout.trim();
    assert.ok(libmpi.startsWith('/'), `libmpi not found by ldd: '${libmpi}'`);
    const empty = join(work, 'empty');
    writeFileSync(empty, '');
    // Inside: /usr/bin/node and libmpi are an empty file; PATH is the system's own.
    const inNs = (cmd: string): Run =>
      run(
        'unshare',
        [
          '-m',
          '/bin/sh',
          '-c',
          `mount --bind "$1" "$(readlink -f /usr/bin/node)" 2>/dev/null; mount --bind "$1" "$(readlink -f "$2")" && exec env -i PATH=/usr/bin:/bin HOME="$3" /bin/sh -c "$4"`,
          'sh',
          empty,
          libmpi,
          home,
          cmd,
        ],
        { PATH: '/usr/bin:/bin' },
      );
    assert.notEqual(inNs('command -v node').code, 0, 'node still on PATH in the namespace');
    const info = inNs(`"${root}/bin/collbench" info`);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /^ {2}mpi +UNAVAILABLE\n {8}why: backend mpi is built but cannot be loaded \(.*libmpi/m);
    assert.match(info.stdout, /^ {2}gloo +usable/m);
    const run1 = inNs(`"${root}/bin/all_reduce_perf" -b 8 -e 1M -f 2`);
    assertTable(run1, 'gloo fallback');
    assert.match(run1.stdout, /backend gloo/);
    const forced = inNs(`"${root}/bin/all_reduce_perf" -b 8 -e 1M -f 2 --backend mpi`);
    assert.equal(forced.code, 5, forced.stderr);
    assert.match(forced.stderr, /^all_reduce_perf: backend mpi is built but cannot be loaded \(.*libmpi/);
  });
});
