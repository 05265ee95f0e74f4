// End-to-end behaviour of the binaries on the MPI backend: exit codes and one-line errors, refused
// GPU-only flags, the missing-backend message, timing modes and columns, min-bandwidth verdicts,
// the disconnected-world warning and the -T watchdog on a really stopped rank.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { binDir, footer, mpirunArgs, parseRows, repoRoot, runMpirun, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';
import { join } from 'node:path';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const oneLine = (s: string) => s.trim().split('\n').length === 1;

describe('usage errors: exit 2, one line naming the flag', () => {
  const cases: [string[], RegExp][] = [
    [['-b', '0', '-e', '1M', '-f', '2'], /-b/],
    [['-b', '1M', '-e', '1K'], /-b|-e/],
    [['--no-such-flag'], /no-such-flag/],
    [['-r', 'all'], /-r/],
    [['-f', '1.5'], /-f/],
    [['-d', 'float128'], /-d/],
    [['-o', 'xor'], /-o/],
    [['-n', 'abc'], /-n/],
  ];
  for (const [args, flag] of cases) {
    it(args.join(' '), () => {
      const r = runProgram('all_reduce_perf', args);
      assert.equal(r.code, 2, r.stderr + r.stdout);
      assert.ok(oneLine(r.stderr), r.stderr);
      assert.match(r.stderr, flag);
      assert.equal(r.stdout, '');
    });
  }
  // A bad watchdog floor is refused once, before any rank starts: not by every rank of an --np job as its watchdog
  // starts (two copies of the line, then the launcher's own about rank 1's exit), on either backend.
  for (const [backend, np] of [
    ['mpi', null],
    ['mpi', '2'],
    ['gloo', '2'],
  ] as const) {
    it(`COLLBENCH_WATCHDOG_MIN_S=abc, ${backend}${np ? `, --np ${np}` : ''}`, () => {
      const r = runProgram(
        'all_reduce_perf',
        ['--backend', backend, ...(np ? ['--np', np] : []), '-b', '8', '-e', '8'],
        {
          env: { COLLBENCH_WATCHDOG_MIN_S: 'abc' },
        },
      );
      assert.equal(r.code, 2, r.stderr + r.stdout);
      assert.ok(oneLine(r.stderr), r.stderr);
      assert.match(
        r.stderr.trimEnd(),
        /^all_reduce_perf: COLLBENCH_WATCHDOG_MIN_S: 'abc' is not a whole number of seconds ≥ 1$/,
      );
      assert.equal(r.stdout, '');
    });
  }
  it('a root that does not exist in the world', () => {
    const r = runProgram('broadcast_perf', ['-r', '3', '-b', '8', '-e', '8']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /-r.*root 3/);
  });
});

describe('GPU-only flags are refused on the CPU backend, not ignored', () => {
  for (const args of [
    ['-G', '1'],
    ['-g', '2'],
    ['-R', '1'],
    ['-M', '1'],
    ['-t', '2'],
    ['-y', '1'],
    ['-x', '1'],
    ['-V', '32'],
    ['-p', '1'],
  ]) {
    it(args.join(' '), () => {
      const r = runProgram('all_reduce_perf', [...args, '-b', '8', '-e', '8']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /needs the nccl backend; the mpi backend runs on CPUs/);
      assert.ok(oneLine(r.stderr));
    });
  }
});

describe('help, version and backends', () => {
  it('-J into a folder that does not exist is refused before the run (not silently ignored)', () => {
    const r = runProgram('all_reduce_perf', ['-J', '/nonexistent-dir/out.json', '-b', '8', '-e', '8']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /-J: cannot write \/nonexistent-dir\/out.json: folder \/nonexistent-dir does not exist/);
  });
  it('-h prints usage and exits 0', () => {
    const r = runProgram('all_reduce_perf', ['-h']);
    assert.equal(r.code, 0);
    for (const f of ['--minbytes', '--stepfactor', '--per_iter_timing', '--np']) assert.ok(r.stdout.includes(f), f);
  });
  it('explains a missing backend and exits 5', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8'], { env: { COLLBENCH_NATIVE_DIR: '/nonexistent' } });
    assert.equal(r.code, 5);
    assert.match(r.stderr, /no backend built: install OpenMPI \(apt install openmpi-bin libopenmpi-dev\) and run make/);
  });
  it('refuses a backend that is not built', () => {
    // A module directory holding only the mpi module: gloo is then "not built".
    const dir = mkdtempSync(join(tmpdir(), 'collbench-modules-'));
    symlinkSync(join(repoRoot, 'build', 'Release', 'collbench_mpi.node'), join(dir, 'collbench_mpi.node'));
    const r = runProgram('all_reduce_perf', ['--backend', 'gloo', '-b', '8', '-e', '8'], {
      env: { COLLBENCH_NATIVE_DIR: dir },
    });
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /backend gloo is not built .*: install Gloo \(apt install libgloo-dev\) and run make/);
  });
});

