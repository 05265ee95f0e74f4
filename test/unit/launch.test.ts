// Launch helpers: the mpirun command --np builds, and the warning for processes that each run a
// 1-rank world (nccl-tests issue #213).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  disconnectedWorldWarning,
  launchedRankLabel,
  prepareSingletonMpi,
  underMpiLauncher,
} from '../../bench/launch/launcher.js';
import { childArguments, parseCommandLine } from '../../bench/config/run-options.js';
import { runLocalRanks } from '../../bench/launch/local-ranks.js';
import { coresRefusal, jobRefusal, mpirunPlan, slotsRefusal } from '../../bench/launch/mpirun.js';
import {
  ASSUMED_BYTES_PER_SEC,
  DEFAULT_MIN_SEC,
  OP_OVERHEAD_SEC,
  RESULT_HOLD_MS,
  Watchdog,
} from '../../bench/engine/watchdog.js';
import { watchdogFloorSec } from '../../bench/config/watchdog-floor.js';
import type { NativeBackend } from '../../bench/native/binding.js';

describe('mpirunPlan', () => {
  const base = { program: ['/usr/bin/node', '/x/bin/all_reduce_perf'], env: {} };
  it('adds --allow-run-as-root as root and --oversubscribe when it was given', () => {
    const p = mpirunPlan({ ...base, np: 4, hosts: null, args: ['-b', '8'], oversubscribe: true, isRoot: true });
    assert.equal(p.command, 'mpirun');
    assert.deepEqual(p.args, [
      '--allow-run-as-root',
      '--oversubscribe',
      '--mca',
      'pml',
      'ob1',
      '-np',
      '4',
      '/usr/bin/node',
      '/x/bin/all_reduce_perf',
      '-b',
      '8',
    ]);
  });
  it('adds neither when not root and not asked to oversubscribe; passes --host', () => {
    const p = mpirunPlan({ ...base, np: 2, hosts: 'h1,h2:4', args: ['-e', '1M'], isRoot: false });
    assert.deepEqual(p.args, [
      '--mca',
      'pml',
      'ob1',
      '-np',
      '2',
      '--host',
      'h1,h2:4',
      '/usr/bin/node',
      '/x/bin/all_reduce_perf',
      '-e',
      '1M',
    ]);
  });
  it("keeps the user's own PML choice", () => {
    const p = mpirunPlan({ ...base, env: { OMPI_MCA_pml: 'ucx' }, np: 2, hosts: null, args: [], isRoot: false });
    assert.ok(!p.args.includes('pml'));
  });
});

describe("--np against this host's cores (no --hosts)", () => {
  it('more ranks than cores: one line naming --oversubscribe and --hosts', () => {
    assert.equal(coresRefusal(2, false, {}, 2), null);
    assert.equal(coresRefusal(1, false, {}, 1), null);
    assert.equal(
      coresRefusal(3, false, {}, 2),
      '--np 3: this host has 2 cores; add --oversubscribe to start 3 ranks on it anyway (slow, timings meaningless), ' +
        'or spread them with --hosts h1:N,h2:N',
    );
    assert.match(coresRefusal(1000, false, {}, 1)!, /^--np 1000: this host has 1 core; /);
  });
  it("--oversubscribe, or Open MPI's own setting, means it", () => {
    assert.equal(coresRefusal(1000, true, {}, 2), null);
    assert.equal(coresRefusal(8, false, { OMPI_MCA_rmaps_base_oversubscribe: '1' }, 2), null);
    assert.notEqual(coresRefusal(8, false, { OMPI_MCA_rmaps_base_oversubscribe: '0' }, 2), null);
  });
});

