// How gloo ranks come to be and meet: collbench's own --np launcher (child_process, no MPI), mpirun
// as a mere process starter, a torchrun-style environment; FileStore and a real RedisStore; the TCP
// interface; and faults: a killed rank and a frozen rank end the job with clear errors, not a hang.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir, footer, parseRows, runMpirun, runProgram } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';

const rankLines = (stdout: string) => (stdout.match(/^#  Rank +\d+ Group/gm) ?? []).length;

function collect(child: ChildProcess): { out: () => string; err: () => string; exit: Promise<number | null> } {
  let out = '',
    err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  return { out: () => out, err: () => err, exit: new Promise((res) => child.on('exit', (code) => res(code))) };
}

/** The children of the --np launcher, by rank (read from their environment). */
function ranksOf(launcherPid: number): Map<number, number> {
  const r = spawnSync('pgrep', ['-P', String(launcherPid)], { encoding: 'utf8' });
  const byRank = new Map<number, number>();
  for (const pid of r.stdout.trim().split('\n').filter(Boolean).map(Number)) {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const rank = env.find((e) => e.startsWith('RANK='));
      if (rank) byRank.set(Number(rank.slice(5)), pid);
    } catch {
      /* exited meanwhile */
    }
  }
  return byRank;
}

async function untilRows(get: () => string, rows: number, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (parseRows(get()).length < rows) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`no ${rows} rows after ${timeoutMs} ms:\n${get()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('--np with the gloo backend (local processes, no MPI)', () => {
  it('starts N ranks that form one world: one table, N rank lines, busbw > 0', () => {
    const r = runProgram('all_reduce_perf', [
      '--backend',
      'gloo',
      '--np',
      '3',
      '--oversubscribe',
      '-b',
      '1K',
      '-e',
      '1M',
      '-f',
      '32',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(rankLines(r.stdout), 3);
    assert.equal((r.stdout.match(/Collective test concluded/g) ?? []).length, 1, 'only rank 0 prints');
    assert.match(r.stdout, /^# collbench version \S+ backend gloo \(Gloo 0\.5\.0\)$/m);
    const rows = parseRows(r.stdout);
    assert.equal(rows.length, 3);
    assert.ok(
      rows.every((x) => x.oop.wrong === 0 && x.ip.wrong === 0),
      r.stdout,
    );
    assert.ok(rows[2].oop.busbw > 0, 'data moved between the processes (1 MiB row)');
    assert.doesNotMatch(r.stderr, /not connected/);
  });

  it('refuses bad input once, before starting ranks (exit 2)', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'gloo', '--np', '3', '--oversubscribe', '-G', '1']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /-G\/--cudagraph .* needs the nccl backend; the gloo backend runs on CPUs/);
  });

  it('a killed rank: the others fail at once with GLOO_IO, the launcher exits 137 (no hang)', async () => {
    const child = spawn(join(binDir, 'all_reduce_perf'), [
      '--backend',
      'gloo',
      '--np',
      '3',
      '--oversubscribe',
      '-b',
      '64K',
      '-e',
      '64K',
      '-N',
      '0',
    ]);
    const c = collect(child);
    await untilRows(c.out, 3);
    const victim = ranksOf(child.pid!).get(1);
    assert.ok(victim, 'rank 1 found');
    const t0 = Date.now();
    process.kill(victim!, 'SIGKILL');
    const code = await c.exit;
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(code, 137, c.err());
    assert.match(c.err(), new RegExp(`rank 1 \\(pid ${victim}\\) was killed by SIGKILL`));
    // Both survivors normally report the broken connection; on a loaded machine one may still be waiting
    // on the other when the launcher's 5 s grace ends, and is then killed by the launcher (still no hang).
    const ioErrors = (
      c.err().match(/gloo failure GLOO_IO at .*(Connection reset by peer|Connection closed by peer)/g) ?? []
    ).length;
    assert.ok(ioErrors >= 1, c.err());
    if (ioErrors < 2) assert.match(c.err(), /killing 1 rank\(s\) still running 5 s after another rank failed/);
  });

  it('a frozen rank (SIGSTOP): the others time out with GLOO_TIMEOUT (exit 3), the frozen one is killed', async () => {
    const child = spawn(
      join(binDir, 'all_reduce_perf'),
      ['--backend', 'gloo', '--np', '3', '--oversubscribe', '-b', '64K', '-e', '64K', '-N', '0'],
      {
        env: { ...process.env, COLLBENCH_GLOO_TIMEOUT_MS: '2000' },
      },
    );
    const c = collect(child);
    await untilRows(c.out, 3);
    const victim = ranksOf(child.pid!).get(2);
    assert.ok(victim, 'rank 2 found');
    const t0 = Date.now();
    process.kill(victim!, 'SIGSTOP');
    const code = await c.exit;
    try {
      process.kill(victim!, 'SIGKILL');
    } catch {
      /* the launcher already did */
    }
    assert.ok(Date.now() - t0 < 20_000, `took ${Date.now() - t0} ms`);
    assert.equal(code, 3, c.err());
    assert.match(c.err(), /gloo failure GLOO_TIMEOUT at .*Timed out waiting 2000ms/);
    assert.match(c.err(), /killing 1 rank\(s\) still running/);
  });

  it("-T with a frozen rank: the watchdog ends the job with exit 4 long before Gloo's own timeout", async () => {
    const child = spawn(join(binDir, 'all_reduce_perf'), [
      '--backend',
      'gloo',
      '--np',
      '2',
      '-b',
      '64K',
      '-e',
      '64K',
      '-N',
      '0',
      '-T',
      '2',
    ]);
    const c = collect(child);
    await untilRows(c.out, 3);
    const victim = ranksOf(child.pid!).get(1);
    assert.ok(victim, 'rank 1 found');
    const t0 = Date.now();
    process.kill(victim!, 'SIGSTOP');
    const code = await c.exit;
    try {
      process.kill(victim!, 'SIGKILL');
    } catch {
      /* the launcher already did */
    }
    assert.ok(Date.now() - t0 < 15_000, `took ${Date.now() - t0} ms (Gloo's own timeout is 30 s)`);
    assert.equal(code, 4, c.err());
    assert.match(c.err(), /Test timeout \(2s\) in all_reduce float 65536 B/);
  });
});

