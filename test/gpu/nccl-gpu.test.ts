// The nccl backend on real GPUs (skipped, reason printed, where none is visible): every collective ×
// datatype × op on all visible GPUs with #wrong 0 (pairs the library refuses skipped and named), preamble and rank
// lines, -G -z -I -m -y -R -M, the memory cap, two processes joined torchrun-style, and collbench workload's step
// sequences. Correct on one GPU; the cases that need two say so. Needs a libnccl the loader finds (site-packages,
// LD_LIBRARY_PATH, COLLBENCH_NCCL_LIB, or the cached wheel). scripts/gpu-check/10-gpu-tests.sh runs the same cases,
// by the same names, on a GPU machine without Node.js: change both together.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { COLLECTIVES } from '../../bench/core/types.js';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import { overlapCell, type WorkloadDocument } from '../../bench/workload/document.js';
import { binDir, footer, parseRows, runProgram, type CliResult } from '../helpers/cli.js';
import { cachedNccl, ncclModule, visibleGpus } from '../helpers/nccl.js';
import { freePort } from '../helpers/net.js';

const gpus = visibleGpus();
const libEnv: NodeJS.ProcessEnv = {};
if (!process.env.COLLBENCH_NCCL_LIB && gpus.count > 0) {
  const probe = ncclModule()!.probe({});
  if (!probe.library) {
    const cached = cachedNccl();
    if (cached) libEnv.COLLBENCH_NCCL_LIB = cached.lib;
  }
}
const skip = gpus.count === 0 ? `no GPU visible: ${gpus.reason}` : false;
if (skip) console.log(`# skipping the GPU tests: ${skip}`);
const n = gpus.count;
const powerOfTwo = (x: number) => (x & (x - 1)) === 0;

function run(program: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 600_000): CliResult {
  return runProgram(program, ['--backend', 'nccl', ...args], { env: { ...libEnv, ...env }, timeoutMs });
}

/** Every checked half of every row has #wrong 0 (N/A only where nccl-tests prints it). */
function assertAllCorrect(r: CliResult, what: string) {
  assert.equal(r.code, 0, `${what}\n${r.stderr}\n${r.stdout.slice(-3000)}`);
  const rows = parseRows(r.stdout);
  assert.ok(rows.length > 0, `${what}: no rows\n${r.stdout}`);
  for (const row of rows) {
    assert.equal(row.oop.wrong, 0, `${what}: ${row.line}`);
    assert.ok(row.ip.wrong === 0 || row.ip.wrong === null, `${what}: ${row.line}`);
  }
  assert.equal(footer(r.stdout).outOfBounds, 0);
}

