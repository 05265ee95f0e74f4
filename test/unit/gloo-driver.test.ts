// The gloo driver's pure parts: where rank, world size, store and TCP address come from for each
// launcher and the init config built from them and the environment (bench/backends/gloo.ts), and the
// --np launcher's plan and exit-status rules (bench/launch/local-ranks.ts).
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { rmSync, statSync } from 'node:fs';
import {
  createGlooDriver,
  glooInitConfig,
  glooStorePlan,
  glooTransport,
  glooWorld,
  type GlooInitConfig,
} from '../../bench/backends/gloo.js';
import type { NativeBackend } from '../../bench/native/binding.js';
import { UsageError } from '../../bench/core/errors.js';
import { resolveOptions } from '../../bench/config/resolve.js';
import { exitStatus, localRankEnv, localRanksPlan } from '../../bench/launch/local-ranks.js';

describe('glooWorld', () => {
  it('a plain process is a 1-rank world', () => {
    assert.deepEqual(glooWorld({}), {
      launcher: 'none',
      rank: 0,
      size: 1,
      localRank: 0,
      localSize: 1,
      runId: 'collbench',
    });
  });
  it('collbench --np children', () => {
    const w = glooWorld({
      COLLBENCH_GLOO_LAUNCHER: 'collbench',
      RANK: '2',
      WORLD_SIZE: '4',
      LOCAL_RANK: '2',
      LOCAL_WORLD_SIZE: '4',
      COLLBENCH_GLOO_RUN_ID: 'np-1',
    });
    assert.deepEqual(w, { launcher: 'collbench', rank: 2, size: 4, localRank: 2, localSize: 4, runId: 'np-1' });
  });
  it("Open MPI's launcher wins over torchrun variables; the job id names the run", () => {
    const w = glooWorld({
      OMPI_COMM_WORLD_RANK: '1',
      OMPI_COMM_WORLD_SIZE: '3',
      OMPI_COMM_WORLD_LOCAL_RANK: '0',
      OMPI_COMM_WORLD_LOCAL_SIZE: '2',
      PMIX_NAMESPACE: '4242',
      RANK: '7',
      WORLD_SIZE: '9',
    });
    assert.deepEqual(w, { launcher: 'mpi', rank: 1, size: 3, localRank: 0, localSize: 2, runId: 'mpi-4242' });
  });
  it('MPICH-style PMI variables', () => {
    const w = glooWorld({ PMI_RANK: '0', PMI_SIZE: '2' });
    assert.equal(w.launcher, 'mpi');
    assert.equal(w.size, 2);
  });
  it('torchrun-style variables; a loopback master means one host', () => {
    const w = glooWorld({ RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '29500' });
    assert.deepEqual(w, {
      launcher: 'torchrun',
      rank: 1,
      size: 2,
      localRank: 1,
      localSize: 2,
      runId: 'torchrun-127.0.0.1-29500',
    });
    assert.equal(glooWorld({ RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: 'node7' }).localSize, 1);
    assert.equal(glooWorld({ RANK: '0', WORLD_SIZE: '2', TORCHELASTIC_RUN_ID: 'job9' }).runId, 'torchrun-job9');
  });
  it('refuses a rank outside the world and garbage numbers', () => {
    assert.throws(() => glooWorld({ RANK: '2', WORLD_SIZE: '2' }), /rank 2 is not in a world of 2 ranks/);
    assert.throws(() => glooWorld({ RANK: 'x', WORLD_SIZE: '2' }), /RANK=x is not a rank or size/);
  });
});

