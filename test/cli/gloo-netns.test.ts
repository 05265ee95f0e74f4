// Gloo across hosts: ranks in separate network namespaces (scripts/netns-hosts.sh), each with its own address on a private bridge, launched
// torchrun-style, Gloo's TCP on their eth0. The namespaces are deleted afterwards, even on failure;
// the tests skip, saying why, only when namespaces cannot be created (no root, no iproute2).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { binDir, footer, parseRows, repoRoot } from '../helpers/cli.js';

const SCRIPT = join(repoRoot, 'scripts', 'netns-hosts.sh');
const PREFIX = `cbg${process.pid % 100000}`;
const SUBNET = 100 + (process.pid % 150);
const HOSTS = 3;
const addr = (i: number) => `10.250.${SUBNET}.${i}`;
const host = (i: number) => `${PREFIX}-h${i}`;

let skipReason: string | null = null;

function rxBytes(ns: string): number {
  const r = spawnSync('ip', ['-n', ns, '-s', '-j', 'link', 'show', 'eth0'], { encoding: 'utf8' });
  return Number(JSON.parse(r.stdout)[0].stats64.rx.bytes);
}

interface RankRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One rank per namespace host, torchrun-style environment, all started together. */
async function runAcrossHosts(
  n: number,
  program: string,
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<RankRun[]> {
  const runId = `netns-${process.pid}-${Date.now()}-${program}`; // one per job: the ranks' store keys meet
  const runs = Array.from(
    { length: n },
    (_, rank) =>
      new Promise<RankRun>((res) => {
        const child = spawn(
          'ip',
          [
            'netns',
            'exec',
            host(rank + 1),
            join(binDir, program),
            '--backend',
            'gloo',
            '--gloo-iface',
            'eth0',
            ...args,
          ],
          {
            env: {
              ...process.env,
              ...extraEnv,
              RANK: String(rank),
              WORLD_SIZE: String(n),
              LOCAL_RANK: '0',
              LOCAL_WORLD_SIZE: '1',
              MASTER_ADDR: addr(1),
              MASTER_PORT: '29500',
              COLLBENCH_GLOO_RUN_ID: runId,
            },
          },
        );
        let stdout = '',
          stderr = '';
        child.stdout.on('data', (d) => {
          stdout += d;
        });
        child.stderr.on('data', (d) => {
          stderr += d;
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
        child.on('exit', (code) => {
          clearTimeout(timer);
          res({ code, stdout, stderr });
        });
      }),
  );
  return Promise.all(runs);
}

describe('gloo across network-namespace hosts', () => {
  before(() => {
    const up = spawnSync(SCRIPT, ['up', String(HOSTS), PREFIX, String(SUBNET)], { encoding: 'utf8' });
    if (up.status !== 0)
      skipReason = `cannot create network namespaces: ${(up.stderr || up.stdout).trim().split('\n').pop()}`;
  });
  after(() => {
    spawnSync(SCRIPT, ['down', PREFIX]);
    const left = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
    assert.doesNotMatch(left, new RegExp(`${PREFIX}-h`), 'namespaces deleted');
  });

  it(`${HOSTS} hosts, FileStore on a shared directory: all_reduce, all_gather, broadcast over the bridge`, async (t) => {
    if (skipReason) {
      t.diagnostic(skipReason);
      t.skip(skipReason);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'collbench-netns-store-'));
    try {
      const rx0 = Array.from({ length: HOSTS }, (_, i) => rxBytes(host(i + 1)));
      for (const program of ['all_reduce_perf', 'all_gather_perf', 'broadcast_perf']) {
        const runs = await runAcrossHosts(HOSTS, program, [
          '-b',
          '1K',
          '-e',
          '4M',
          '-f',
          '64',
          '-n',
          '5',
          '--gloo-store',
          `file:${dir}`,
        ]);
        runs.forEach((r, rank) => assert.equal(r.code, 0, `${program} rank ${rank}: ${r.stderr}`));
        const out = runs[0].stdout;
        assert.equal((out.match(/^#  Rank +\d+ Group/gm) ?? []).length, HOSTS, out);
        const rows = parseRows(out);
        assert.equal(rows.length, 3, out);
        for (const row of rows) assert.ok(row.oop.wrong === 0 && row.ip.wrong === 0, row.line);
        assert.ok(rows[2].oop.busbw > 0, out);
        assert.equal(footer(out).outOfBounds, 0);
        for (const r of runs.slice(1)) assert.equal(r.stdout, '');
      }
      // Every host received at least the 4 MiB rows' share through its own eth0.
      for (let i = 0; i < HOSTS; i++) {
        const got = rxBytes(host(i + 1)) - rx0[i];
        assert.ok(got > 4 * 2 ** 20, `${host(i + 1)} received ${got} bytes on eth0`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('2 hosts, RedisStore served from inside host 1 (rendezvous over the network too)', async (t) => {
    if (skipReason) {
      t.diagnostic(skipReason);
      t.skip(skipReason);
      return;
    }
    if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) {
      t.skip('redis-server is not installed (make deps installs it)');
      return;
    }
    const redis = spawn(
      'ip',
      [
        'netns',
        'exec',
        host(1),
        'redis-server',
        '--port',
        '6379',
        '--bind',
        addr(1),
        '--protected-mode',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let log = '';
      redis.stdout.on('data', (d) => {
        log += d;
      });
      const t0 = Date.now();
      while (!/Ready to accept connections/.test(log)) {
        if (Date.now() - t0 > 10_000) throw new Error(`redis-server did not start in ${host(1)}:\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const runs = await runAcrossHosts(
        2,
        'all_reduce_perf',
        ['-b', '64K', '-e', '1M', '-f', '16', '-d', 'all', '--gloo-store', `redis://${addr(1)}:6379`],
        { COLLBENCH_GLOO_FLOAT16: 'collbench' },
      );
      runs.forEach((r, rank) => assert.equal(r.code, 0, `rank ${rank}: ${r.stderr}`));
      const rows = parseRows(runs[0].stdout);
      assert.equal(rows.length, 12 * 2);
      assert.equal(footer(runs[0].stdout).outOfBounds, 0);
    } finally {
      redis.kill('SIGTERM');
      await new Promise((r) => redis.on('exit', r));
    }
  });
});
