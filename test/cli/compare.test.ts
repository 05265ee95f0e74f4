// `collbench compare` end to end with the built binary and real children: Open MPI's allreduce algorithms
// (coll_tuned_allreduce_algorithm 1–6 through OMPI_MCA_ variables) on 4 ranks, Gloo's algorithms, a hung,
// a crashing and a rejected combination, a real data fault (the PMPI interposer of fault-injection.test.ts)
// for the correctness matrix, Ctrl-C, and bad input (exit 2, one line, nothing run).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompareDocument } from '../../bench/compare/document.js';
import type { ReportDocument } from '../../bench/report/schema.js';
import { binDir, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const made: string[] = [];
const fresh = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'collbench-compare-test-'));
  made.push(d);
  return d;
};
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});
const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const oneLine = (s: string): boolean => s.trim() !== '' && !s.trim().includes('\n');

/** Processes of this test's children still alive (a hung child must never be left behind). */
function leftovers(marker: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).stdout;
  return ps.split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo'));
}

describe('collbench compare: bad input exits 2 with one line and runs nothing', () => {
  const cases: [string, string[], RegExp][] = [
    ['no settings', ['--', 'all_reduce_perf'], /^collbench: compare: no settings to compare/],
    [
      'malformed --env',
      ['--env', 'NCCL_ALGO', '--', 'all_reduce_perf'],
      /^collbench: --env: expected NAME=value1,value2/,
    ],
    ['empty value', ['--env', 'NCCL_PROTO=LL,', '--', 'all_reduce_perf'], /^collbench: --env: NCCL_PROTO: empty value/],
    [
      'bad MCA name',
      ['--mca', 'coll tuned=1', '--', 'all_reduce_perf'],
      /^collbench: --mca: 'coll tuned' is not a valid MCA parameter name/,
    ],
    [
      'unknown command after --',
      ['--env', 'A=1', '--', 'bash', '-c', 'echo hi'],
      /^collbench: compare: unknown program 'bash' after --/,
    ],
    ['no program', ['--env', 'A=1'], /^collbench: compare: no program; put it after --/],
    [
      'bad program flag',
      ['--env', 'A=1', '--', 'all_reduce_perf', '-d', 'float128'],
      /^collbench: compare: all_reduce_perf: -d: /,
    ],
    [
      '-J in the program',
      ['--env', 'A=1', '--', 'all_reduce_perf', '-J', 'x.json'],
      /^collbench: -J: compare writes each run's report itself/,
    ],
    [
      'Gloo algorithm without gloo',
      ['--gloo-algo', 'ring', '--', 'all_reduce_perf'],
      /needs --backend gloo \(in combination C1: gloo-algo=ring\)/,
    ],
    [
      'tuner CSV of MPI settings',
      ['--mca', 'pml=ob1', '--tuner-csv', 't.conf', '--', 'all_reduce_perf', '--backend', 'mpi'],
      /^collbench: --tuner-csv: writes NCCL/,
    ],
    [
      'tuner CSV of alltoall',
      ['--env', 'NCCL_ALGO=Ring', '--tuner-csv', 't.conf', '--', 'alltoall_perf'],
      /^collbench: --tuner-csv: NCCL's example tuner plugin does not tune alltoall/,
    ],
    [
      'unknown compare flag',
      ['--envs', 'A=1', '--', 'all_reduce_perf'],
      /^collbench: compare: unknown option '--envs'/,
    ],
    [
      'bad --runs',
      ['--env', 'A=1', '--runs', '0', '--', 'all_reduce_perf'],
      /^collbench: compare: --runs: repeat count must be an integer between 1 and 1000, got 0/,
    ],
    [
      'an NCCL_ALGO typo',
      ['--env', 'NCCL_ALGO=Rnig,Tree', '--', 'all_reduce_perf', '--backend', 'nccl'],
      /^collbench: --env: NCCL_ALGO: 'Rnig' in 'Rnig' is no algorithm NCCL knows; valid: Tree, Ring, /,
    ],
    [
      'NCCL variables on the mpi backend',
      ['--env', 'NCCL_ALGO=Ring,Tree', '--', 'all_reduce_perf', '--backend', 'mpi'],
      /^collbench: --env NCCL_ALGO: has no effect on the mpi backend \(only NCCL reads NCCL_\* variables\)/,
    ],
  ];
  for (const [what, args, re] of cases) {
    it(what, () => {
      const dir = join(fresh(), 'reports');
      const r = runProgram('collbench', ['compare', '--reports-dir', dir, ...args], { timeoutMs: 30_000 });
      assert.equal(r.code, 2, `${r.stderr}${r.stdout}`);
      assert.ok(oneLine(r.stderr), r.stderr);
      assert.match(r.stderr, re);
      assert.equal(r.stdout, '');
      assert.equal(existsSync(dir), false, 'nothing ran');
    });
  }

  it("NCCL settings where the nccl backend cannot run (the README's example without a GPU): exit 5 before any run", (t) => {
    if (/^\s*nccl\s+usable/m.test(runProgram('collbench', ['info']).stdout))
      return t.skip('the nccl backend runs here');
    const dir = join(fresh(), 'reports');
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--reports-dir',
        dir,
        '--env',
        'NCCL_ALGO=Ring,Tree',
        '--env',
        'NCCL_PROTO=Simple,LL,LL128',
        '--',
        'all_reduce_perf',
        '-b',
        '8',
        '-e',
        '1G',
        '-f',
        '2',
      ],
      { timeoutMs: 30_000 },
    );
    assert.equal(r.code, 5, r.stderr);
    assert.match(
      r.stderr,
      /^collbench: compare: --env NCCL_ALGO compares NCCL settings, but the nccl backend cannot run here/,
    );
    assert.ok(oneLine(r.stderr), r.stderr);
    assert.equal(existsSync(dir), false, 'nothing ran');
  });

  it('prints its help', () => {
    const r = runProgram('collbench', ['compare', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^USAGE: collbench compare SETTINGS… \[options\] -- <program> <args…>/);
    assert.match(r.stdout, /--tuner-csv <file>/);
  });
});