describe('glooStorePlan', () => {
  const one = glooWorld({});
  const local = glooWorld({ RANK: '0', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2', MASTER_PORT: '1234' });
  const multi = glooWorld({ RANK: '0', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '1' });
  it("the option wins, then the launcher's variable", () => {
    assert.deepEqual(glooStorePlan(multi, 'redis://h:1', { COLLBENCH_GLOO_STORE: 'file:/x' }), {
      store: 'redis://h:1',
      ownedDir: null,
    });
    assert.deepEqual(glooStorePlan(multi, null, { COLLBENCH_GLOO_STORE: 'file:/x' }), {
      store: 'file:/x',
      ownedDir: null,
    });
  });
  it('1 rank: no store; one host: a job directory in tmp; several hosts: refused', () => {
    assert.deepEqual(glooStorePlan(one, null, {}), { store: null, ownedDir: null });
    const dir = join(tmpdir(), 'collbench-gloo-torchrun-localhost-1234');
    assert.deepEqual(glooStorePlan(local, null, {}), { store: `file:${dir}`, ownedDir: dir });
    assert.throws(
      () => glooStorePlan(multi, null, {}),
      /--gloo-store: 2 ranks on several hosts \(torchrun launch\) need a store/,
    );
  });
});

describe('glooTransport', () => {
  const local = glooWorld({ RANK: '0', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2' });
  const multi = glooWorld({ RANK: '0', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '1' });
  it('an address or an interface name; GLOO_SOCKET_IFNAME as PyTorch reads it; loopback on one host', () => {
    assert.deepEqual(glooTransport(multi, '10.250.0.2', {}), { hostname: '10.250.0.2' });
    assert.deepEqual(glooTransport(multi, 'eth1', {}), { iface: 'eth1' });
    assert.deepEqual(glooTransport(multi, null, { GLOO_SOCKET_IFNAME: 'ib0,ib1' }), { iface: 'ib0' });
    assert.deepEqual(glooTransport(local, null, {}), { hostname: '127.0.0.1' });
    assert.ok(glooTransport(multi, null, {}).hostname);
  });
});

describe('glooInitConfig', () => {
  const collbenchRank1 = {
    COLLBENCH_GLOO_LAUNCHER: 'collbench',
    RANK: '1',
    WORLD_SIZE: '2',
    COLLBENCH_GLOO_STORE: 'file:/s',
    COLLBENCH_GLOO_RUN_ID: 'r',
  };
  it('hands the native init everything it needs, in one typed object', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooAlgo: 'bcube', glooIface: 'lo' });
    const { config, ownedDir, world } = glooInitConfig(options, collbenchRank1);
    assert.deepEqual(config, {
      rank: 1,
      size: 2,
      localRank: 1,
      localSize: 2,
      runId: 'r',
      algo: 'bcube',
      store: 'file:/s',
      iface: 'lo',
      timeoutMs: 30000,
      float16: 'gloo',
    });
    assert.equal(ownedDir, null);
    assert.equal(world.launcher, 'collbench');
  });
  it('a 1-rank world: no store; loopback; the defaults', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo' });
    assert.deepEqual(glooInitConfig(options, {}).config, {
      rank: 0,
      size: 1,
      localRank: 0,
      localSize: 1,
      runId: 'collbench',
      algo: 'default',
      hostname: '127.0.0.1',
      timeoutMs: 30000,
      float16: 'gloo',
    });
  });
  it('one host without a store: a job directory the driver creates', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo' });
    const { config, ownedDir } = glooInitConfig(options, {
      RANK: '0',
      WORLD_SIZE: '2',
      LOCAL_WORLD_SIZE: '2',
      MASTER_PORT: '77',
    });
    const dir = join(tmpdir(), 'collbench-gloo-torchrun-localhost-77');
    assert.equal(config.store, `file:${dir}`);
    assert.equal(ownedDir, dir);
  });
  it('COLLBENCH_GLOO_TIMEOUT_MS, COLLBENCH_GLOO_FLOAT16 and GLOO_SOCKET_IFNAME from the given environment', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo' });
    const { config } = glooInitConfig(options, {
      ...collbenchRank1,
      COLLBENCH_GLOO_TIMEOUT_MS: '2000',
      COLLBENCH_GLOO_FLOAT16: 'collbench',
      GLOO_SOCKET_IFNAME: 'eth3,eth4',
    });
    assert.equal(config.timeoutMs, 2000);
    assert.equal(config.float16, 'collbench');
    assert.equal(config.iface, 'eth3');
    assert.equal(config.hostname, undefined);
    assert.equal(glooInitConfig(options, { COLLBENCH_GLOO_TIMEOUT_MS: '' }).config.timeoutMs, 30000);
  });
  it('bad values are usage errors naming the variable', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo' });
    for (const bad of ['0', '-5', '1.5', 'soon', String(2 ** 31)]) {
      assert.throws(
        () => glooInitConfig(options, { COLLBENCH_GLOO_TIMEOUT_MS: bad }),
        (e) => e instanceof UsageError && /COLLBENCH_GLOO_TIMEOUT_MS/.test(e.message),
        bad,
      );
    }
    for (const bad of ['', 'native', 'GLOO']) {
      assert.throws(
        () => glooInitConfig(options, { COLLBENCH_GLOO_FLOAT16: bad }),
        (e) => e instanceof UsageError && /COLLBENCH_GLOO_FLOAT16/.test(e.message),
        bad,
      );
    }
  });
});