describe('--np against the slots --hosts gives (as Open MPI counts them)', () => {
  it('a plain name is one slot; host:N is N; a name listed again adds its slots', () => {
    assert.match(
      slotsRefusal(2, 'localhost', {})!,
      /^--np 2: --hosts localhost gives 1 slot .*e\.g\. --hosts localhost:2 /,
    );
    assert.equal(slotsRefusal(2, 'localhost:2', {}), null);
    assert.equal(slotsRefusal(2, 'a,b', {}), null);
    assert.equal(slotsRefusal(3, 'a,b:2', {}), null);
    assert.equal(slotsRefusal(2, 'a,a', {}), null);
    assert.match(slotsRefusal(5, 'a,b:2,a', {})!, /gives 4 slots .*e\.g\. --hosts a:3,b:3 /);
  });
  it('oversubscription the user allows (OMPI_MCA_rmaps_base_oversubscribe) is not refused', () => {
    assert.equal(slotsRefusal(8, 'localhost', { OMPI_MCA_rmaps_base_oversubscribe: '1' }), null);
    assert.equal(slotsRefusal(8, 'localhost', { OMPI_MCA_rmaps_base_oversubscribe: 'true' }), null);
    assert.notEqual(slotsRefusal(8, 'localhost', { OMPI_MCA_rmaps_base_oversubscribe: '0' }), null);
  });
});

describe('what an --np job cannot start (jobRefusal, checked once by the preflight)', () => {
  const job = { np: 2, hosts: 'a,b', oversubscribe: false, glooStore: null };
  it('gloo ranks on several hosts without a store: refused, naming --gloo-store', () => {
    const refused = jobRefusal(job, 'local-processes', {})!;
    assert.equal(refused.flag, '--hosts');
    assert.match(refused.line, /^--hosts: gloo ranks on several hosts need --gloo-store/);
    assert.equal(jobRefusal({ ...job, glooStore: 'file:/shared/store' }, 'local-processes', {}), null);
  });
  it('mpirun carries its own ranks: several hosts need no store; more ranks than slots are refused as --np', () => {
    assert.equal(jobRefusal(job, 'mpirun', {}), null);
    const crowded = jobRefusal({ ...job, np: 3 }, 'mpirun', {})!;
    assert.equal(crowded.flag, '--np');
    assert.match(crowded.line, /^--np 3: --hosts a,b gives 2 slots/);
    assert.equal(jobRefusal({ ...job, np: 3, oversubscribe: true }, 'mpirun', {}), null);
  });
});

