// --np's launch guards (issue #36): more ranks than cores are refused unless --oversubscribe means it, and SIGTERM to
// the launcher stops a job within seconds whatever mpirun does (mpirun, then its process group, then SIGKILL), with
// nothing left running. Processes are found by a marker in their environment (/proc/PID/environ), which ranks inherit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { binDir, runProgram } from '../helpers/cli.js';

const MARK = 'COLLBENCH_TEST_LAUNCH_STOP';
const work = mkdtempSync(join(tmpdir(), 'collbench-first-stop-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Pids of the processes whose environment holds MARK=mark. */
function marked(mark: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`${MARK}=${mark}`))
        found.push(Number(name));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return found;
}

/** Starts the launcher, sends SIGTERM to it alone once `ready` says so, and returns its exit code, how long it took to
 *  end after the signal, and the marked processes left 1 s after it ended. */
async function stopAfter(args: string[], env: NodeJS.ProcessEnv, ready: (mark: string) => boolean, mark: string) {
  const child = spawn(join(binDir, 'all_reduce_perf'), args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env, [MARK]: mark },
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (c, s) => r(c ?? (s ? -1 : null))));
  for (let waited = 0; !ready(mark) && waited < 60_000; waited += 100) await sleep(100);
  const t0 = Date.now();
  child.kill('SIGTERM');
  const code = await Promise.race([exited, sleep(30_000).then(() => 'hung' as const)]);
  const seconds = (Date.now() - t0) / 1000;
  if (code === 'hung')
    for (const pid of [child.pid!, ...marked(mark)])
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
  await sleep(1000);
  return { code, seconds, left: marked(mark), stderr };
}

describe("--np beyond this host's cores", () => {
  const cores = availableParallelism(),
    np = String(cores + 1);
  for (const backend of ['mpi', 'gloo']) {
    it(`${backend}: refused in one line naming --oversubscribe and --hosts, exit 2, no rank started`, () => {
      // a missing mpirun: had the launcher started it, the error would be another one
      const r = runProgram('all_reduce_perf', ['--backend', backend, '--np', np, '-b', '8', '-e', '8'], {
        env: { COLLBENCH_MPIRUN: join(work, 'no-such-mpirun') },
      });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr,
        `all_reduce_perf: --np ${np}: this host has ${cores} core${cores === 1 ? '' : 's'}; add --oversubscribe ` +
          `to start ${np} ranks on it anyway (slow, timings meaningless), or spread them with --hosts h1:N,h2:N\n`,
      );
    });
  }
  it('--oversubscribe without --np is refused', () => {
    const r = runProgram('all_reduce_perf', ['--oversubscribe', '-b', '8', '-e', '8']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'all_reduce_perf: --oversubscribe: needs --np N (it allows more ranks than cores)\n');
  });
});

describe('SIGTERM to the launcher stops the whole job within seconds; nothing left', () => {
  const run = ['--np', '8', '--oversubscribe', '-b', '8', '-e', '8', '-N', '0', '-T', '0'];
  it('real mpirun, 8 ranks, signalled while it is still starting them', async () => {
    const r = await stopAfter(['--backend', 'mpi', ...run], {}, (m) => marked(m).length >= 3, 'mpi-starting');
    assert.equal(r.code, 143, r.stderr);
    assert.ok(r.seconds < 10, `took ${r.seconds} s`);
    assert.deepEqual(r.left, [], r.stderr);
  });
  it('real mpirun, 8 ranks, signalled once all run', async () => {
    const r = await stopAfter(['--backend', 'mpi', ...run], {}, (m) => marked(m).length >= 10, 'mpi-running');
    assert.equal(r.code, 143, r.stderr);
    assert.ok(r.seconds < 10, `took ${r.seconds} s`);
    assert.deepEqual(r.left, [], r.stderr);
  });
  it('an mpirun that ignores SIGTERM, and a rank of it that ignores it too: killed after the grace period', async () => {
    const stubborn = "process.on('SIGTERM',()=>{});process.on('SIGINT',()=>{});setInterval(()=>{},1000);";
    const fake = join(work, 'stubborn-mpirun.cjs');
    writeFileSync(
      fake,
      `#!${process.execPath}\n${stubborn}\n` +
        `require('child_process').spawn(process.execPath, ['-e', ${JSON.stringify(stubborn)}], { stdio: 'ignore' });\n`,
    );
    chmodSync(fake, 0o755);
    const r = await stopAfter(
      ['--backend', 'mpi', '--np', '2', '-b', '8', '-e', '8'],
      { COLLBENCH_MPIRUN: fake },
      (m) => marked(m).length >= 3,
      'stubborn',
    );
    assert.equal(r.code, 143, r.stderr);
    assert.ok(r.seconds >= 3 && r.seconds < 10, `took ${r.seconds} s (grace 2 s to the group, 2 s more to SIGKILL)`);
    assert.deepEqual(r.left, [], r.stderr);
  });
  it('gloo, 8 local ranks', async () => {
    const r = await stopAfter(['--backend', 'gloo', ...run], {}, (m) => marked(m).length >= 9, 'gloo-running');
    assert.equal(r.code, 143, r.stderr);
    assert.ok(r.seconds < 10, `took ${r.seconds} s`);
    assert.deepEqual(r.left, [], r.stderr);
  });
});
