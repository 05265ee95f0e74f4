// The gloo driver's pure parts: where rank, world size, store and TCP address come from for each
// launcher (bench/backends/gloo.ts), and the --np launcher's plan and exit-status rules
// (bench/launch/local-ranks.ts).
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { glooNativeEnv, glooStorePlan, glooTransport, glooWorld } from '../../bench/backends/gloo.js';
import { resolveOptions } from '../../bench/config/resolve.js';
import { exitStatus, localRankEnv, localRanksPlan } from '../../bench/launch/local-ranks.js';

describe('glooWorld', () => {
  it('a plain process is a 1-rank world', () => {
    assert.deepEqual(glooWorld({}), { launcher: 'none', rank: 0, size: 1, localRank: 0, localSize: 1, runId: 'collbench' });
  });
  it('collbench --np children', () => {
    const w = glooWorld({ COLLBENCH_GLOO_LAUNCHER: 'collbench', RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '2', LOCAL_WORLD_SIZE: '4', COLLBENCH_GLOO_RUN_ID: 'np-1' });
    assert.deepEqual(w, { launcher: 'collbench', rank: 2, size: 4, localRank: 2, localSize: 4, runId: 'np-1' });
  });
  it('Open MPI\'s launcher wins over torchrun variables; the job id names the run', () => {
    const w = glooWorld({
      OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '3', OMPI_COMM_WORLD_LOCAL_RANK: '0', OMPI_COMM_WORLD_LOCAL_SIZE: '2',
      PMIX_NAMESPACE: '4242', RANK: '7', WORLD_SIZE: '9',
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
    assert.deepEqual(w, { launcher: 'torchrun', rank: 1, size: 2, localRank: 1, localSize: 2, runId: 'torchrun-127.0.0.1-29500' });
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
  it('the option wins, then the launcher\'s variable', () => {
    assert.deepEqual(glooStorePlan(multi, 'redis://h:1', { COLLBENCH_GLOO_STORE: 'file:/x' }), { store: 'redis://h:1', ownedDir: null });
    assert.deepEqual(glooStorePlan(multi, null, { COLLBENCH_GLOO_STORE: 'file:/x' }), { store: 'file:/x', ownedDir: null });
  });
  it('1 rank: no store; one host: a job directory in tmp; several hosts: refused', () => {
    assert.deepEqual(glooStorePlan(one, null, {}), { store: null, ownedDir: null });
    const dir = join(tmpdir(), 'collbench-gloo-torchrun-localhost-1234');
    assert.deepEqual(glooStorePlan(local, null, {}), { store: `file:${dir}`, ownedDir: dir });
    assert.throws(() => glooStorePlan(multi, null, {}), /--gloo-store: 2 ranks on several hosts \(torchrun launch\) need a store/);
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

describe('glooNativeEnv', () => {
  it('hands the native init everything it reads', () => {
    const options = resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooAlgo: 'bcube', glooIface: 'lo' });
    const { vars } = glooNativeEnv(options, { COLLBENCH_GLOO_LAUNCHER: 'collbench', RANK: '1', WORLD_SIZE: '2', COLLBENCH_GLOO_STORE: 'file:/s', COLLBENCH_GLOO_RUN_ID: 'r' });
    assert.deepEqual(vars, {
      COLLBENCH_GLOO_RANK: '1', COLLBENCH_GLOO_SIZE: '2', COLLBENCH_GLOO_LOCAL_RANK: '1', COLLBENCH_GLOO_LOCAL_SIZE: '2',
      COLLBENCH_GLOO_RUN_ID: 'r', COLLBENCH_GLOO_ALGO: 'bcube', COLLBENCH_GLOO_STORE: 'file:/s', COLLBENCH_GLOO_IFACE: 'lo',
    });
  });
});

describe('gloo options', () => {
  it('defaults and valid values', () => {
    const o = resolveOptions({ collective: 'reduce_scatter', backend: 'gloo', glooAlgo: 'legacy_halving_doubling', glooStore: 'redis://h:6379' });
    assert.equal(o.glooAlgo, 'legacy_halving_doubling');
    assert.equal(o.glooStore, 'redis://h:6379');
    assert.equal(resolveOptions({ collective: 'all_reduce' }).glooAlgo, 'default');
  });
  it('refusals', () => {
    assert.throws(() => resolveOptions({ collective: 'all_reduce', glooAlgo: 'ring' }), /glooAlgo: needs backend gloo/);
    assert.throws(() => resolveOptions({ collective: 'gather', backend: 'gloo', glooAlgo: 'ring' }), /gather has one Gloo implementation/);
    assert.throws(() => resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooStore: 'file:' }), /invalid store/);
    assert.throws(() => resolveOptions({ collective: 'all_reduce', backend: 'gloo', glooStore: 'redis://h:1/x' }), /invalid store/);
  });
});

describe('--np launcher', () => {
  it('re-runs the program without the launch flags', () => {
    assert.deepEqual(localRanksPlan({ np: 3, program: ['node', 'c.js'], argv: ['-b', '8', '--np', '3', '--backend', 'gloo'] }),
      { np: 3, command: 'node', args: ['c.js', '-b', '8', '--backend', 'gloo'] });
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