describe('other launchers', () => {
  it("under mpirun: ranks from the MPI launcher's environment, data over Gloo", () => {
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('collbench-gloo-mpi-'));
    const r = runMpirun(3, 'all_reduce_perf', ['--backend', 'gloo', '-b', '1K', '-e', '1M', '-f', '32']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(rankLines(r.stdout), 3);
    assert.match(r.stdout, /backend gloo \(Gloo/);
    const rows = parseRows(r.stdout);
    assert.ok(
      rows.every((x) => x.oop.wrong === 0 && x.ip.wrong === 0),
      r.stdout,
    );
    assert.ok(rows[2].oop.busbw > 0, r.stdout);
    // rank 0 removed the job's FileStore directory at exit
    const after = readdirSync(tmpdir()).filter((n) => n.startsWith('collbench-gloo-mpi-'));
    assert.deepEqual(after, before);
  });

  it('torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)', async () => {
    const port = await freePort();
    const runs = [0, 1].map((rank) => {
      const child = spawn(join(binDir, 'all_reduce_perf'), ['--backend', 'gloo', '-b', '1M', '-e', '1M'], {
        env: {
          ...process.env,
          RANK: String(rank),
          WORLD_SIZE: '2',
          LOCAL_RANK: String(rank),
          LOCAL_WORLD_SIZE: '2',
          MASTER_ADDR: '127.0.0.1',
          MASTER_PORT: String(port),
        },
      });
      return collect(child);
    });
    const codes = await Promise.all(runs.map((x) => x.exit));
    assert.deepEqual(codes, [0, 0], runs.map((x) => x.err()).join('\n'));
    assert.equal(rankLines(runs[0].out()), 2);
    assert.equal(runs[1].out(), '', 'rank 1 prints nothing');
    assert.ok(parseRows(runs[0].out())[0].oop.busbw > 0);
  });

  it('torchrun-style ranks on several hosts need --gloo-store (exit 2)', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'gloo', '-b', '8', '-e', '8'], {
      env: { RANK: '0', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '1', MASTER_ADDR: '10.1.2.3', MASTER_PORT: '29500' },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--gloo-store: 2 ranks on several hosts \(torchrun launch\) need a store/);
  });
});