describe('timing modes and columns', () => {
  it('single process: one rank, busbw 0, preamble names collbench and Open MPI', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '1K', '-f', '4']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend mpi \(Open MPI \d+\.\d+\.\d+\)$/m);
    assert.match(r.stdout, /^#  Rank  0 Group  0 Pid +\d+ on +\S+ device cpu \[.*\] .+$/m);
    const rows = parseRows(r.stdout);
    assert.deepEqual(
      rows.map((x) => x.size),
      [8, 32, 128, 512],
    );
    for (const row of rows) assert.equal(row.oop.busbw, 0);
  });
  for (const z of ['1', '2', '3']) {
    it(`-z ${z} runs checked at 2 ranks`, () => {
      const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '64K', '-f', '8', '-z', z, '-m', '2', '-n', '3']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /# Blocking Enabled: /);
      assert.equal(parseRows(r.stdout).length, 3);
      assert.equal(footer(r.stdout).outOfBounds, 0);
    });
  }
  it('-I 1 adds four per-iteration columns per half; -C relabels time; -S appends a timestamp', () => {
    const r = runMpirun(2, 'reduce_scatter_perf', [
      '-b',
      '4K',
      '-e',
      '4K',
      '-I',
      '1',
      '-K',
      '1',
      '-n',
      '5',
      '-C',
      '1',
      '-S',
      '1',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /out-of-place \(\+ per-iteration\)/);
    assert.match(r.stdout, /cputime/);
    assert.match(r.stdout, /i_min\s+i_max\s+i_p99\s+i_cv%/);
    const data = r.stdout.split('\n').filter((l) => l && !l.startsWith('#'));
    assert.equal(data.length, 1);
    const f = data[0].trim().split(/\s+/);
    // size count type redop root + 2 × (time algbw busbw #wrong + 4 per-iter) + date time
    assert.equal(f.length, 5 + 2 * 8 + 2, data[0]);
    assert.match(data[0], /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });
  it('-N 3 repeats the sweep three times', () => {
    const r = runProgram('all_gather_perf', ['-b', '1K', '-e', '2K', '-f', '2', '-N', '3']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(parseRows(r.stdout).length, 6);
  });
  it('-c 0 prints N/A and -u/-w/-a are accepted', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '1K', '-c', '0', '-u', '3', '-w', '2', '-a', '3']);
    assert.equal(r.code, 0, r.stderr);
    const [row] = parseRows(r.stdout);
    assert.equal(row.oop.wrong, null);
    assert.equal(row.ip.wrong, null);
  });
  it('-u misaligns buffers and the check still passes', () => {
    const r = runMpirun(3, 'all_gather_perf', ['-b', '1K', '-e', '8K', '-f', '2', '-u', '1', '-d', 'all']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});

describe('NCCL_TESTS_MIN_BW', () => {
  it('passes with a low threshold', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '64K', '-e', '64K'], { env: { NCCL_TESTS_MIN_BW: '0.0001' } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /# Avg bus bandwidth    : \S+ OK/);
  });
  it('fails with exit 7 when the average is below 0.9 × the threshold', () => {
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '64K', '-e', '64K'], {
      env: { NCCL_TESTS_MIN_BW: '100000' },
      mpirunExtra: ['-x', 'NCCL_TESTS_MIN_BW'],
    });
    assert.equal(r.code, 7, r.stderr);
    assert.match(r.stdout, /# Avg bus bandwidth    : \S+ FAILED/);
  });
});

describe('alltoallv matrix file', () => {
  it('runs a matrix-driven alltoallv with #wrong 0', () => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-a2av-'));
    const file = join(dir, 'm.txt');
    writeFileSync(file, '0 1024 64\n4096 0 32\n16 48 2048\n');
    const r = runMpirun(3, 'alltoallv_perf', ['-b', '8K', '-e', '8K'], {
      env: { NCCL_TESTS_ALLTOALLV_MATRIX_FILE: file },
      mpirunExtra: ['-x', 'NCCL_TESTS_ALLTOALLV_MATRIX_FILE'],
    });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const [row] = parseRows(r.stdout);
    assert.equal(row.count, 0);
    assert.equal(row.oop.wrong, 0);
  });
  it('a malformed matrix is a usage error naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-a2av-'));
    const file = join(dir, 'bad.txt');
    writeFileSync(file, '0 1 x\n');
    const r = runProgram('alltoallv_perf', ['-b', '8K', '-e', '8K'], {
      env: { NCCL_TESTS_ALLTOALLV_MATRIX_FILE: file },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bad\.txt/);
  });
});

