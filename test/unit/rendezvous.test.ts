// The torchrun-style launch of the nccl backend: environment parsing and the TCP rendezvous (real
// sockets on the loopback interface, ranks as concurrent participants or separate processes), and what it does with
// connections that are not its job's ranks (strays: probes, floods, slow peers, other jobs, duplicates).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, it } from 'node:test';
import { launcherJobToken, sameToken } from '../../bench/launch/job-token.js';
import {
  localRanksByHost,
  MAX_HELLO_BYTES,
  MAX_UNIDENTIFIED,
  rendezvous as meet,
  RendezvousError,
  rendezvousListenPlan,
  rendezvousNotes,
  StrayTally,
  torchrunEnv,
  type TorchrunEnv,
} from '../../bench/launch/rendezvous.js';
import { floodWithoutNewline, freePort, refused, stray as strayTo } from '../helpers/net.js';

const world = (rank: number, worldSize: number, port: number): TorchrunEnv => ({
  rank,
  worldSize,
  localRank: null,
  masterAddr: '127.0.0.1',
  masterPort: port,
});

/** The payloads, as every rank of an unauthenticated job (no job id) receives them. */
const rendezvous = async (w: TorchrunEnv, payload: string, timeoutMs: number): Promise<string[]> =>
  (await meet(w, payload, timeoutMs, { token: null })).all;

