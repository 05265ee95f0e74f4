// The torchrun-style launch of the nccl backend: environment parsing and the TCP rendezvous (real
// sockets on the loopback interface, ranks as concurrent participants or separate processes).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { localRanksByHost, rendezvous, RendezvousError, torchrunEnv, type TorchrunEnv } from '../../bench/launch/rendezvous.js';
import { freePort } from '../helpers/net.js';

/** A TCP port nothing listens on right now. */

const world = (rank: number, worldSize: number, port: number): TorchrunEnv =>
  ({ rank, worldSize, localRank: null, masterAddr: '127.0.0.1', masterPort: port });

describe('torchrunEnv', () => {
  it('reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT', () => {
    assert.deepEqual(torchrunEnv({ RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '0', MASTER_ADDR: 'h0', MASTER_PORT: '29500' }),
      { rank: 2, worldSize: 4, localRank: 0, masterAddr: 'h0', masterPort: 29500 });
    assert.equal(torchrunEnv({ RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'h0', MASTER_PORT: '1' })?.localRank, null);
  });
  it('no world without WORLD_SIZE, or with WORLD_SIZE 1 and no master', () => {
    assert.equal(torchrunEnv({}), null);
    assert.equal(torchrunEnv({ WORLD_SIZE: '1', RANK: '0' }), null);
  });
  it('refuses inconsistent variables, naming them', () => {
    assert.throws(() => torchrunEnv({ WORLD_SIZE: '2', RANK: '0' }), /needs MASTER_ADDR, MASTER_PORT/);
    assert.throws(() => torchrunEnv({ WORLD_SIZE: '2', RANK: '2', MASTER_ADDR: 'h', MASTER_PORT: '1' }), /RANK must be an integer in 0..1/);
    assert.throws(() => torchrunEnv({ WORLD_SIZE: 'x' }), /WORLD_SIZE must be a positive integer/);
    assert.throws(() => torchrunEnv({ WORLD_SIZE: '2', RANK: '1', MASTER_ADDR: 'h', MASTER_PORT: '70000' }), /MASTER_PORT/);
    assert.throws(() => torchrunEnv({ WORLD_SIZE: '2', RANK: '1', MASTER_ADDR: 'h', MASTER_PORT: '1', LOCAL_RANK: 'a' }), /LOCAL_RANK/);
  });
});

describe('rendezvous over TCP', () => {
  it('every rank receives every payload in rank order (4 ranks, rank 0 starting last)', async () => {
    const port = await freePort();
    const others = [1, 2, 3].map((r) => rendezvous(world(r, 4, port), `payload ${r}`, 10_000));
    await new Promise((r) => setTimeout(r, 300)); // the others retry until rank 0 listens
    const all = await Promise.all([rendezvous(world(0, 4, port), 'payload 0', 10_000), ...others]);
    for (const got of all) assert.deepEqual(got, ['payload 0', 'payload 1', 'payload 2', 'payload 3']);
  });

  it('works across processes (the way launched ranks use it)', async () => {
    const port = await freePort();
    const script = `import { rendezvous } from './bench/launch/rendezvous.ts';
      const r = Number(process.argv[1]);
      const all = await rendezvous({ rank: r, worldSize: 3, localRank: null, masterAddr: '127.0.0.1', masterPort: ${port} }, 'p' + r, 20000);
      console.log(JSON.stringify(all));`;
    const runs = [0, 1, 2].map((r) => new Promise<string>((resolve, reject) => {
      const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, String(r)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '', err = '';
      c.stdout.on('data', (d) => { out += d; });
      c.stderr.on('data', (d) => { err += d; });
      c.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`rank ${r} exited ${code}: ${err}`))));
    }));
    for (const out of await Promise.all(runs)) assert.deepEqual(JSON.parse(out), ['p0', 'p1', 'p2']);
  });

  it('a missing rank: rank 0 gives up after the timeout, naming who is missing, and the waiting rank hears it', async () => {
    const port = await freePort();
    const r0 = rendezvous(world(0, 3, port), 'a', 800);
    const r1 = rendezvous(world(1, 3, port), 'b', 5_000);
    await assert.rejects(r0, (e) => e instanceof RendezvousError && /waited 0.8s for rank\(s\) 2 of 3/.test(e.message));
    await assert.rejects(r1, (e) => e instanceof RendezvousError && /closed the connection without an answer/.test(e.message));
  });

  it('no rank 0 at all: a joining rank fails after its timeout instead of hanging', async () => {
    const port = await freePort();
    const t0 = Date.now();
    await assert.rejects(rendezvous(world(1, 2, port), 'b', 700),
      (e) => e instanceof RendezvousError && /could not reach rank 0 at 127.0.0.1:\d+ within 0.7s/.test(e.message));
    assert.ok(Date.now() - t0 < 5_000);
  });

  it('ranks that disagree on WORLD_SIZE are refused', async () => {
    const port = await freePort();
    const r0 = rendezvous(world(0, 2, port), 'a', 5_000);
    const r1 = rendezvous(world(1, 3, port), 'b', 5_000);
    await assert.rejects(r0, /rank 1 says WORLD_SIZE=3, rank 0 has 2/);
    await assert.rejects(r1, RendezvousError);
  });

  it('a world of one needs no network', async () => {
    assert.deepEqual(await rendezvous(world(0, 1, 1), 'x', 10), ['x']);
  });
});

describe('localRanksByHost', () => {
  it('numbers the ranks of each host in rank order', () => {
    assert.deepEqual(localRanksByHost(['a', 'b', 'a', 'a', 'b']), { localRank: [0, 0, 1, 2, 1], localSize: [3, 2, 3, 3, 2] });
  });
});