describe('launch', () => {
  it('--np re-executes under mpirun', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', '--np', '3', '--oversubscribe']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((r.stdout.match(/^#  Rank/gm) ?? []).length, 3);
    assert.equal((r.stdout.match(/Collective test concluded/g) ?? []).length, 1);
  });
  it('warns once when several launched processes each run a 1-rank world (nccl-tests #213)', async () => {
    const runOne = (rank: number) =>
      new Promise<{ code: number | null; stderr: string }>((res) => {
        const child = spawn(join(binDir, 'all_reduce_perf'), ['-b', '8', '-e', '8'], {
          env: { ...process.env, WORLD_SIZE: '2', RANK: String(rank) },
        });
        let stderr = '';
        child.stderr.on('data', (d) => {
          stderr += d;
        });
        child.on('exit', (code) => res({ code, stderr }));
      });
    const [a, b] = await Promise.all([runOne(0), runOne(1)]);
    assert.equal(a.code, 0);
    assert.equal(b.code, 0);
    assert.match(a.stderr, /started 2 processes .* not connected/);
    assert.doesNotMatch(b.stderr, /not connected/);
  });
  it('-T aborts with exit 4 when a rank stops answering (SIGSTOP)', async () => {
    const args = [...mpirunArgs(2), join(binDir, 'all_reduce_perf'), '-b', '64K', '-e', '64K', '-N', '0', '-T', '2'];
    const child = spawn('mpirun', args, { env: process.env });
    let stdout = '',
      stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    // Wait for rows to flow, then freeze rank 1 (a real hung peer).
    await new Promise<void>((res) => {
      const t = setInterval(() => {
        if (stdout.split('\n').length > 20) {
          clearInterval(t);
          res();
        }
      }, 50);
    });
    const { execFileSync } = await import('node:child_process');
    const pids = execFileSync('pgrep', ['-f', 'all_reduce_perf -b 64K -e 64K -N 0 -T 2'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
    const ranks = pids.filter((p) => p !== child.pid);
    // stop the highest pid (a rank, not mpirun)
    const victim = Math.max(...ranks);
    process.kill(victim, 'SIGSTOP');
    const code = await new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
    try {
      process.kill(victim, 'SIGKILL');
    } catch {
      /* already gone */
    }
    assert.equal(code, 4, stderr);
    assert.match(stderr, /Test timeout \(2s\)/);
  });
  for (const [how, limit, extra, env, said] of [
    ['-T 3', 3, ['-T', '3'], {}, /Test timeout \(3s\) in /],
    [
      'no -T: the default watchdog (its floor lowered to 3 s)',
      3,
      [],
      { COLLBENCH_WATCHDOG_MIN_S: '3' },
      /Test timeout \(\d+s, default watchdog; -T sets it, -T 0 disables it\) in /,
    ],
  ] as const) {
    it(`${how}: a rank stopped during warm-up, before the first row, ends the job with exit 4`, async () => {
      // A long warm-up of small sizes (rank 0 sleeps 2 ms after every MPI_Allreduce: 7 sizes x 100 iterations, about
      // 1.4 s) so the ranks are surely past MPI_Init and before row 1 when one is frozen, and every warm-up's default
      // limit stays at the floor (a large size's is minutes: freezing one there outlived this test). Before -T covered
      // warm-up and barriers (and without a default watchdog), this run hung.
      const tag = `Twarmup-${extra.length}-${process.pid}`;
      const dir = mkdtempSync(join(tmpdir(), 'collbench-T-'));
      const late = { LD_PRELOAD: buildFault('late_allreduce', dir), LATE_RANK: '0', LATE_US: '2000' };
      const args = [
        '-b',
        '1K',
        '-e',
        '64K',
        '-f',
        '2',
        '-n',
        '200',
        '-w',
        '100',
        ...extra,
        '--np',
        '2',
        '-J',
        join(dir, `${tag}.json`),
      ];
      const child = spawn(join(binDir, 'all_reduce_perf'), args, { env: { ...process.env, ...late, ...env } });
      let stdout = '',
        stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
      // the preamble's device lines mean both ranks are up (MPI initialised, rank lines gathered)
      await new Promise<void>((res) => {
        const t = setInterval(() => {
          if (/Rank +1 /.test(stdout)) {
            clearInterval(t);
            res();
          }
        }, 50);
      });
      const { execFileSync } = await import('node:child_process');
      // the ranks' command lines carry the parsed options (--output_file=…), the launcher's the typed -J
      // (mpirun's own command line holds them too: only the processes that are node itself)
      const ranks = execFileSync('pgrep', ['-f', `^${process.execPath} .*output_file=.*${tag}`], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
      assert.equal(ranks.length, 2, `ranks: ${ranks.join(' ')}`);
      assert.doesNotMatch(
        stdout,
        /^ +\d+ +\d+ +float/m,
        'a row was printed before the rank was stopped: the test did not stop it in warm-up',
      );
      const victim = Math.max(...ranks);
      process.kill(victim, 'SIGSTOP');
      const t0 = Date.now();
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      try {
        process.kill(victim, 'SIGKILL');
      } catch {
        /* already gone */
      }
      assert.equal(code, 4, stderr);
      assert.match(stderr, said);
      // the default limit depends on the wait it caught (10 x its expected time, at least the floor): take it from the message
      const reported = Number(/Test timeout \((\d+)s/.exec(stderr)![1]);
      assert.ok(reported >= limit, `limit ${reported} s below the floor ${limit} s`);
      assert.ok(Date.now() - t0 < reported * 1000 + 10_000, `took ${Date.now() - t0} ms for a ${reported} s limit`);
      assert.match(stderr, /in (warm-up of all_reduce float sum|the barrier before all_reduce)/);
    });
  }
});
