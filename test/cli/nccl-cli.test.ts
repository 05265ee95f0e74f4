// The nccl backend through the built binaries without a GPU: a missing or wrong libnccl names where it
// looked; with the cached wheel's real libnccl, communicator init fails with one line naming
// ncclUnhandledCudaError and the CUDA driver (exit 5) alone, under mpirun and torchrun-style; the default
// backend choice passes over an unusable nccl. Skips, saying why, where that does not apply.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir, mpirunArgs, runMpirun, runProgram, type CliResult } from '../helpers/cli.js';
import { assertNoDevice, cachedNccl, NO_NCCL_ENV, ncclModulePath, ncclModule, visibleGpus } from '../helpers/nccl.js';
import { freePort } from '../helpers/net.js';
import { multiRankGpuSupport } from '../../bench/backends/nccl-devices.js';

const require = createRequire(import.meta.url);
const nccl = cachedNccl();
const gpus = visibleGpus();
const built = ncclModule() !== null;
const noModule = built ? false : 'the nccl module is not built (no nvcc)';
const needLib = noModule || (nccl ? false : 'no libnccl: no cached NCCL wheel to unpack');
const noGpuOnly = needLib || (gpus.count > 0 ? `this machine has ${gpus.count} GPU(s)` : false);
for (const s of new Set([noModule, needLib, noGpuOnly])) if (s) console.log(`# skipping some nccl CLI tests: ${s}`);

const clean = NO_NCCL_ENV;
const oneLine = (r: CliResult) => r.stderr.trim().split('\n').length === 1;

/** Does this machine have a libnccl the system loader or site-packages would find? */
function systemNcclFindable(): boolean {
  const r = spawnSync(
    process.execPath,
    ['-e', `try { require(${JSON.stringify(ncclModulePath)}).library({}); process.exit(0) } catch { process.exit(1) }`],
    { env: { ...process.env, ...clean }, encoding: 'utf8' },
  );
  return r.status === 0;
}

function runAsync(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    const c = spawn(join(binDir, program), args, { env: { ...process.env, ...env } });
    let stdout = '',
      stderr = '';
    c.stdout.on('data', (d) => {
      stdout += d;
    });
    c.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const noDevice = assertNoDevice;

describe('nccl backend: finding libnccl', { skip: noModule }, () => {
  it('no libnccl anywhere: exit 5, one line listing where it looked and how to point at one', (t) => {
    if (systemNcclFindable()) {
      t.skip('this machine has a libnccl the search finds');
      return;
    }
    const r = runProgram('all_reduce_perf', ['--backend', 'nccl', '-b', '8', '-e', '8'], {
      env: { ...clean, VIRTUAL_ENV: '/tmp/collbench-no-venv' },
    });
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.stdout, '');
    assert.ok(oneLine(r), r.stderr);
    assert.match(
      r.stderr,
      /^all_reduce_perf: nccl backend unavailable \(NCCL_NOT_FOUND\): libnccl not found; looked in: system loader: libnccl\.so\.2: cannot open shared object file/,
    );
    // the active virtualenv first among the site-packages layouts, then the usual prefixes
    assert.match(
      r.stderr,
      /\/tmp\/collbench-no-venv\/lib\/python3\*\/site-packages\/nvidia\/nccl\/lib\/libnccl\.so\.2 \(no match\)/,
    );
    assert.match(r.stderr, /\/usr\/local\/lib\/python3\*\/dist-packages\/nvidia\/nccl\/lib\/libnccl\.so\.2/);
    assert.ok(r.stderr.indexOf('collbench-no-venv') < r.stderr.indexOf('/usr/local/lib/python3'));
    assert.match(r.stderr, /point at one with --nccl-lib PATH or COLLBENCH_NCCL_LIB=PATH/);
  });

  it('--nccl-lib naming a missing file: only that one is tried', () => {
    const r = runProgram(
      'all_reduce_perf',
      ['--backend', 'nccl', '--nccl-lib', '/nonexistent/libnccl.so.2', '-b', '8', '-e', '8'],
      { env: clean },
    );
    assert.equal(r.code, 5, r.stderr);
    assert.ok(oneLine(r), r.stderr);
    assert.match(
      r.stderr,
      /cannot load libnccl from --nccl-lib: \/nonexistent\/libnccl\.so\.2 \(no such file\); point --nccl-lib or COLLBENCH_NCCL_LIB at/,
    );
    assert.doesNotMatch(r.stderr, /system loader|site-packages/);
  });

  it('COLLBENCH_NCCL_LIB naming a library that is not NCCL', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'nccl', '-b', '8', '-e', '8'], {
      env: { ...clean, COLLBENCH_NCCL_LIB: '/lib/x86_64-linux-gnu/libm.so.6' },
    });
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /from COLLBENCH_NCCL_LIB: .*libm\.so\.6 \(no ncclGetVersion: not an NCCL library\)/);
  });

  it('--nccl-lib with another backend named is a usage error', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'mpi', '--nccl-lib', '/x', '-b', '8', '-e', '8'], {
      env: clean,
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--nccl-lib: needs the nccl backend, not mpi/);
  });

  it('--help lists --nccl-lib and where the library is searched', () => {
    const r = runProgram('all_reduce_perf', ['--help']);
    assert.match(
      r.stdout,
      /--nccl-lib <path>\s+libnccl\.so\.2 \(or its directory\) for the nccl backend\s+\[NCCL\] \(default: COLLBENCH_NCCL_LIB, then/,
    );
  });

  it('flags collbench does not implement are refused on the nccl backend too (exit 2, before any library work)', () => {
    const refused = (program: string, args: string[], pattern: RegExp) => {
      const r = runProgram(program, ['--backend', 'nccl', ...args, '-b', '8', '-e', '8'], { env: clean });
      assert.equal(r.code, 2, r.stderr);
      assert.ok(oneLine(r), r.stderr);
      assert.match(r.stderr, pattern);
    };
    refused(
      'all_reduce_perf',
      ['-D', '1'],
      /^all_reduce_perf: -D: device implementation 1 needs symmetric buffer registration \(-R 2\)$/m,
    );
    refused(
      'all_gather_perf',
      ['-D', '1', '-R', '2'],
      /-D\/--device_implementation: .*all_reduce only, not all_gather/,
    );
    refused(
      'all_reduce_perf',
      ['-D', '2', '-R', '2', '-o', 'max'],
      /-D 2: the device-API kernels reduce with sum only, not max/,
    );
    refused(
      'all_reduce_perf',
      ['-D', '3', '-R', '2', '-d', 'half'],
      /-D 3: no device-API kernel for half; it has float, double/,
    );
    refused('all_reduce_perf', ['-D', '5', '-R', '2'], /^all_reduce_perf: -D: /);
    refused('all_reduce_perf', ['-V', '8'], /-V\/--device_cta_count: .*give -D 1\.\.4/);
    const g = runProgram('all_reduce_perf', ['--backend', 'nccl', '-G', '2', '-y', '1', '-b', '8', '-e', '8'], {
      env: clean,
    });
    assert.equal(g.code, 2, g.stderr);
    assert.match(g.stderr, /^all_reduce_perf: -G: CUDA graphs capture created streams/);
  });
});