describe('collbench compare on Open MPI: coll_tuned_allreduce_algorithm 1–6 on 4 ranks, 2 runs', () => {
  const dir = fresh();
  const out = (f: string): string => join(dir, f);
  const values = ['1', '2', '3', '4', '5', '6'];
  let r: ReturnType<typeof runProgram>;
  let doc: CompareDocument;

  before(() => {
    r = runProgram(
      'collbench',
      [
        'compare',
        '--mca',
        `coll_tuned_allreduce_algorithm=${values.join(',')}`,
        '--runs',
        '2',
        '--json',
        out('c.json'),
        '--csv',
        out('c.csv'),
        '--md',
        out('c.md'),
        '--html',
        out('c.html'),
        '--junit',
        out('c.xml'),
        '--reports-dir',
        out('reports'),
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '4M',
        '-f',
        '4',
        '--np',
        '4',
        '--oversubscribe',
        '--backend',
        'mpi',
      ],
      { timeoutMs: 300_000 },
    );
    doc = readJson<CompareDocument>(out('c.json'));
  });

  it('completes: every combination ran twice, exit 0', () => {
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    assert.equal(doc.kind, 'collbench-compare');
    assert.equal(doc.status, 'complete');
    assert.equal(doc.nranks, 4);
    assert.match(doc.backend ?? '', /^mpi \(Open MPI/);
    assert.deepEqual(
      doc.combinations.map((c) => c.label),
      ['default', ...values.map((v) => `mca coll_tuned_allreduce_algorithm=${v}`)],
    );
    for (const c of doc.combinations) {
      assert.equal(c.status, 'ok', `${c.id}: ${c.error}`);
      assert.deepEqual(
        c.runs.map((x) => x.status),
        ['ok', 'ok'],
      );
    }
  });

  it("every combination's check passes at every size (#wrong 0, checked, two samples each)", () => {
    const sizes = doc.cases[0]!.sizes;
    assert.deepEqual(
      sizes.map((s) => s.sizeBytes),
      [1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
    );
    for (const s of sizes) {
      for (const x of s.results) {
        assert.equal(x.wrong, 0, `${x.id} at ${s.sizeBytes}`);
        assert.equal(x.n, 2, `${x.id} at ${s.sizeBytes}`);
      }
    }
    assert.match(r.stdout, /^# correctness: #wrong 0 for every combination at every size/m);
  });

  it('finds different winners at different sizes', () => {
    const best = doc.cases[0]!.sizes.map((s) => s.best);
    assert.ok(best.every((b) => b !== null));
    assert.ok(doc.winners.length >= 2, `one winner everywhere: ${best.join(' ')}`);
    assert.ok(doc.cases[0]!.crossovers.length >= 1);
    assert.match(
      r.stdout,
      new RegExp(`^# winners: ${doc.winners.join(', ')} \\(${doc.winners.length} distinct\\)$`, 'm'),
    );
  });

  it('really ran each algorithm: every rank-0 report carries its OMPI_MCA_ settings, the default none', () => {
    const files = readdirSync(out('reports')).filter((f) => f.endsWith('.json'));
    assert.equal(files.length, 7 * 2);
    for (const c of doc.combinations) {
      for (const run of c.runs) {
        const rep = readJson<ReportDocument>(run.report!);
        assert.equal(rep.world.nranks, 4);
        assert.equal(rep.status, 'complete');
        const env = rep.provenance.env;
        if (c.baseline) {
          assert.equal(env.OMPI_MCA_coll_tuned_allreduce_algorithm, undefined);
          assert.equal(env.OMPI_MCA_coll_tuned_use_dynamic_rules, undefined);
        } else {
          assert.equal(env.OMPI_MCA_coll_tuned_allreduce_algorithm, c.settings[0]!.value, c.id);
          assert.equal(env.OMPI_MCA_coll_tuned_use_dynamic_rules, '1', c.id);
        }
      }
    }
  });

  it('interleaves the runs: run 1 in order, run 2 reversed', () => {
    const runs = doc.combinations.flatMap((c) =>
      c.runs.map((x) => ({ id: c.id, run: x.run, start: readJson<ReportDocument>(x.report!).startTime })),
    );
    runs.sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
    assert.deepEqual(
      runs.map((x) => `${x.id}/${x.run}`),
      ['C0/1', 'C1/1', 'C2/1', 'C3/1', 'C4/1', 'C5/1', 'C6/1', 'C6/2', 'C5/2', 'C4/2', 'C3/2', 'C2/2', 'C1/2', 'C0/2'],
    );
  });

  it('prints the table and writes every output from the same verdict', () => {
    const rows = r.stdout.split('\n').filter((l) => /^ +\d+ /.test(l));
    assert.equal(rows.length, 7);
    doc.cases[0]!.sizes.forEach((s, i) => {
      assert.match(rows[i]!, new RegExp(`^ +${s.sizeBytes} .* ${s.best} +[+-]\\d+\\.\\d%`));
    });
    assert.ok(!r.stdout.includes('NCCL chose'), 'no NCCL column on a CPU backend');
    assert.equal(doc.probe, null);
    assert.equal(readFileSync(out('c.csv'), 'utf8').trim().split('\n').length, 1 + 7 * 7);
    const md = readFileSync(out('c.md'), 'utf8');
    assert.match(md, /^## Bus bandwidth: float sum root -1$/m);
    assert.match(md, /^### #wrong: float sum root -1$/m);
    const html = readFileSync(out('c.html'), 'utf8');
    assert.match(html, /data-chart="busbw" data-series="7"/); // one line per combination
    assert.match(html, /data-table="verdict"/);
    assert.match(
      readFileSync(out('c.xml'), 'utf8'),
      /<testsuites name="collbench compare all_reduce_perf" tests="7" failures="0"/,
    );
  });
});

describe('collbench compare: a hung, a crashing and a rejected combination', () => {
  it('reports the timeout and the crash with their errors; the others complete; nothing is left running', () => {
    const dir = fresh();
    const marker = `collbench-hang-${process.pid}`;
    // C1 waits for a debugger forever, C2 is a harmless Node option, C3 cannot start its preload module
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--runs',
        '2',
        '--timeout',
        '4',
        '--json',
        join(dir, 'c.json'),
        '--env',
        `NODE_OPTIONS=--inspect-brk=0 --title=${marker},--max-old-space-size=512,--require=${dir}/missing.cjs`,
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '8K',
        '-f',
        '8',
        '--np',
        '2',
        '--backend',
        'mpi',
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 3, `${r.stderr}\n${r.stdout}`); // a failure outranks a timeout
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    const [c0, c1, c2, c3] = doc.combinations;
    assert.equal(c0!.status, 'ok');
    assert.equal(c2!.status, 'ok');
    assert.equal(c1!.status, 'timeout');
    assert.equal(c1!.error, 'run 1: timed out after 4 s (killed)');
    assert.deepEqual(
      c1!.runs.map((x) => x.status),
      ['timeout', 'skipped'],
    );
    assert.equal(c3!.status, 'failed');
    assert.match(c3!.error!, /^run 1: exit 1: Error: Cannot find module '.*missing\.cjs'/);
    for (const s of doc.cases[0]!.sizes) {
      assert.ok(s.best === 'C0' || s.best === 'C2', `best ${s.best}`);
      assert.equal(s.results[1]!.n, 0);
    }
    assert.match(
      r.stdout,
      /^# {2}C1 +NODE_OPTIONS=--inspect-brk=0 .* +timeout +N\/A +0\/2 +run 1: timed out after 4 s \(killed\)$/m,
    );
    assert.match(r.stdout, /^ +1024 +\d.* +timeout +\d.* +failed +C[02] /m);
    assert.match(r.stderr, /C1 NODE_OPTIONS=--inspect-brk=0 .*: skipped \(failed before\)/);
    assert.deepEqual(leftovers(marker), []);
  });

  it('marks a setting Open MPI cannot use (pml ucx here) as failed and still compares the rest', () => {
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--mca',
        'pml=ucx,ob1',
        '--repeats',
        '1',
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '4K',
        '-f',
        '4',
        '--np',
        '2',
        '--backend',
        'mpi',
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 3, r.stderr);
    // The error is the child's first stderr line: usually Open MPI naming ucx, but under load UCX itself may
    // crash first (exit 139, "Caught signal 11"): either way the combination is failed with its reason shown.
    assert.match(r.stdout, /^# {2}C1 +mca pml=ucx +failed +N\/A +0\/1 +run 1: exit \d+: (.*ucx|.*signal)/im);
    assert.match(r.stdout, /^# {2}C2 +mca pml=ob1 +ok +0 +1\/1$/m);
  });
});

describe('collbench compare: the correctness matrix catches a combination that corrupts data', () => {
  let lib = '';
  before(() => {
    lib = buildFault('corrupt_allreduce', fresh());
  });

  it('shows #wrong per size for that combination only, never makes it best, exits 7', () => {
    const dir = fresh();
    // The interposer flips one element on rank 1 when CORRUPT_RANK is set: only in combination C1.
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--env',
        `LD_PRELOAD=${lib}`,
        '--env',
        'CORRUPT_RANK=1',
        '--runs',
        '2',
        '--json',
        join(dir, 'c.json'),
        '--junit',
        join(dir, 'c.xml'),
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '4K',
        '-f',
        '2',
        '--np',
        '3',
        '--oversubscribe',
        '--backend',
        'mpi',
        '-n',
        '3',
      ],
      { timeoutMs: 120_000, env: { CORRUPT_INDEX: '5' } },
    );
    assert.equal(r.code, 7, `${r.stderr}\n${r.stdout}`);
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    assert.deepEqual(
      doc.combinations.map((c) => c.status),
      ['ok', 'wrong'],
    );
    for (const s of doc.cases[0]!.sizes) {
      assert.equal(s.results[0]!.wrong, 0);
      assert.equal(s.results[1]!.wrong, 4); // one element × 2 placements × 2 runs
      assert.equal(s.best, 'C0');
    }
    assert.match(r.stdout, /^# correctness: #wrong per size/m);
    assert.match(r.stdout, /^ +2048 +0 +4$/m);
    assert.match(
      readFileSync(join(dir, 'c.xml'), 'utf8'),
      /<failure message="run 1: 6 wrong elements" type="wrong-results">/,
    );
  });
});

describe('collbench compare: a real difference is significant, with its interval', () => {
  let lib = '';
  before(() => {
    lib = buildFault('late_allreduce', fresh());
  });

  it('--repeats 5: the default (rank 1 sleeps 2 ms after each all_reduce) against LATE_SKIP=1 (no sleep)', () => {
    const dir = fresh();
    // The interposer makes rank 1 sleep 2 ms after every MPI_Allreduce, unless LATE_SKIP is set (combination C1).
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--env',
        'LATE_SKIP=1',
        '--repeats',
        '5',
        '--quiet',
        '--json',
        join(dir, 'c.json'),
        '--',
        'all_reduce_perf',
        '-b',
        '64K',
        '-e',
        '256K',
        '-f',
        '4',
        '--np',
        '2',
        '--backend',
        'mpi',
        '-n',
        '10',
      ],
      {
        timeoutMs: 180_000,
        env: { LD_PRELOAD: lib, LATE_RANK: '1', LATE_US: '2000', OMPI_MCA_mpi_yield_when_idle: '1' },
      },
    );
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    assert.equal(doc.runsPerCombination, 5);
    for (const s of doc.cases[0]!.sizes) {
      assert.equal(s.best, 'C1', JSON.stringify(s));
      assert.ok(
        s.gainInterval!.lo > 0 && s.gainInterval!.lo <= s.gainPct! && s.gainPct! <= s.gainInterval!.hi,
        JSON.stringify(s),
      );
      // 5 runs against 5, all separated: exact p = 2/252, below Holm's 0.05/2
      assert.ok(s.gainP! < 0.025, String(s.gainP));
      assert.equal(s.significance, 'significant');
    }
    assert.match(r.stdout, /^ +65536 .* C1 +\+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\] +significant /m);
  });

  it('one rank, where busbw is 0 by definition: judged on time; the only rank sleeping 1 ms per all_reduce loses at every size, clearly', () => {
    const dir = fresh();
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--env',
        'LATE_SKIP=1',
        '--repeats',
        '3',
        '--quiet',
        '--json',
        join(dir, 'c.json'),
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '64K',
        '-f',
        '8',
        '--np',
        '1',
        '--backend',
        'mpi',
        '-n',
        '5',
        '-w',
        '1',
      ],
      { timeoutMs: 120_000, env: { LD_PRELOAD: lib, LATE_RANK: '0', LATE_US: '1000' } },
    );
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    assert.equal(doc.nranks, 1);
    assert.deepEqual(doc.judgedOn, {
      metric: 'time',
      why: 'busbw is 0 by definition for all_reduce on 1 rank (its factor is 0)',
    });
    assert.match(r.stdout, /^# judged on time: busbw is 0 by definition for all_reduce on 1 rank/m);
    for (const s of doc.cases[0]!.sizes) {
      assert.ok(
        s.results.every((x) => x.busBwGBps!.max === 0),
        'busbw is 0 at one rank',
      );
      assert.equal(s.best, 'C1', JSON.stringify(s));
      assert.equal(s.clear, true, JSON.stringify(s)); // a 1 ms sleep per call against none: the runs do not overlap
      assert.ok(s.gainPct! > 100, String(s.gainPct));
    }
    assert.doesNotMatch(r.stdout, / overlap$/m);
  });
});

