// The Gloo redis:// store with a password: a real redis-server started here with --requirepass on a private
// loopback port, 2 ranks. The password comes from the environment only (COLLBENCH_GLOO_REDIS_PASSWORD, or
// REDISCLI_AUTH as redis-cli reads it): the right one → the run passes, and the password appears in no output;
// a wrong or missing one → a message naming the store, nonzero exit, no hang; in the address (argv) → refused.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { footer, runProgram } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';

const PASSWORD = `cbh-redis-${process.pid}-s3cr3t`;
const work = mkdtempSync(join(tmpdir(), 'cbh-redis-'));
let redis: ChildProcess | null = null;
let port = 0;
let skip: string | null = null;

before(async () => {
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) {
    skip = 'redis-server is not installed (make deps installs it)';
    return;
  }
  port = await freePort();
  redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--requirepass', PASSWORD, '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  redis.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const t0 = Date.now();
  while (!/Ready to accept connections/.test(out)) {
    if (Date.now() - t0 > 10_000 || redis.exitCode !== null) {
      skip = `redis-server did not start: ${out}`;
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
});

after(() => {
  redis?.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

const ARGS = (): string[] => [
  '--backend',
  'gloo',
  '--np',
  '2',
  '-b',
  '1K',
  '-e',
  '64K',
  '-f',
  '8',
  '--gloo-store',
  `redis://127.0.0.1:${port}`,
];
/** The variables a test may set, cleared from the inherited environment so only the test's own count. */
const CLEAN = { COLLBENCH_GLOO_REDIS_PASSWORD: '', REDISCLI_AUTH: '' };

describe('Gloo redis:// store with a password (redis-server --requirepass)', () => {
  it('the right password from COLLBENCH_GLOO_REDIS_PASSWORD: the run passes; the password is in no output', (t) => {
    if (skip) {
      t.skip(skip);
      return;
    }
    const dir = mkdtempSync(join(work, 'ok-'));
    const files = [
      '-J',
      join(dir, 'r.json'),
      '--csv',
      join(dir, 'r.csv'),
      '--md',
      join(dir, 'r.md'),
      '--junit',
      join(dir, 'r.xml'),
    ];
    const r = runProgram('all_reduce_perf', [...ARGS(), ...files], {
      env: { ...CLEAN, COLLBENCH_GLOO_REDIS_PASSWORD: PASSWORD },
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
    const nt = runProgram('all_reduce_perf', [...ARGS(), '-J', join(dir, 'nt.json'), '--json-format', 'nccl-tests'], {
      env: { ...CLEAN, REDISCLI_AUTH: PASSWORD },
      timeoutMs: 120_000,
    });
    assert.equal(nt.code, 0, `REDISCLI_AUTH: ${nt.stderr}`);
    for (const text of [
      r.stdout,
      r.stderr,
      nt.stdout,
      nt.stderr,
      ...readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8')),
    ]) {
      assert.ok(!text.includes(PASSWORD), 'the password appears in an output');
      assert.ok(!/REDIS_PASSWORD|REDISCLI_AUTH/.test(text), 'the password variable appears in an output');
    }
  });

  for (const [name, env, reason] of [
    [
      'a wrong password',
      { ...CLEAN, COLLBENCH_GLOO_REDIS_PASSWORD: 'not-the-password' },
      /refused the password from COLLBENCH_GLOO_REDIS_PASSWORD or REDISCLI_AUTH \(WRONGPASS/,
    ],
    ['no password', CLEAN, /needs a password \(NOAUTH[^)]*\): set COLLBENCH_GLOO_REDIS_PASSWORD/],
  ] as const) {
    it(`${name}: every rank fails at once naming the store (nonzero exit, no hang)`, (t) => {
      if (skip) {
        t.skip(skip);
        return;
      }
      const t0 = Date.now();
      const r = runProgram('all_reduce_perf', ARGS(), { env, timeoutMs: 60_000 });
      const seconds = (Date.now() - t0) / 1000;
      assert.notEqual(r.code, 0);
      assert.equal(r.signal, null, 'ended by itself, not by the test timeout');
      assert.ok(seconds < 20, `took ${seconds} s`);
      const lines = r.stderr.trim().split('\n');
      // one message, printed by each rank that met it (the same line after `rank N on host H: `)
      assert.ok(
        lines.every((l) => /^rank \d+ on host \S+: /.test(l)),
        r.stderr,
      );
      assert.equal(new Set(lines.map((l) => l.replace(/^rank \d+ on host \S+: /, ''))).size, 1, r.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `gloo failure GLOO_\\w+ at \\S+ gloo::rendezvous::RedisStore: Redis store redis://127\\.0\\.0\\.1:${port} `,
        ),
      );
      assert.match(lines[0]!, reason);
      assert.ok(!r.stderr.includes(PASSWORD));
    });
  }

  it('a password in the store address (argv) is refused before anything starts: one line, exit 2', () => {
    const r = runProgram('all_reduce_perf', [
      '--backend',
      'gloo',
      '--np',
      '2',
      '--gloo-store',
      'redis://user:pw@127.0.0.1:6379',
    ]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr.trim(),
      /^all_reduce_perf: --gloo-store: a Redis user or password does not belong in the store address .*COLLBENCH_GLOO_REDIS_PASSWORD/,
    );
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});