describe('torchrunEnv', () => {
  it('reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT', () => {
    assert.deepEqual(
      torchrunEnv({ RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '0', MASTER_ADDR: 'h0', MASTER_PORT: '29500' }),
      { rank: 2, worldSize: 4, localRank: 0, masterAddr: 'h0', masterPort: 29500 },
    );
    assert.equal(torchrunEnv({ RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'h0', MASTER_PORT: '1' })?.localRank, null);
  });
  it('no world without WORLD_SIZE, or with WORLD_SIZE 1 and no master', () => {
    assert.equal(torchrunEnv({}), null);
    assert.equal(torchrunEnv({ WORLD_SIZE: '1', RANK: '0' }), null);
  });
  it('refuses inconsistent variables, naming them', () => {
    assert.throws(() => torchrunEnv({ WORLD_SIZE: '2', RANK: '0' }), /needs MASTER_ADDR, MASTER_PORT/);
    assert.throws(
      () => torchrunEnv({ WORLD_SIZE: '2', RANK: '2', MASTER_ADDR: 'h', MASTER_PORT: '1' }),
      /RANK must be an integer in 0..1/,
    );
    assert.throws(() => torchrunEnv({ WORLD_SIZE: 'x' }), /WORLD_SIZE must be a positive integer/);
    assert.throws(
      () => torchrunEnv({ WORLD_SIZE: '2', RANK: '1', MASTER_ADDR: 'h', MASTER_PORT: '70000' }),
      /MASTER_PORT/,
    );
    assert.throws(
      () => torchrunEnv({ WORLD_SIZE: '2', RANK: '1', MASTER_ADDR: 'h', MASTER_PORT: '1', LOCAL_RANK: 'a' }),
      /LOCAL_RANK/,
    );
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
      const met = await rendezvous({ rank: r, worldSize: 3, localRank: null, masterAddr: '127.0.0.1', masterPort: ${port} }, 'p' + r, 20000,
        { token: null });
      console.log(JSON.stringify(met.all));`;
    const runs = [0, 1, 2].map(
      (r) =>
        new Promise<string>((resolve, reject) => {
          const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, String(r)], {
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '',
            err = '';
          c.stdout.on('data', (d) => {
            out += d;
          });
          c.stderr.on('data', (d) => {
            err += d;
          });
          c.on('exit', (code) =>
            code === 0 ? resolve(out.trim()) : reject(new Error(`rank ${r} exited ${code}: ${err}`)),
          );
        }),
    );
    for (const out of await Promise.all(runs)) assert.deepEqual(JSON.parse(out), ['p0', 'p1', 'p2']);
  });

  it('a missing rank: rank 0 gives up after the timeout, naming who is missing, and the waiting rank hears it', async () => {
    const port = await freePort();
    const r0 = rendezvous(world(0, 3, port), 'a', 800);
    const r1 = rendezvous(world(1, 3, port), 'b', 5_000);
    await assert.rejects(
      r0,
      (e) =>
        e instanceof RendezvousError && /waited 0.8s for rank\(s\) 2 of 3; no other connection came$/.test(e.message),
    );
    await assert.rejects(
      r1,
      (e) =>
        e instanceof RendezvousError &&
        /^rendezvous: rank 0 at 127.0.0.1:\d+ gave up: rank 0 \(127.0.0.1:\d+\) waited 0.8s for rank\(s\) 2 of 3/.test(
          e.message,
        ),
    );
  });

  it('no rank 0 at all: a joining rank fails after its timeout instead of hanging', async () => {
    const port = await freePort();
    const t0 = Date.now();
    await assert.rejects(
      rendezvous(world(1, 2, port), 'b', 700),
      (e) => e instanceof RendezvousError && /could not reach rank 0 at 127.0.0.1:\d+ within 0.7s/.test(e.message),
    );
    assert.ok(Date.now() - t0 < 5_000);
  });

  it('a rank with another WORLD_SIZE is turned away at once, saying why; rank 0 waits on and names it when it gives up', async () => {
    const port = await freePort();
    const r0 = rendezvous(world(0, 2, port), 'a', 1_500);
    const t0 = Date.now();
    await assert.rejects(
      rendezvous(world(1, 3, port), 'b', 5_000),
      /^RendezvousError: rendezvous: rank 0 at 127.0.0.1:\d+ turned rank 1 away: rank 0 has WORLD_SIZE=2, this rank 3$/,
    );
    assert.ok(Date.now() - t0 < 1_000);
    await assert.rejects(
      r0,
      /waited 1.5s for rank\(s\) 1 of 2; turned away 1 connection that did not belong to this job: 1 from 127.0.0.1 \(WORLD_SIZE=3\)$/,
    );
  });

  it('a world of one needs no network', async () => {
    assert.deepEqual(await rendezvous(world(0, 1, 1), 'x', 10), ['x']);
  });
});

const hello = (o: { token?: string; tokenFrom?: string; rank: number; worldSize: number }): string =>
  `${JSON.stringify({ token: o.token ?? '', tokenFrom: o.tokenFrom ?? '', rank: o.rank, worldSize: o.worldSize, payload: 'x' })}\n`;
const tokenOf = (id: string) => launcherJobToken({ COLLBENCH_JOB_TOKEN: id })!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stray = (port: number, act: (s: Socket) => void) => strayTo('127.0.0.1', port, act);

describe('strays at MASTER_PORT while the real ranks join late', () => {
  it(
    'an HTTP probe, another WORLD_SIZE, another job, a rank out of range, 64 MiB without a newline, a slow-loris, a ' +
      "duplicate rank: each turned away and counted, the job's ranks then meet, nothing listens afterwards",
    async () => {
      const port = await freePort();
      const token = tokenOf('job-a');
      const r0 = meet(world(0, 3, port), 'p0', 30_000, { token });
      await sleep(200);
      const probe = await stray(port, (s) => s.write('GET / HTTP/1.0\r\n\r\n'));
      assert.equal(probe.answer, '', 'a probe learns nothing');
      const size = await stray(port, (s) =>
        s.write(hello({ token: token.token, tokenFrom: token.source, rank: 1, worldSize: 4 })),
      );
      assert.match(size.answer, /^\{"refused":"rank 0 has WORLD_SIZE=3, this rank 4"\}\n$/);
      const foreign = await stray(port, (s) =>
        s.write(hello({ token: tokenOf('job-b').token, tokenFrom: 'COLLBENCH_JOB_TOKEN', rank: 1, worldSize: 3 })),
      );
      assert.match(
        foreign.answer,
        /its job token \(from COLLBENCH_JOB_TOKEN\) is not this job's \(from COLLBENCH_JOB_TOKEN\)/,
      );
      const unauthenticated = await stray(port, (s) => s.write(hello({ rank: 1, worldSize: 3 })));
      assert.match(unauthenticated.answer, /its job token \(from no job id\)/);
      const range = await stray(port, (s) => s.write(hello({ token: token.token, rank: 7, worldSize: 3 })));
      assert.match(range.answer, /rank 7 is not one rank 0 waits for \(1\.\.2\)/);
      // 64 MiB without a newline: rank 0 stops reading at MAX_HELLO_BYTES and closes; the writer sees a reset or EPIPE.
      const flood = await stray(port, (s) => floodWithoutNewline(s, 64));
      assert.equal(flood.answer, '');
      assert.match(flood.how, /^(ECONNRESET|EPIPE|closed)$/);
      // A slow-loris: one byte every 100 ms, never a newline; still open when the ranks meet.
      let loris: Socket | null = null;
      const slow = stray(port, (s) => {
        loris = s;
        const t = setInterval(() => {
          if (!s.destroyed) s.write('{');
          else clearInterval(t);
        }, 100);
      });
      // The real rank 1 joins, then a second "rank 1" of the same job, then (late) rank 2.
      const r1 = meet(world(1, 3, port), 'p1', 30_000, { token });
      await sleep(300);
      const twice = await stray(port, (s) => s.write(hello({ token: token.token, rank: 1, worldSize: 3 })));
      assert.match(twice.answer, /rank 1 has already joined from 127\.0\.0\.1/);
      await sleep(500);
      assert.ok(loris !== null && !(loris as Socket).destroyed, 'the slow-loris is still connected');
      const r2 = meet(world(2, 3, port), 'p2', 30_000, { token });
      const [m0, m1, m2] = await Promise.all([r0, r1, r2]);
      for (const m of [m0, m1, m2]) assert.deepEqual(m.all, ['p0', 'p1', 'p2']);
      assert.equal((await slow).answer, '', 'the slow-loris was closed without an answer');
      assert.equal(
        m0.strays,
        'turned away 7 connections that did not belong to this job: 7 from 127.0.0.1 ' +
          "(not a rendezvous hello: 'GET / HTTP/1.0'; WORLD_SIZE=4; another job (token from COLLBENCH_JOB_TOKEN); another job " +
          `(token from no job id); rank 7; a line over ${MAX_HELLO_BYTES} bytes; rank 1 again)`,
      );
      assert.equal(m1.strays, null);
      assert.ok(await refused('127.0.0.1', port), 'nothing listens on MASTER_PORT afterwards');
    },
  );

  it(
    'a slow-loris is closed at the hello time limit; a peer that connects and closes is counted; rank 0 gives up ' +
      'naming the missing rank and every stray by address and reason',
    async () => {
      const port = await freePort();
      const r0 = meet(world(0, 2, port), 'p0', 1_500, { token: null, helloTimeoutMs: 400 });
      const rejected = assert.rejects(
        r0,
        (e: Error) =>
          e instanceof RendezvousError &&
          e.message ===
            `rendezvous: rank 0 (127.0.0.1:${port}) waited 1.5s for rank(s) 1 of 2; turned away 2 connections that did not belong ` +
              'to this job: 2 from 127.0.0.1 (closed without a hello; no whole hello within 0.4 s)',
      );
      await sleep(100);
      await stray(port, (s) => s.end());
      const t0 = Date.now();
      const loris = await stray(port, (s) => {
        s.write('{"tok');
      });
      const held = Date.now() - t0;
      assert.ok(held >= 350 && held < 1_400, `closed after ${held} ms`);
      assert.equal(loris.answer, '');
      await rejected;
      assert.ok(await refused('127.0.0.1', port));
    },
  );

  it(
    `more than ${MAX_UNIDENTIFIED} silent connections at once: the extra ones are closed at once; the rank gets in when ` +
      'the silent ones time out',
    async () => {
      const port = await freePort();
      const r0 = meet(world(0, 2, port), 'p0', 20_000, { token: null, helloTimeoutMs: 1_000 });
      await sleep(100);
      const silent = Array.from({ length: MAX_UNIDENTIFIED }, () => stray(port, () => {}));
      await sleep(300);
      const t0 = Date.now();
      const extra = await stray(port, (s) => s.write(hello({ rank: 1, worldSize: 2 })));
      assert.equal(extra.answer, '', 'over the limit: closed unanswered');
      assert.ok(Date.now() - t0 < 500);
      const [m0, m1] = await Promise.all([r0, meet(world(1, 2, port), 'p1', 20_000, { token: null })]);
      assert.deepEqual(m1.all, ['p0', 'p1']);
      await Promise.all(silent);
      // Counted: the extra one, rank 1's own tries while rank 0 was full, the silent ones that timed out before rank 1 got in
      // (those still open when the ranks met are closed uncounted).
      const m =
        /^turned away (\d+) connections .*: \1 from 127\.0\.0\.1 \((\d+)× over 64 connections at once without a hello; (\d+)× no whole hello within 1 s\)$/.exec(
          m0.strays!,
        );
      assert.ok(m, m0.strays!);
      assert.ok(Number(m[3]) >= 1 && Number(m[3]) <= MAX_UNIDENTIFIED, m0.strays!);
    },
  );

  it('a rank whose connection closes before the end may join again (a restarted worker)', async () => {
    const port = await freePort();
    const r0 = meet(world(0, 3, port), 'p0', 10_000, { token: null });
    await sleep(100);
    const first = connect({ host: '127.0.0.1', port });
    await new Promise((r) => first.on('connect', r));
    first.write(hello({ rank: 1, worldSize: 3 }));
    await sleep(200);
    first.destroy();
    await sleep(200);
    const [m0, m1] = await Promise.all([
      r0,
      meet(world(1, 3, port), 'p1', 10_000, { token: null }),
      meet(world(2, 3, port), 'p2', 10_000, { token: null }),
    ]);
    assert.deepEqual(m1.all, ['p0', 'p1', 'p2']);
    assert.equal(m0.strays, null);
  });

  it("a rank of another job at the same MASTER_PORT is told so at once and names both tokens' sources", async () => {
    const port = await freePort();
    const r0 = meet(world(0, 2, port), 'p0', 1_000, { token: launcherJobToken({ TORCHELASTIC_RUN_ID: 'a' }) });
    await assert.rejects(
      meet(world(1, 2, port), 'p1', 5_000, { token: launcherJobToken({ SLURM_JOB_ID: '7', SLURM_STEP_ID: '0' }) }),
      /turned rank 1 away: its job token \(from SLURM_JOB_ID\.SLURM_STEP_ID\) is not this job's \(from TORCHELASTIC_RUN_ID\): another job's/,
    );
    await assert.rejects(
      r0,
      /waited 1s for rank\(s\) 1 of 2; .*another job \(token from SLURM_JOB_ID\.SLURM_STEP_ID\)/,
    );
  });

  it(
    'another program at MASTER_PORT: its answers (null, a number, a line without end) end the joining rank in one ' +
      'line, never in an exception',
    async () => {
      for (const [reply, pattern] of [
        ['null\n', /malformed answer from 127\.0\.0\.1:\d+ \('null'\): is MASTER_PORT another program's\?/],
        ['42\n', /malformed answer .*\('42'\)/],
        ['{"all":["a"]}\n', /malformed answer/],
        [
          'x'.repeat(2 * MAX_HELLO_BYTES + 2048),
          /answered with a line over \d+ bytes: is MASTER_PORT another program's\?/,
        ],
      ] as const) {
        const server = createServer((s) => {
          s.on('error', () => {});
          s.end(reply);
        });
        await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
        const port = (server.address() as { port: number }).port;
        await assert.rejects(meet(world(1, 2, port), 'p1', 3_000, { token: null }), pattern);
        server.close();
      }
    },
  );

  it('a hello larger than rank 0 takes is refused on the rank that would send it', async () => {
    await assert.rejects(
      meet(world(1, 2, 1), 'x'.repeat(MAX_HELLO_BYTES), 1_000, { token: null }),
      /rank 1's hello is \d+ bytes, over the 16384 rank 0 takes/,
    );
  });
});

describe('where rank 0 listens', () => {
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

  it('MASTER_ADDR an address of this host: that address only; loopback and localhost too', async () => {
    assert.deepEqual(await rendezvousListenPlan('127.0.0.1', {}), { hosts: ['127.0.0.1'], note: null });
    assert.ok((await rendezvousListenPlan('localhost', {})).hosts!.every((h) => h === '::1' || h.startsWith('127.')));
    if (external) assert.deepEqual(await rendezvousListenPlan(external, {}), { hosts: [external], note: null });
  });

  it('MASTER_ADDR not of this host, or not resolving here: every interface, saying why', async () => {
    assert.deepEqual(await rendezvousListenPlan('192.0.2.1', {}), {
      hosts: null,
      note: 'listening on every interface: MASTER_ADDR=192.0.2.1 is not an address of this host',
    });
    const bad = await rendezvousListenPlan('no-such-host.invalid', {});
    assert.equal(bad.hosts, null);
    assert.match(bad.note!, /MASTER_ADDR=no-such-host\.invalid does not resolve here \(ENOTFOUND\)/);
  });

  it("listening on MASTER_ADDR=127.0.0.1, the host's other address is not served", async (t) => {
    if (!external) {
      t.skip('this host has no non-loopback IPv4 address');
      return;
    }
    const port = await freePort();
    const r0 = meet(world(0, 2, port), 'p0', 5_000, { token: null });
    await sleep(200);
    assert.ok(await refused(external, port), `${external}:${port} refused`);
    assert.ok(!(await refused('127.0.0.1', port)));
    await Promise.all([r0, meet(world(1, 2, port), 'p1', 5_000, { token: null })]);
  });
});

describe('the job token', () => {
  it("COLLBENCH_JOB_TOKEN, else TORCHELASTIC_RUN_ID (not torchrun's default none), else Slurm's job and step; else none", () => {
    const all = { COLLBENCH_JOB_TOKEN: 's3cret', TORCHELASTIC_RUN_ID: 'r1', SLURM_JOB_ID: '12', SLURM_STEP_ID: '3' };
    assert.equal(launcherJobToken(all)!.source, 'COLLBENCH_JOB_TOKEN');
    assert.equal(launcherJobToken({ ...all, COLLBENCH_JOB_TOKEN: '' })!.source, 'TORCHELASTIC_RUN_ID');
    assert.equal(
      launcherJobToken({ ...all, COLLBENCH_JOB_TOKEN: '', TORCHELASTIC_RUN_ID: 'none' })!.source,
      'SLURM_JOB_ID.SLURM_STEP_ID',
    );
    assert.equal(launcherJobToken({ SLURM_JOB_ID: '12' })!.source, 'SLURM_JOB_ID');
    assert.equal(launcherJobToken({ TORCHELASTIC_RUN_ID: 'none' }), null);
    assert.equal(launcherJobToken({}), null);
    const t = launcherJobToken(all)!;
    assert.ok(!t.token.includes('s3cret') && /^[0-9a-f]{32}$/.test(t.token), 'a digest: the id itself never travels');
    assert.notEqual(
      launcherJobToken({ SLURM_JOB_ID: '12', SLURM_STEP_ID: '3' })!.token,
      launcherJobToken({ SLURM_JOB_ID: '12', SLURM_STEP_ID: '4' })!.token,
    );
    assert.ok(sameToken(t.token, launcherJobToken(all)!.token));
    assert.ok(!sameToken(t.token.slice(1), t.token) && !sameToken('', t.token));
  });

  it('the preamble says when the rendezvous is unauthenticated, where rank 0 listened and whom it turned away', () => {
    const result = {
      all: [],
      strays: 'turned away 1 connection that did not belong to this job: 1 from 10.0.0.9 (WORLD_SIZE=4)',
      listen: {
        hosts: null,
        note: 'listening on every interface: MASTER_ADDR=192.0.2.1 is not an address of this host',
      },
    };
    const lines = rendezvousNotes(world(0, 2, 1), result, null);
    assert.equal(lines.length, 3);
    assert.match(
      lines[0]!,
      /^# Warning: the torchrun-style rendezvous is unauthenticated: none of COLLBENCH_JOB_TOKEN, TORCHELASTIC_RUN_ID, SLURM_JOB_ID/,
    );
    assert.equal(
      lines[1],
      '# Rendezvous: listening on every interface: MASTER_ADDR=192.0.2.1 is not an address of this host',
    );
    assert.equal(lines[2], `# Rendezvous: ${result.strays}`);
    assert.deepEqual(
      rendezvousNotes(
        world(0, 2, 1),
        { all: [], strays: null, listen: { hosts: ['127.0.0.1'], note: null } },
        tokenOf('x'),
      ),
      [],
    );
    assert.deepEqual(
      rendezvousNotes(world(0, 1, 1), { all: ['x'], strays: null, listen: null }, null),
      [],
      'a world of one: none',
    );
  });

  it('strays from many addresses are kept in bounded memory: four named, the rest counted', () => {
    const tally = new StrayTally();
    for (let i = 0; i < 1000; i++) tally.add(`10.0.${i >> 8}.${i & 255}`, `reason ${i % 10}`);
    for (let i = 0; i < 10; i++) tally.add('10.0.0.0', `reason ${i}`);
    assert.equal(
      tally.summary(),
      'turned away 1010 connections that did not belong to this job: 11 from 10.0.0.0 ' +
        '(2× reason 0; reason 1; reason 2; reason 3; reason 4; reason 5; reason 6; reason 7; 2× other); 1 from 10.0.0.1 (reason 1); 1 from 10.0.0.2 ' +
        '(reason 2); 1 from 10.0.0.3 (reason 3); 996 from other addresses',
    );
  });
});

describe('localRanksByHost', () => {
  it('numbers the ranks of each host in rank order', () => {
    assert.deepEqual(localRanksByHost(['a', 'b', 'a', 'a', 'b']), {
      localRank: [0, 0, 1, 2, 1],
      localSize: [3, 2, 3, 3, 2],
    });
  });
});