describe('a failing rank names itself', () => {
  it('only where its launcher says it is one of several', () => {
    assert.equal(
      launchedRankLabel('vm', { OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2' }),
      'rank 1 on host vm',
    );
    assert.equal(launchedRankLabel('vm', { RANK: '3', WORLD_SIZE: '4' }), 'rank 3 on host vm');
    assert.equal(launchedRankLabel('vm', { OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '1' }), null);
    assert.equal(launchedRankLabel('vm', {}), null);
  });
});

describe("the ranks' command line is built from the parsed options", () => {
  const child = (argv: string[], program = 'all_reduce_perf'): string[] => {
    const p = parseCommandLine(argv, program);
    assert.ok(p.kind === 'run');
    return childArguments(p.options, program !== 'collbench');
  };
  it('drops --np, --hosts and --oversubscribe in any spelling, prefixes included (--hos, --n=2, --over)', () => {
    // The bug this replaces: the parent accepted `--hos` as --hosts, the ranks got the text `--hos` and failed.
    assert.deepEqual(child(['-b', '8', '--hos', 'h1,h2', '--np=2']), ['--minbytes=8']);
    assert.deepEqual(child(['--np', '3', '--hosts=a,b', '-r', '-1', '-dfloat', '--over']), ['--root=-1']);
  });
  it('writes every non-default flag in long form, and the collective word for the collbench front end', () => {
    assert.deepEqual(
      child(
        [
          'all_gather',
          '-b',
          '1K',
          '-e',
          '64M',
          '-f',
          '2',
          '-d',
          'all',
          '-o',
          'max',
          '--np',
          '2',
          '-I',
          '1',
          '--quiet',
          '--backend',
          'gloo',
          '--gloo-store',
          'file:/tmp/x',
        ],
        'collbench',
      ),
      [
        'all_gather',
        '--minbytes=1024',
        '--maxbytes=67108864',
        '--stepfactor=2',
        '--op=max',
        '--datatype=all',
        '--per_iter_timing=1',
        '--backend=gloo',
        '--quiet',
        '--gloo-store=file:/tmp/x',
      ],
    );
  });
  it('round-trips: the child parses to the same options', () => {
    const argv = [
      '-b',
      '8',
      '-e',
      '128M',
      '-f',
      '2',
      '-r',
      '-1',
      '-z',
      '3',
      '-J',
      'out.json',
      '--csv',
      '-',
      '--np',
      '4',
    ];
    const parent = parseCommandLine(argv, 'broadcast_perf');
    assert.ok(parent.kind === 'run');
    const again = parseCommandLine(childArguments(parent.options, true), 'broadcast_perf');
    assert.ok(again.kind === 'run');
    assert.deepEqual({ ...again.options, np: parent.options.np }, parent.options);
  });
});

describe('launch environment', () => {
  it('recognises an MPI launcher', () => {
    assert.equal(underMpiLauncher({ OMPI_COMM_WORLD_SIZE: '2' }), true);
    assert.equal(underMpiLauncher({}), false);
  });
  it('makes a plain process an isolated ob1 singleton, unless the user chose otherwise', () => {
    const env: NodeJS.ProcessEnv = { OMPI_MCA_pml: 'ucx' };
    prepareSingletonMpi(env);
    assert.equal(env.OMPI_MCA_ess_singleton_isolated, '1');
    assert.equal(env.OMPI_MCA_pml, 'ucx');
    const launched: NodeJS.ProcessEnv = { OMPI_COMM_WORLD_SIZE: '2' };
    prepareSingletonMpi(launched);
    assert.equal(launched.OMPI_MCA_ess_singleton_isolated, undefined);
  });
  it('warns once (launcher rank 0 only) when a multi-process launch gives 1-rank worlds', () => {
    const srun = { SLURM_STEP_ID: '0', SLURM_STEP_NUM_TASKS: '4', SLURM_NTASKS: '4' };
    assert.match(
      disconnectedWorldWarning(1, { ...srun, SLURM_PROCID: '0' }) ?? '',
      /started 4 processes .*not connected.*srun --mpi=pmix/,
    );
    assert.equal(disconnectedWorldWarning(1, { ...srun, SLURM_PROCID: '3' }), null);
    assert.equal(disconnectedWorldWarning(4, { ...srun, SLURM_PROCID: '0' }), null);
    // A batch script or salloc shell has the job's SLURM_NTASKS and SLURM_PROCID=0 but is one process alone.
    assert.equal(disconnectedWorldWarning(1, { SLURM_NTASKS: '4', SLURM_PROCID: '0', SLURM_JOB_ID: '7' }), null);
    assert.equal(disconnectedWorldWarning(1, {}), null);
    assert.match(disconnectedWorldWarning(1, { WORLD_SIZE: '2' }) ?? '', /WORLD_SIZE=2/);
  });
});

describe("the watchdog's limits", () => {
  const native = {
    abort() {
      /* not reached: no wait expires here */
    },
  } as unknown as NativeBackend;
  const io = { err: () => undefined };
  it("the executor holds a finished call's result at most a thirtieth of the shortest limit, and at most 1 s", () => {
    assert.equal(new Watchdog(1, io, native, undefined).resultHoldMs(), 33);
    assert.equal(new Watchdog(3, io, native, undefined).resultHoldMs(), 100);
    assert.equal(new Watchdog(30, io, native, undefined).resultHoldMs(), RESULT_HOLD_MS);
    assert.equal(new Watchdog(0, io, native, undefined).resultHoldMs(), RESULT_HOLD_MS); // no watchdog
    assert.equal(new Watchdog(null, io, native, undefined).resultHoldMs(), RESULT_HOLD_MS); // default floor 120 s
    assert.equal(new Watchdog(null, io, native, undefined, 6).resultHoldMs(), 200);
  });
  it('-T N is the limit of every wait; -T 0 none', () => {
    assert.equal(new Watchdog(7, io, native, undefined).limitSec(1e6), 7);
    assert.equal(new Watchdog(0, io, native, undefined).limitSec(1e6), 0);
  });
  it('without -T: max(floor, 10 x expected), expected from the size and the slowest bandwidth measured', () => {
    const dog = new Watchdog(null, io, native, undefined);
    assert.equal(dog.limitSec(0), DEFAULT_MIN_SEC); // exchanges and barriers: the floor
    // before any row: 50 MB/s assumed; 20 ops of 1 GiB = 20 x (1 ms + 21.5 s) = 429.5 s, x 10
    assert.equal(
      dog.limitSec(dog.expectedSec(20, 2 ** 30)),
      Math.ceil(10 * 20 * (OP_OVERHEAD_SEC + 2 ** 30 / ASSUMED_BYTES_PER_SEC)),
    );
    dog.learn(2 ** 20, 100); // 1 MiB in 100 us: ~10 GB/s measured
    const fast = dog.limitSec(dog.expectedSec(20, 2 ** 30));
    assert.ok(fast < 400 && fast >= DEFAULT_MIN_SEC, String(fast)); // 20 x (1 ms + 0.1 s) x 10 = 20.2 s → the floor
    dog.learn(2 ** 20, 10_000); // a slower row (100 MB/s) wins: the slowest counts
    assert.equal(
      dog.limitSec(dog.expectedSec(20, 2 ** 30)),
      Math.ceil(10 * 20 * (OP_OVERHEAD_SEC + 2 ** 30 * (1e-2 / 2 ** 20))),
    );
    dog.learn(1024, 1e9); // small rows are latency, not bandwidth: ignored
    assert.equal(
      dog.limitSec(dog.expectedSec(20, 2 ** 30)),
      Math.ceil(10 * 20 * (OP_OVERHEAD_SEC + 2 ** 30 * (1e-2 / 2 ** 20))),
    );
  });
  it('COLLBENCH_WATCHDOG_MIN_S sets the floor; garbage there is a usage error', () => {
    assert.equal(
      new Watchdog(null, io, native, undefined, watchdogFloorSec({ COLLBENCH_WATCHDOG_MIN_S: '3' })).limitSec(0),
      3,
    );
    assert.equal(watchdogFloorSec({}), DEFAULT_MIN_SEC);
    for (const bad of ['0', 'abc', '2.5', '-1'])
      assert.throws(
        () => watchdogFloorSec({ COLLBENCH_WATCHDOG_MIN_S: bad }),
        new RegExp(`COLLBENCH_WATCHDOG_MIN_S: '${bad}'`),
      );
  });
});

describe("the --np launcher's exit code (bench/launch/local-ranks.ts)", () => {
  it("is the first failed rank's, not the worst: a peer timing out because of it does not decide", async () => {
    // Rank 0 fails at once with 3; rank 1, left waiting, gives up later with 4 (a watchdog timeout).
    const code = await runLocalRanks(
      {
        np: 2,
        command: process.execPath,
        args: [
          '-e',
          'const r = Number(process.env.RANK); setTimeout(() => process.exit(r === 0 ? 3 : 4), r === 0 ? 0 : 400)',
        ],
      },
      { graceMs: 5_000, err: () => undefined },
    );
    assert.equal(code, 3);
  });
  it('is 0 when every rank succeeds', async () => {
    assert.equal(
      await runLocalRanks({ np: 2, command: process.execPath, args: ['-e', ''] }, { err: () => undefined }),
      0,
    );
  });
});
