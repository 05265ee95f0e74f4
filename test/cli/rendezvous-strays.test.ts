// Issue 40 through the built binaries: a torchrun-style nccl job whose MASTER_PORT gets a stray before its rank 1
// arrives (an HTTP probe, a collbench rank of another WORLD_SIZE, another job, rank 1 started twice, 64 MiB without a
// newline, a slow-loris). The job proceeds (without a GPU both ranks reach ncclCommInitRank and fail there alike), the
// stray that is a collbench rank says why it was turned away, rank 0's peak memory stays near a run without a stray,
// and nothing listens on MASTER_PORT afterwards. Skips, saying why, without the nccl module, the cached libnccl, or
// with a GPU (there the job would run).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir, type CliResult } from '../helpers/cli.js';
import { assertNoDevice, cachedNccl, NO_NCCL_ENV, ncclModule, visibleGpus } from '../helpers/nccl.js';
import { floodWithoutNewline, freePort, listening, stray } from '../helpers/net.js';

const nccl = cachedNccl();
const skip =
  ncclModule() === null
    ? 'the nccl module is not built (no nvcc)'
    : !nccl
      ? 'no libnccl: no cached NCCL wheel'
      : visibleGpus().count > 0
        ? 'this machine has a GPU: the job would run past the rendezvous'
        : false;