describe(`nccl on ${n} visible GPU(s)`, { skip }, () => {
  it('preamble: NCCL version and path, one rank line per GPU as nccl-tests prints it', () => {
    const r = run('all_reduce_perf', ['-g', String(n), '-b', '8', '-e', '8']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend nccl \(NCCL \d+\.\d+\.\d+ \/\S*libnccl\.so[.\d]*\)$/m);
    const ranks = r.stdout.split('\n').filter((l) => l.startsWith('#  Rank'));
    assert.equal(ranks.length, n);
    ranks.forEach((l, i) =>
      assert.match(
        l,
        new RegExp(
          `^#  Rank ${String(i).padStart(2)} Group  0 Pid +\\d+ on +\\S+ device ${String(i).padStart(2)} \\[[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\] \\S.*$`,
        ),
      ),
    );
  });

  for (const coll of COLLECTIVES) {
    it(`${coll}: -d all -o all, in- and out-of-place, all GPUs, #wrong 0`, () => {
      const r = run(`${coll}_perf`, [
        '-g',
        String(n),
        '-d',
        'all',
        '-o',
        'all',
        '-r',
        '-1',
        '-b',
        '8',
        '-e',
        '1M',
        '-f',
        '16',
        '-w',
        '1',
        '-n',
        '2',
        '-c',
        '1',
      ]);
      if (coll === 'hypercube' && !powerOfTwo(n)) {
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`nRanks ${n} is not a power of 2, skipping`));
        return;
      }
      assertAllCorrect(r, coll);
      // What the library refuses (NCCL 2.24-2.28: avg and mulsum on fp8) is skipped and named in one line, never run.
      const skipped = r.stdout.split('\n').filter((l) => l.startsWith('# Skipped '));
      assert.ok(skipped.length <= 1, skipped.join('\n'));
      if (skipped.length === 1) {
        assert.match(
          skipped[0]!,
          /^# Skipped \d+ datatype x op pairs? that NCCL \d+\.\d+\.\d+ \S+ refuses \(NCCL_INVALID_ARGUMENT\): \S/,
        );
        const pairs = skipped[0]!.split('): ')[1]!.split(', ');
        for (const row of parseRows(r.stdout)) assert.ok(!pairs.includes(`${row.type} ${row.redop}`), row.line);
      }
    });
  }

  const modes: [string, string[]][] = [
    ['-G 3 (CUDA graph replay)', ['-G', '3']],
    ['-z 1', ['-z', '1']],
    ['-z 2', ['-z', '2']],
    ['-z 3', ['-z', '3']],
    ['-I 1 (CUDA events)', ['-I', '1']],
    ['-I 1 -z 3', ['-I', '1', '-z', '3']],
    ['-m 4', ['-m', '4']],
    ['-y 1 (NULL stream)', ['-y', '1']],
    ['-R 1', ['-R', '1']],
    ['-R 2', ['-R', '2']],
    ['-u 3 -c 3', ['-u', '3', '-c', '3']],
    ['-C 1 -a 3', ['-C', '1', '-a', '3']],
  ];
  for (const [name, flags] of modes) {
    it(`all_reduce ${name}: correct on all GPUs`, () => {
      assertAllCorrect(
        run('all_reduce_perf', ['-g', String(n), '-b', '8', '-e', '4M', '-f', '8', '-o', 'all', ...flags]),
        name,
      );
    });
  }

  it('-I prints the per-iteration columns from CUDA events', () => {
    const r = run('all_reduce_perf', ['-g', String(n), '-b', '1K', '-e', '1K', '-I', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# Per-Iteration Report: CUDA event timing; i_\* uses max over process rows $/m);
  });

  it('-M prints the GPU memory line', () => {
    const r = run('all_reduce_perf', ['-g', String(n), '-b', '1M', '-e', '1M', '-M', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^# GPU memory usage     : Initialization .* \| User-Allocated .* \| Collective .* \| Total  .*$/m,
    );
  });

  it('a maximum size beyond GPU memory is reduced, as nccl-tests does', () => {
    // 1024G: 1 TiB, more than any GPU has; G is the largest unit collbench and nccl-tests take (no T).
    const r = run('all_reduce_perf', ['-b', '1024G', '-e', '1024G', '-c', '0', '-n', '1', '-w', '0']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# Reducing maxBytes to \d+ due to memory limitation$/m);
  });

  it('-t 2 -g 1 on 2 GPUs: ranks numbered across "threads"', { skip: n < 2 ? 'needs 2 GPUs' : false }, () => {
    assertAllCorrect(run('all_gather_perf', ['-t', '2', '-g', '1', '-b', '8', '-e', '64K', '-f', '8']), '-t 2');
  });

  it('NCCL_TESTS_SPLIT=MOD 1 with one process: a single group, correct results', () => {
    assertAllCorrect(
      run('all_reduce_perf', ['-g', String(n), '-b', '8', '-e', '64K', '-f', '8'], { NCCL_TESTS_SPLIT: 'MOD 1' }),
      'split',
    );
  });

  it(
    'torchrun-style: one process per GPU joined by the TCP rendezvous',
    { skip: n < 2 ? 'needs 2 GPUs' : false },
    async () => {
      const port = await freePort();
      const procs = [0, 1].map(
        (rank) =>
          new Promise<CliResult>((resolve) => {
            const c = spawn(
              join(binDir, 'all_reduce_perf'),
              ['--backend', 'nccl', '-b', '8', '-e', '1M', '-f', '8', '-o', 'all'],
              {
                env: {
                  ...process.env,
                  ...libEnv,
                  RANK: String(rank),
                  WORLD_SIZE: '2',
                  LOCAL_RANK: String(rank),
                  MASTER_ADDR: '127.0.0.1',
                  MASTER_PORT: String(port),
                },
              },
            );
            let stdout = '',
              stderr = '';
            c.stdout.on('data', (d) => {
              stdout += d;
            });
            c.stderr.on('data', (d) => {
              stderr += d;
            });
            c.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
          }),
      );
      const [r0, r1] = await Promise.all(procs);
      assertAllCorrect(r0, 'rank 0');
      assert.equal(r1.code, 0, r1.stderr);
      assert.equal(r1.stdout, '', 'only rank 0 prints');
      assert.equal(r0.stdout.split('\n').filter((l) => l.startsWith('#  Rank')).length, 2);
    },
  );

  it('collbench workload ddp and fsdp on every visible GPU: the step sequence checked (#wrong 0), overlap measured', () => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-gpu-workload-'));
    try {
      for (const kind of ['ddp', 'fsdp']) {
        const json = join(dir, `${kind}.json`);
        const r = runProgram(
          'collbench',
          [
            'workload',
            kind,
            '--params',
            '1e8',
            '--layers',
            '8',
            '--backend',
            'nccl',
            '-g',
            String(n),
            '--repeats',
            '3',
            '-n',
            '5',
            '--compute-ms',
            '20',
            '-J',
            json,
            '--quiet',
          ],
          { env: libEnv, timeoutMs: 600_000 },
        );
        assert.equal(r.code, 0, `${kind}: ${r.stderr}\n${r.stdout}`);
        const doc = JSON.parse(readFileSync(json, 'utf8')) as WorkloadDocument;
        assert.deepEqual(schemaErrors('collbench-workload.v1', doc), []);
        assert.equal(doc.nranks, n);
        for (const c of doc.configurations) {
          assert.equal(c.wrong, 0, `${kind} ${c.label}`);
          assert.ok(c.overlapPct !== null && c.commUs.median > 0, `${kind} ${c.label}`);
          // busbw = algbw x 2(n-1)/n: 0 by definition on one GPU
          assert.ok(n === 1 ? c.busBwGBps === 0 : c.busBwGBps > 0, `${kind} ${c.label}: busbw ${c.busBwGBps}`);
        }
        console.log(
          `# ${kind}: ${doc.configurations.map((c) => `${c.label}: ${(c.commUs.median / 1e3).toFixed(2)} ms, overlap ${overlapCell(c)} %`).join('; ')}`,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// -D: collbench's own device-API all_reduce kernels on the symmetric windows of -R 2 (issue 28 item 9). A build
// without a kernel variant for the loaded NCCL refuses in one line (exit 5): that is checked instead of the runs.
describe(`nccl -D device-API kernels on ${n} visible GPU(s)`, { skip }, () => {
  const probe = () => run('all_reduce_perf', ['-D', '1', '-R', '2', '-b', '8', '-e', '8']);
  it('-D 1 and 2 (LSA, LSA vectorized): 8 B-64 MiB, in-place and out-of-place, #wrong 0; or one refusal line naming the versions', (t) => {
    const p = probe();
    if (p.code === 5) {
      assert.equal(p.stderr.trim().split('\n').length, 1, p.stderr);
      assert.match(p.stderr, /-D 1: (the device-API kernels were built against NCCL|this collbench was built without)/);
      t.skip('this build has no device-API kernels for the loaded NCCL (its one-line refusal checked; no kernel ran)');
      return;
    }
    for (const impl of ['1', '2']) {
      assertAllCorrect(
        run('all_reduce_perf', ['-g', String(n), '-D', impl, '-R', '2', '-b', '8', '-e', '64M', '-f', '2']),
        `-D ${impl}`,
      );
    }
  });
  it('-D 2: the scalar head and tail (-u 1) and the lanes of 1-, 2- and 8-byte types, #wrong 0', (t) => {
    if (probe().code === 5) {
      t.skip('this build has no device-API kernels for the loaded NCCL');
      return;
    }
    assertAllCorrect(
      run('all_reduce_perf', ['-D', '2', '-R', '2', '-u', '1', '-b', '8', '-e', '1M', '-f', '4']),
      '-D 2 -u 1',
    );
    for (const d of ['int8', 'half', 'double', 'uint64']) {
      assertAllCorrect(
        run('all_reduce_perf', ['-D', '2', '-R', '2', '-d', d, '-b', '8', '-e', '1M', '-f', '8']),
        `-D 2 -d ${d}`,
      );
    }
    assertAllCorrect(
      run('all_reduce_perf', ['-D', '1', '-R', '2', '-V', '1', '-G', '2', '-b', '8', '-e', '1M', '-f', '8']),
      '-D 1 -V 1 -G 2',
    );
  });
  it('-D 3 and 4 (multimem): #wrong 0 where NCCL gives multimem, else one refusal line (5: no multicast, 3: NCCL refused)', (t) => {
    if (probe().code === 5) {
      t.skip('this build has no device-API kernels for the loaded NCCL');
      return;
    }
    for (const impl of ['3', '4']) {
      const r = run('all_reduce_perf', ['-g', String(n), '-D', impl, '-R', '2', '-b', '8', '-e', '64M', '-f', '2']);
      if (r.code === 0) {
        assertAllCorrect(r, `-D ${impl}`);
        continue;
      }
      assert.ok(r.code === 5 || r.code === 3, `exit ${r.code}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`-D ${impl} \\(multimem( vectorized)?\\): `));
    }
  });
});