describe('nccl backend with the real libnccl and no GPU', { skip: noGpuOnly }, () => {
  it('--nccl-lib: communicator init fails cleanly: exit 5, one line, ncclUnhandledCudaError and the CUDA driver, NCCL version and path', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-b', '8', '-e', '8'], {
      env: clean,
    });
    noDevice(r);
    assert.ok(r.stderr.includes(`; NCCL 2.`), r.stderr);
    assert.ok(r.stderr.trim().endsWith(nccl!.lib), r.stderr);
  });

  it('COLLBENCH_NCCL_LIB (a directory) works the same, for every collective binary', () => {
    for (const p of ['reduce_scatter_perf', 'alltoall_perf', 'hypercube_perf']) {
      const r = runProgram(p, ['--backend', 'nccl', '-b', '8', '-e', '8'], {
        env: { ...clean, COLLBENCH_NCCL_LIB: join(nccl!.lib, '..') },
      });
      noDevice(r, p);
    }
  });

  it('several ranks per process (-t 2 -g 2) and GPU flags reach the device check the same way', () => {
    const r = runProgram(
      'all_reduce_perf',
      [
        '--backend',
        'nccl',
        '--nccl-lib',
        nccl!.lib,
        '-t',
        '2',
        '-g',
        '2',
        '-G',
        '3',
        '-R',
        '1',
        '-x',
        '1',
        '-M',
        '1',
        '-b',
        '8',
        '-e',
        '8',
      ],
      { env: clean },
    );
    noDevice(r);
  });

  it('-D with the real libnccl: refused in one line (exit 5) when no kernel variant matches its device API, else it reaches the device check', () => {
    const lib = (
      require(ncclModulePath) as {
        library(o: { lib: string }): { deviceApiRefusal: string; deviceApiBuilt: number[]; version: string };
      }
    ).library({ lib: nccl!.lib });
    const r = runProgram(
      'all_reduce_perf',
      ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-D', '1', '-R', '2', '-b', '8', '-e', '8'],
      { env: clean },
    );
    const minor = (v: number) => Math.floor(v / 100);
    const [maj, min] = lib.version.split('.').map(Number);
    const loaded = maj * 100 + min;
    const matching = lib.deviceApiBuilt.some((b) => (minor(b) < 229 ? minor(b) === loaded : loaded >= minor(b)));
    assert.equal(
      lib.deviceApiRefusal === '',
      matching,
      `${lib.deviceApiRefusal} / built ${lib.deviceApiBuilt.join(',')}`,
    );
    const info = runProgram('collbench', ['info', '--nccl-lib', nccl!.lib], { env: clean });
    assert.match(
      info.stdout,
      matching
        ? /^ {8}-D kernels: built for NCCL [0-9., ]+; usable with this library$/m
        : /^ {8}-D kernels: (built for NCCL [0-9., ]+|none built); not with this library: /m,
    );
    if (matching) {
      noDevice(r);
      return;
    }
    assert.equal(r.code, 5, r.stderr);
    assert.ok(oneLine(r), r.stderr);
    assert.match(
      r.stderr,
      lib.deviceApiBuilt.length === 0
        ? /-D 1: this collbench was built without NCCL's device-API headers/
        : new RegExp(
            `-D 1: the device-API kernels were built against NCCL .*loaded NCCL ${lib.version.replace(/\./g, '\\.')}`,
          ),
    );
  });

  it('collbench info says how the loaded NCCL puts several ranks on one GPU, from the version the library reports', () => {
    const lib = (
      require(ncclModulePath) as { library(o: { lib: string }): { version: string; versionCode: number } }
    ).library({ lib: nccl!.lib });
    const info = runProgram('collbench', ['info', '--nccl-lib', nccl!.lib], { env: clean });
    const line = info.stdout.split('\n').find((l) => l.startsWith('        several ranks per GPU: '));
    assert.equal(
      line?.trim(),
      `several ranks per GPU: ${multiRankGpuSupport(lib.version, lib.versionCode)}`,
      info.stdout,
    );
    assert.match(
      line!,
      lib.versionCode >= 23000
        ? /NCCL_MULTI_RANK_GPU_ENABLE=1 \(NCCL 2\.\d+\.\d+ has it\)/
        : /a distinct NCCL_HOSTID per rank \(NCCL 2\.\d+\.\d+; NCCL_MULTI_RANK_GPU_ENABLE needs 2\.30 or newer\)/,
    );
  });

  it('no backend named: the unusable nccl module gives way to mpi', () => {
    const r = runProgram('all_reduce_perf', ['--nccl-lib', nccl!.lib, '-b', '8', '-e', '8'], { env: clean });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend mpi /m);
  });

  it("torchrun-style, 2 processes: the TCP rendezvous hands rank 0's unique id to rank 1; both fail at the device alike", async () => {
    const port = await freePort();
    const env = (rank: number) => ({
      ...clean,
      COLLBENCH_NCCL_LIB: nccl!.lib,
      RANK: String(rank),
      WORLD_SIZE: '2',
      LOCAL_RANK: String(rank),
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: String(port),
      COLLBENCH_RENDEZVOUS_TIMEOUT: '30',
    });
    const [r0, r1] = await Promise.all(
      [0, 1].map((rank) => runAsync('all_reduce_perf', ['--backend', 'nccl', '-b', '8', '-e', '8'], env(rank))),
    );
    noDevice(r0);
    noDevice(r1);
  });

  it('torchrun-style with rank 0 missing: rank 1 fails after the rendezvous timeout with one line (exit 5)', async () => {
    const port = await freePort();
    const r = await runAsync('all_reduce_perf', ['--backend', 'nccl', '-b', '8', '-e', '8'], {
      ...clean,
      COLLBENCH_NCCL_LIB: nccl!.lib,
      RANK: '1',
      WORLD_SIZE: '2',
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: String(port),
      COLLBENCH_RENDEZVOUS_TIMEOUT: '1',
    });
    assert.equal(r.code, 5, r.stderr);
    assert.ok(oneLine(r), r.stderr);
    assert.match(
      r.stderr,
      /nccl backend unavailable: rendezvous: rank 1 could not reach rank 0 at 127\.0\.0\.1:\d+ within 1s \(ECONNREFUSED\)/,
    );
  });

  it('torchrun-style variables that do not add up are refused (exit 5, naming them)', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'nccl', '-b', '8', '-e', '8'], {
      env: { ...clean, COLLBENCH_NCCL_LIB: nccl!.lib, WORLD_SIZE: '2', RANK: '0' },
    });
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /WORLD_SIZE=2 needs MASTER_ADDR, MASTER_PORT too/);
  });

  it('under mpirun (2 ranks): MPI broadcasts the unique id; every rank fails at the device the same way', (t) => {
    if (spawnSync('mpirun', ['--version']).status !== 0) {
      t.skip('no mpirun');
      return;
    }
    void mpirunArgs;
    const r = runMpirun(2, 'all_reduce_perf', ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-b', '8', '-e', '8'], {
      env: clean,
    });
    assert.equal(r.code, 5, r.stderr + r.stdout);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('all_reduce_perf: '));
    assert.ok(lines.length >= 1, r.stderr);
    for (const l of lines)
      assert.match(
        l,
        /nccl backend unavailable \(NCCL_UNHANDLED_CUDA_ERROR\): no CUDA device: .*ncclCommInitRank failed: ncclUnhandledCudaError/,
      );
  });
});