describe('rendezvous stores and transport', () => {
  it('--gloo-store file:DIR uses that directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-test-store-'));
    try {
      const r = runProgram('all_reduce_perf', [
        '--backend',
        'gloo',
        '--np',
        '2',
        '-b',
        '1K',
        '-e',
        '1K',
        '--gloo-store',
        `file:${dir}`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(readdirSync(dir).length >= 4, 'rendezvous keys written there');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--gloo-store file:DIR that does not exist: a clear GLOO_STORE error (exit 3)', () => {
    const r = runProgram('all_reduce_perf', [
      '--backend',
      'gloo',
      '--np',
      '2',
      '-b',
      '8',
      '-e',
      '8',
      '--gloo-store',
      'file:/nonexistent/x',
    ]);
    assert.equal(r.code, 3);
    assert.match(r.stderr, /gloo failure GLOO_STORE .*FileStore directory '\/nonexistent\/x' does not exist/);
  });

  it('--gloo-store redis://HOST:PORT against a real redis-server on loopback', async (t) => {
    const which = spawnSync('sh', ['-c', 'command -v redis-server']);
    if (which.status !== 0) {
      t.skip('redis-server is not installed (make deps installs it)');
      return;
    }
    const port = await freePort();
    const redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const log = collect(redis);
      const t0 = Date.now();
      while (!/Ready to accept connections/.test(log.out())) {
        if (Date.now() - t0 > 10_000) throw new Error(`redis-server did not start:\n${log.out()}${log.err()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const r = runProgram('all_reduce_perf', [
        '--backend',
        'gloo',
        '--np',
        '3',
        '--oversubscribe',
        '-b',
        '1K',
        '-e',
        '64K',
        '-f',
        '8',
        '--gloo-store',
        `redis://127.0.0.1:${port}`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(rankLines(r.stdout), 3);
      assert.equal(footer(r.stdout).outOfBounds, 0);
      const keys = spawnSync('redis-cli', ['-p', String(port), '--raw', 'KEYS', '*'], { encoding: 'utf8' });
      assert.ok(keys.stdout.split('\n').filter((k) => k.includes('/ctrl/')).length >= 3, `keys: ${keys.stdout}`);
    } finally {
      redis.kill('SIGTERM');
      await new Promise((r) => redis.on('exit', r));
    }
  });

  it('--gloo-iface takes an interface name or a local address; an unknown one is a clear error', () => {
    for (const iface of ['lo', '127.0.0.1']) {
      const r = runProgram('all_reduce_perf', [
        '--backend',
        'gloo',
        '--np',
        '2',
        '-b',
        '1K',
        '-e',
        '1K',
        '--gloo-iface',
        iface,
      ]);
      assert.equal(r.code, 0, `${iface}: ${r.stderr}`);
    }
    const r = runProgram('all_reduce_perf', [
      '--backend',
      'gloo',
      '--np',
      '2',
      '-b',
      '8',
      '-e',
      '8',
      '--gloo-iface',
      'nosuch0',
    ]);
    assert.equal(r.code, 3);
    assert.match(r.stderr, /gloo failure GLOO_ENFORCE at .*CreateDevice: .*Unable to find address for: nosuch0/);
  });

  it('the private FileStore directory of --np is removed afterwards', () => {
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('collbench-gloo-np-'));
    const r = runProgram('all_reduce_perf', ['--backend', 'gloo', '--np', '2', '-b', '8', '-e', '8']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      readdirSync(tmpdir()).filter((n) => n.startsWith('collbench-gloo-np-')),
      before,
    );
  });
});

describe('gloo flags', () => {
  const cases: [string, string[], RegExp][] = [
    ['all_reduce_perf', ['--gloo-algo', 'ring'], /^all_reduce_perf: --gloo-algo: needs --backend gloo$/m],
    [
      'all_reduce_perf',
      ['--backend', 'gloo', '--gloo-algo', 'tree'],
      /--gloo-algo: unknown Gloo all_reduce algorithm tree; valid: default, ring, bcube/,
    ],
    [
      'broadcast_perf',
      ['--backend', 'gloo', '--gloo-algo', 'ring'],
      /--gloo-algo: chooses all_reduce and reduce_scatter algorithms; broadcast has one/,
    ],
    [
      'reduce_scatter_perf',
      ['--backend', 'gloo', '--gloo-algo', 'legacy_bcube'],
      /--gloo-algo: reduce_scatter takes default, ring, bcube, legacy_halving_doubling/,
    ],
    [
      'all_reduce_perf',
      ['--backend', 'gloo', '--gloo-store', 'tcp://x:1'],
      /--gloo-store: invalid store tcp:\/\/x:1; expected file:DIR/,
    ],
    ['all_reduce_perf', ['--backend', 'mpi', '--gloo-iface', 'lo'], /--gloo-iface: needs --backend gloo/],
  ];
  for (const [program, args, re] of cases) {
    it(`${program} ${args.join(' ')} → exit 2`, () => {
      const r = runProgram(program, args);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, re);
    });
  }
});
