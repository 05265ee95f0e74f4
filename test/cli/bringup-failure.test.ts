// A rank that fails during bring-up ends the whole job within seconds: its reason on stderr naming its rank and host,
// the exit code of its failure, no process of the job left. Real faults: a PMPI interposer failing one rank's MPI call
// (test/fixtures/faults/fail_call.c) at each stage of the bring-up, under --np and a plain mpirun; a Gloo rank whose
// store cannot be written (an open(2)/fopen(3) interposer); nccl with the cached libnccl and no GPU.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { binDir, mpirunArgs, type CliResult } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';
import { freePort } from '../helpers/net.js';
import { cachedNccl, ncclModulePath } from '../helpers/nccl.js';

const dir = mkdtempSync(join(tmpdir(), 'cbh-bringup-'));
let failCall = '';
let failOpen = '';
before(() => {
  failCall = buildFault('fail_call', dir);
  failOpen = buildFault('fail_open', dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

let tag = 0;
/** Runs a job whose every process carries `dir` in its arguments (-J DIR/N.json), timed. */
function run(
  how: 'np' | 'mpirun',
  args: string[],
  env: NodeJS.ProcessEnv,
  preload: string,
): CliResult & { seconds: number } {
  const json = join(dir, `${++tag}.json`);
  const t0 = Date.now();
  const cmd =
    how === 'np'
      ? [join(binDir, 'all_reduce_perf'), '--np', '2', ...args, '-J', json]
      : [
          'mpirun',
          ...mpirunArgs(2),
          ...Object.keys(env).flatMap((k) => ['-x', k]),
          '-x',
          'LD_PRELOAD',
          join(binDir, 'all_reduce_perf'),
          ...args,
          '-J',
          json,
        ];
  const r = spawnSync(cmd[0]!, cmd.slice(1), {
    encoding: 'utf8',
    env: { ...process.env, ...env, LD_PRELOAD: preload },
    timeout: 60_000,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, seconds: (Date.now() - t0) / 1000 };
}

function nothingLeft(): void {
  const left = spawnSync('pgrep', ['-af', dir], { encoding: 'utf8' }).stdout.trim();
  assert.equal(left, '', `processes left:\n${left}`);
}

/** The job ended on its own within `limit` s with `code`, rank 1's reason in one line naming it and its host. */
function endedWith(r: CliResult & { seconds: number }, code: number, reason: RegExp, limit = 10): void {
  assert.equal(r.signal, null, `killed by the test's own timeout after ${r.seconds} s:\n${r.stderr}`);
  assert.equal(r.code, code, r.stderr);
  assert.ok(r.seconds < limit, `took ${r.seconds} s:\n${r.stderr}`);
  assert.match(r.stderr, reason);
  assert.doesNotMatch(r.stderr, /internal error/);
  nothingLeft();
}

describe('a rank failing in bring-up ends the job at once (mpi backend, PMPI interposer on rank 1)', () => {
  // Each stage of the bring-up: MPI_Init itself, the communicators' set-up inside it (MPI_Comm_dup), and the
  // first exchange after it (the memory-limit allreduce), where the failed rank used to wait in MPI_Finalize for
  // the others while they waited for it in the exchange (exit 4 after -T, or the 120 s default, without its reason).
  for (const how of ['np', 'mpirun'] as const) {
    for (const call of ['MPI_Init_thread', 'MPI_Comm_dup', 'MPI_Allreduce']) {
      it(`${how === 'np' ? '--np 2' : 'mpirun -np 2'}, ${call} fails on rank 1: exit 3 within seconds, rank 1 named`, () => {
        const r = run(how, ['--backend', 'mpi', '-b', '8', '-e', '8'], { FAIL_CALL: call, FAIL_RANK: '1' }, failCall);
        endedWith(r, 3, new RegExp(`^rank 1 on host \\S+: mpi failure MPI_ERR_OTHER at .*${call}`, 'm'));
      });
    }
  }

  it('-T 30 does not change it: the failure, not the limit, ends the job', () => {
    const r = run(
      'mpirun',
      ['--backend', 'mpi', '-b', '8', '-e', '8', '-T', '30'],
      { FAIL_CALL: 'MPI_Allreduce', FAIL_RANK: '1' },
      failCall,
    );
    endedWith(r, 3, /^rank 1 on host \S+: mpi failure MPI_ERR_OTHER at .*MPI_Allreduce/m);
  });
});

describe('a Gloo rank that cannot write its store (--np 2)', () => {
  it("exit 3 within the launcher's grace, rank 1 named, nothing left", () => {
    const r = run(
      'np',
      ['--backend', 'gloo', '-b', '8', '-e', '8'],
      { FAIL_OPEN_RANK: '1', FAIL_OPEN_PATH: 'collbench-gloo-np-' },
      failOpen,
    );
    endedWith(r, 3, /^rank 1 on host \S+: gloo failure GLOO_\w+ at /m);
  });

  it("-T 2: the waiting rank gives up after 2 s; the job still exits with the failed rank's code", () => {
    const r = run(
      'np',
      ['--backend', 'gloo', '-b', '8', '-e', '8', '-T', '2'],
      { FAIL_OPEN_RANK: '1', FAIL_OPEN_PATH: 'collbench-gloo-np-' },
      failOpen,
    );
    endedWith(r, 3, /^rank 1 on host \S+: gloo failure GLOO_\w+ at /m);
    assert.match(r.stderr, /^\S+: Test timeout \(2s\) in the Gloo bring-up \(store rendezvous, connections\)/m);
  });
});

describe('nccl bring-up without a GPU (the cached libnccl)', () => {
  const nccl = cachedNccl();
  const skip = !nccl
    ? 'no cached libnccl (scripts/nccl-cache.sh)'
    : spawnSync('test', ['-e', ncclModulePath]).status !== 0
      ? 'the nccl module is not built'
      : false;
  const noGpu = (): boolean => spawnSync('nvidia-smi', ['-L']).status !== 0;

  it(
    "--np 2: every rank fails at the device: exit 5 within seconds, each rank's reason, nothing left",
    { skip },
    (t) => {
      if (!noGpu()) {
        t.skip('this machine has a GPU');
        return;
      }
      const r = run('np', ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-b', '8', '-e', '8'], {}, '');
      endedWith(r, 5, /^all_reduce_perf: rank 0 on host \S+: nccl backend unavailable/m);
      assert.match(r.stderr, /^all_reduce_perf: rank 1 on host \S+: nccl backend unavailable/m);
    },
  );

  it(
    '--np 2, the unique-id broadcast fails on rank 1: ends within seconds, rank 1 named (it waited for ever)',
    { skip },
    () => {
      const r = run(
        'np',
        ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-b', '8', '-e', '8'],
        { FAIL_CALL: 'MPI_Bcast', FAIL_RANK: '1' },
        failCall,
      );
      // Without a GPU every nccl failure is the environment's (exit 5); with one, the MPI error's (exit 3).
      endedWith(r, noGpu() ? 5 : 3, /^(all_reduce_perf: )?rank 1 on host \S+: .*MPI_ERR_OTHER/m);
    },
  );
});

describe('-T covers the nccl rendezvous', () => {
  const nccl = cachedNccl();
  const skip = !nccl
    ? 'no cached libnccl (scripts/nccl-cache.sh)'
    : spawnSync('test', ['-e', ncclModulePath]).status !== 0
      ? 'the nccl module is not built'
      : false;
  it(
    "torchrun-style rank 0 whose peer never comes: exit 4 at -T 3, not at the rendezvous's own 60 s",
    { skip },
    async () => {
      const port = await freePort();
      const t0 = Date.now();
      const r = spawnSync(
        join(binDir, 'all_reduce_perf'),
        ['--backend', 'nccl', '--nccl-lib', nccl!.lib, '-b', '8', '-e', '8', '-T', '3', '-J', join(dir, 'rdv.json')],
        {
          encoding: 'utf8',
          timeout: 60_000,
          env: {
            ...process.env,
            RANK: '0',
            WORLD_SIZE: '2',
            MASTER_ADDR: '127.0.0.1',
            MASTER_PORT: String(port),
            COLLBENCH_RENDEZVOUS_TIMEOUT: '60',
          },
        },
      );
      const seconds = (Date.now() - t0) / 1000;
      assert.equal(r.signal, null, `killed by the test's own timeout:\n${r.stderr}`);
      assert.equal(r.status, 4, r.stderr);
      assert.ok(seconds < 3 + 5, `took ${seconds} s`);
      assert.match(
        r.stderr,
        /^\S+: Test timeout \(3s\) in the NCCL bring-up \(unique-id exchange, device choice, communicator init\)$/m,
      );
      nothingLeft();
    },
  );
});

describe('--np beyond the slots --hosts gives', () => {
  it('one line with the fix, exit 2, nothing started', () => {
    const r = spawnSync(join(binDir, 'all_reduce_perf'), ['--np', '2', '--hosts', 'localhost', '-b', '8', '-e', '8'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^all_reduce_perf: --np 2: --hosts localhost gives 1 slot .* e\.g\. --hosts localhost:2/);
  });

  it('--hosts localhost:2 has the slots (the check lets it run)', () => {
    const r = spawnSync(
      join(binDir, 'all_reduce_perf'),
      ['--np', '2', '--hosts', 'localhost:2', '--backend', 'mpi', '-b', '8', '-e', '8'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 0, r.stderr);
  });
});