describe('collbench compare: Gloo algorithms as an axis', () => {
  it('runs --gloo-algo ring,bcube as program arguments of the gloo backend', () => {
    const dir = fresh();
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--gloo-algo',
        'ring,bcube',
        '--json',
        join(dir, 'c.json'),
        '--quiet',
        '--',
        'all_reduce_perf',
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
        '-n',
        '5',
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    assert.match(doc.backend ?? '', /^gloo/);
    assert.deepEqual(
      doc.combinations.map((c) => [c.label, c.status]),
      [
        ['default', 'ok'],
        ['gloo-algo=ring', 'ok'],
        ['gloo-algo=bcube', 'ok'],
      ],
    );
    assert.ok(doc.cases[0]!.sizes.every((s) => s.results.every((x) => x.wrong === 0)));
  });
});

describe('collbench compare: Ctrl-C', () => {
  it('stops the running child, writes what it has as "interrupted" and exits 130', async () => {
    const dir = fresh();
    const marker = `collbench-sigint-${process.pid}`;
    const child = spawn(
      join(binDir, 'collbench'),
      [
        'compare',
        '--timeout',
        '0',
        '--json',
        join(dir, 'c.json'),
        '--env',
        `NODE_OPTIONS=--inspect-brk=0 --title=${marker}`,
        '--',
        'all_reduce_perf',
        '-b',
        '1K',
        '-e',
        '1K',
        '--np',
        '2',
        '--backend',
        'mpi',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
    // wait until C0 is done and C1 (the hung one) has started
    for (let i = 0; i < 300 && !(stderr.includes('C0 default: ok') && leftovers(marker).length > 0); i++)
      await new Promise((s) => setTimeout(s, 100));
    assert.ok(leftovers(marker).length > 0, `the hung child never started: ${stderr}`);
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    const doc = readJson<CompareDocument>(join(dir, 'c.json'));
    assert.equal(doc.status, 'interrupted');
    assert.equal(doc.combinations[0]!.status, 'ok');
    assert.equal(doc.combinations[1]!.runs[0]!.error, 'interrupted');
    assert.deepEqual(leftovers(marker), []);
  });
});