if (skip) console.log(`# skipping the rendezvous stray tests: ${skip}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Rank {
  done: Promise<CliResult>;
  pid: number;
  peakKiB: () => number;
}

/** One all_reduce_perf rank; its peak resident memory (VmHWM) read every 20 ms while it lives. */
function startRank(env: NodeJS.ProcessEnv): Rank {
  const c = spawn(join(binDir, 'all_reduce_perf'), ['--backend', 'nccl', '-b', '8', '-e', '8'], {
    env: { ...process.env, ...NO_NCCL_ENV, COLLBENCH_NCCL_LIB: nccl?.lib ?? '', ...env },
  });
  let peak = 0;
  const poll = setInterval(() => {
    try {
      const kib = Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${c.pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kib);
    } catch {
      /* exited */
    }
  }, 20);
  let stdout = '',
    stderr = '';
  c.stdout.on('data', (d) => {
    stdout += d;
  });
  c.stderr.on('data', (d) => {
    stderr += d;
  });
  const kill = setTimeout(() => c.kill('SIGKILL'), 90_000);
  const done = new Promise<CliResult>((resolve) =>
    c.on('exit', (code, signal) => {
      clearTimeout(kill);
      clearInterval(poll);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { done, pid: c.pid!, peakKiB: () => peak };
}

const job =
  (port: number, worldSize: number, extra: NodeJS.ProcessEnv = {}) =>
  (rank: number): NodeJS.ProcessEnv => ({
    RANK: String(rank),
    WORLD_SIZE: String(worldSize),
    MASTER_ADDR: '127.0.0.1',
    MASTER_PORT: String(port),
    COLLBENCH_RENDEZVOUS_TIMEOUT: '60',
    ...extra,
  });

async function untilListening(port: number, rank0: Rank): Promise<void> {
  for (let i = 0; i < 600 && !listening(port); i++) await sleep(50);
  assert.ok(listening(port), `rank 0 (pid ${rank0.pid}) listens on ${port}`);
}

/**
 * Rank 0 of a `worldSize` job starts; once it listens, `strays` runs against its port (while rank 1 is not there);
 * rank 1 (then the others) starts 1 s later. Every rank must reach NCCL's init and fail there; returns rank 0's peak.
 */
async function jobWithStray(
  worldSize: number,
  strays: (port: number, env: (r: number) => NodeJS.ProcessEnv) => Promise<void>,
  extra: NodeJS.ProcessEnv = {},
): Promise<number> {
  const port = await freePort();
  const env = job(port, worldSize, extra);
  const rank0 = startRank(env(0));
  await untilListening(port, rank0);
  await strays(port, env);
  await sleep(1_000); // the real ranks join late
  const others = Array.from({ length: worldSize - 1 }, (_, i) => startRank(env(i + 1)));
  const results = await Promise.all([rank0.done, ...others.map((r) => r.done)]);
  for (const r of results) assertNoDevice(r);
  assert.ok(!listening(port), `nothing listens on ${port} afterwards`);
  return rank0.peakKiB();
}

describe('a torchrun-style nccl job survives strays at MASTER_PORT', { skip }, () => {
  let baselineKiB = 0;

  it("no stray (the baseline of rank 0's peak memory)", async () => {
    baselineKiB = await jobWithStray(2, async () => {});
    assert.ok(baselineKiB > 0);
  });

  it('an HTTP probe (GET / HTTP/1.0) is closed unanswered', async () => {
    await jobWithStray(2, async (port) => {
      const probe = await stray('127.0.0.1', port, (s) => s.write('GET / HTTP/1.0\r\n\r\n'));
      assert.deepEqual(probe, { answer: '', how: 'closed' });
    });
  });

  it('a collbench rank of a job with another WORLD_SIZE is turned away, saying why (exit 5)', async () => {
    await jobWithStray(2, async (port) => {
      const other = await startRank({ ...job(port, 3)(1) }).done;
      assert.equal(other.code, 5, other.stderr);
      assert.match(
        other.stderr.trim(),
        /^all_reduce_perf: rank 1 on host \S+: nccl backend unavailable \(RENDEZVOUS\): .*rendezvous: rank 0 at 127\.0\.0\.1:\d+ turned rank 1 away: rank 0 has WORLD_SIZE=2, this rank 3$/,
      );
    });
  });

  it("a rank of another torchrun job (another TORCHELASTIC_RUN_ID) is turned away, naming both tokens' sources", async () => {
    await jobWithStray(
      2,
      async (port) => {
        const other = await startRank({ ...job(port, 2)(1), TORCHELASTIC_RUN_ID: 'job-b' }).done;
        assert.equal(other.code, 5, other.stderr);
        assert.match(
          other.stderr,
          /turned rank 1 away: its job token \(from TORCHELASTIC_RUN_ID\) is not this job's \(from TORCHELASTIC_RUN_ID\)/,
        );
      },
      { TORCHELASTIC_RUN_ID: 'job-a' },
    );
  });

  it('rank 1 started twice: the second is turned away (rank 1 has already joined), the job goes on with rank 2', async () => {
    const port = await freePort();
    const env = job(port, 3);
    const rank0 = startRank(env(0));
    await untilListening(port, rank0);
    const rank1 = startRank(env(1));
    await sleep(1_500);
    const twice = await startRank(env(1)).done;
    assert.equal(twice.code, 5, twice.stderr);
    assert.match(twice.stderr, /turned rank 1 away: rank 1 has already joined from 127\.0\.0\.1$/m);
    const rank2 = startRank(env(2));
    for (const r of await Promise.all([rank0.done, rank1.done, rank2.done])) assertNoDevice(r);
    assert.ok(!listening(port));
  });

  it("64 MiB without a newline: closed after 16 KiB; rank 0's peak memory stays within 16 MiB of the baseline", async () => {
    const peak = await jobWithStray(2, async (port) => {
      const flood = await stray('127.0.0.1', port, (s) => floodWithoutNewline(s, 64));
      assert.equal(flood.answer, '');
      assert.match(flood.how, /^(ECONNRESET|EPIPE|closed)$/);
    });
    console.log(`# rank 0 peak VmHWM: ${peak} KiB with the 64 MiB stray, ${baselineKiB} KiB without`);
    assert.ok(baselineKiB > 0, 'the baseline ran first');
    assert.ok(peak - baselineKiB < 16 * 1024, `peak ${peak} KiB vs baseline ${baselineKiB} KiB`);
  });

  it('a slow-loris (a byte every 100 ms, never a newline) does not hold the job; rank 0 closes it when the ranks meet', async () => {
    let loris: Promise<{ answer: string; how: string }> | null = null;
    await jobWithStray(2, async (port) => {
      loris = stray('127.0.0.1', port, (s) => {
        const t = setInterval(() => {
          if (s.destroyed) clearInterval(t);
          else s.write('{');
        }, 100);
      });
      await sleep(500);
    });
    assert.equal((await loris!).answer, '');
  });
});