describe('gloo options', () => {
  it('defaults and valid values', () => {
    const o = resolveOptions({
      collective: 'reduce_scatter',
      backend: 'gloo',
      glooAlgo: 'legacy_halving_doubling',
      glooStore: 'redis://h:6379',
    });
    assert.equal(o.glooAlgo, 'legacy_halving_doubling');
    assert.equal(o.glooStore, 'redis://h:6379');
    assert.equal(resolveOptions({ collective: 'all_reduce' }).glooAlgo, 'default');
  });
  it('refusals', () => {
    assert.throws(() => resolveOptions({ collective: 'all_reduce', glooAlgo: 'ring' }), /glooAlgo: needs backend gloo/);
    assert.throws(
      () => resolveOptions({ collective: 'gather', backend: 'gloo', glooAlgo: 'ring' }),
      /gather has one Gloo implementation/,
    );
    assert.throws(
      () => resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooStore: 'file:' }),
      /invalid store/,
    );
    assert.throws(
      () => resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooStore: 'redis://h:1/x' }),
      /invalid store/,
    );
  });
});

describe('--np launcher', () => {
  it("runs the program with the ranks' arguments", () => {
    assert.deepEqual(localRanksPlan({ np: 3, program: ['node', 'c.js'], args: ['-b', '8', '--backend', 'gloo'] }), {
      np: 3,
      command: 'node',
      args: ['c.js', '-b', '8', '--backend', 'gloo'],
    });
  });
  it('tells each rank its place and the store', () => {
    const e = localRankEnv({ PATH: '/bin' }, 1, 3, '/tmp/s', 'np-9');
    assert.equal(e.PATH, '/bin');
    assert.equal(e.RANK, '1');
    assert.equal(e.WORLD_SIZE, '3');
    assert.equal(e.LOCAL_WORLD_SIZE, '3');
    assert.equal(e.COLLBENCH_GLOO_STORE, 'file:/tmp/s');
    assert.equal(e.COLLBENCH_GLOO_LAUNCHER, 'collbench');
  });
  it('exit statuses as a shell reports them', () => {
    assert.equal(exitStatus(7, null), 7);
    assert.equal(exitStatus(null, 'SIGKILL'), 137);
    assert.equal(exitStatus(null, 'SIGTERM'), 143);
  });
});

describe('the store directory a launch gets by default', () => {
  it('is private to its owner (0700): other users cannot read or plant the rendezvous keys', async () => {
    const runId = `unit-${process.pid}-${Date.now()}`;
    const env = { OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', COLLBENCH_GLOO_RUN_ID: runId };
    let given: GlooInitConfig | null = null;
    // The directory is made before the module is asked to connect; this stand-in only records what it is given.
    const native = {
      init: (c: GlooInitConfig) => {
        given = c;
        return { rank: 1, nranks: 2 };
      },
    } as unknown as NativeBackend;
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo' });
    await createGlooDriver(env).init!(native, options, 0);
    const dir = join(tmpdir(), `collbench-gloo-${runId}`);
    assert.equal(given!.store, `file:${dir}`);
    try {
      assert.equal(statSync(dir).mode & 0o777, 0o700);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
