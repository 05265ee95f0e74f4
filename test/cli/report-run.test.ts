// Reports written by real runs of the built binaries on the MPI backend (bench/report/*): -J documents
// validated against the published JSON Schema (several collectives, -I on and off, 1–3 ranks), the
// nccl-tests v3 layout, CSV/Markdown/JUnit of a run with real wrong results (PMPI interposer), `-` as
// stdout, --format pretty, refused outputs, files left valid by a run killed mid-sweep, and progress
// only on a terminal.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { CSV_COLUMNS } from '../../bench/report/exporters/csv.js';
import { reportErrors, type ReportDocument } from '../../bench/report/schema.js';
import { binDir, footer, mpirunArgs, parseRows, runMpirun, runProgram, type CliResult } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'cb-report-'));
const readJson = <T = ReportDocument>(f: string): T => JSON.parse(readFileSync(f, 'utf8')) as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `program args` with np ranks (np 1 = a plain process, no mpirun). */
function run(np: number, program: string, args: string[], env: NodeJS.ProcessEnv = {}): CliResult {
  return np === 1 ? runProgram(program, args, { env }) : runMpirun(np, program, args, { env });
}

/** The same numbers in the table and in the document, row by row. */
function assertMatchesTable(doc: ReportDocument, stdout: string, perIter: boolean): void {
  const rows = parseRows(stdout);
  assert.equal(doc.rows.length, rows.length);
  rows.forEach((t, i) => {
    const r = doc.rows[i]!;
    assert.deepEqual(
      [r.sizeBytes, r.count, r.type, r.redop, r.root],
      [t.size, t.count, t.type, t.redop, t.root],
      t.line,
    );
    const f = t.line.trim().split(/\s+/); // with -I each half has 4 more columns
    const wrong = (s: string) => (s === 'N/A' ? null : Number(s));
    assert.equal(r.outOfPlace.wrong, wrong(f[8]!), t.line);
    assert.equal(r.inPlace.wrong, wrong(f[perIter ? 16 : 12]!), t.line);
    // the table rounds; the document keeps the full value
    assert.ok(
      Math.abs(r.outOfPlace.timeUs! - t.oop.time) <= Math.max(0.01, t.oop.time * 0.01),
      `${r.outOfPlace.timeUs} vs ${t.line}`,
    );
  });
}

describe('-J: schema-valid reports of real runs', () => {
  const cases: { np: number; program: string; args: string[]; perIter: boolean; rows: number }[] = [
    {
      np: 2,
      program: 'all_reduce_perf',
      args: ['-b', '8', '-e', '64K', '-f', '8', '-n', '5', '-I', '1', '-K', '1'],
      perIter: true,
      rows: 5,
    },
    {
      np: 2,
      program: 'all_reduce_perf',
      args: ['-b', '8', '-e', '64K', '-f', '8', '-n', '5'],
      perIter: false,
      rows: 5,
    },
    {
      np: 3,
      program: 'broadcast_perf',
      args: ['-b', '1K', '-e', '4K', '-f', '4', '-n', '4', '-r', '-1', '-I', '1'],
      perIter: true,
      rows: 6,
    },
    {
      np: 2,
      program: 'alltoall_perf',
      args: ['-b', '1K', '-e', '16K', '-f', '4', '-n', '4', '-d', 'int32'],
      perIter: false,
      rows: 3,
    },
    {
      np: 1,
      program: 'reduce_scatter_perf',
      args: ['-b', '64', '-e', '256', '-f', '2', '-n', '4', '-I', '1'],
      perIter: true,
      rows: 3,
    },
  ];
  for (const c of cases) {
    it(`${c.np} rank(s): ${c.program} ${c.args.join(' ')}`, () => {
      const dir = tmp();
      const file = join(dir, 'run.json');
      const r = run(c.np, c.program, [...c.args, '-J', file]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const doc = readJson(file);
      assert.deepEqual(reportErrors(doc), []);
      assert.equal(doc.status, 'complete');
      assert.equal(doc.program, c.program);
      assert.equal(doc.world.nranks, c.np);
      assert.equal(doc.ranks.length, c.np);
      assert.deepEqual(
        doc.ranks.map((k) => k.rank),
        [...Array(c.np).keys()],
      );
      for (const k of doc.ranks) assert.ok(k.pid > 0 && k.host.length > 0 && k.device === 'cpu');
      assert.equal(doc.rows.length, c.rows);
      assertMatchesTable(doc, r.stdout, c.perIter);
      assert.equal(doc.summary!.outOfBounds, footer(r.stdout).outOfBounds);
      assert.equal(doc.argv.at(-1), file);
      assert.equal(doc.argv[0], join(binDir, c.program));
      assert.ok(doc.rerun.startsWith(c.np > 1 ? `mpirun -np ${c.np} ` : join(binDir, c.program)), doc.rerun);
      assert.equal(doc.provenance.versions.mpi, 'Open MPI 4.1.4');
      const iters = Number(c.args[c.args.indexOf('-n') + 1]);
      for (const row of doc.rows) {
        for (const h of [row.outOfPlace, row.inPlace]) {
          if (!c.perIter) {
            assert.equal(h.perIter, undefined);
            continue;
          }
          assert.equal(h.perIter!.samplesUs.length, iters);
          assert.equal(h.perIter!.perRank.length, c.np);
          for (const pr of h.perIter!.perRank) assert.equal(pr.samplesUs.length, iters);
          // samplesUs is the per-iteration maximum over ranks
          h.perIter!.samplesUs.forEach((s, i) =>
            assert.equal(s, Math.max(...h.perIter!.perRank.map((p) => p.samplesUs[i]!))),
          );
        }
      }
      if (c.program === 'broadcast_perf') assert.deepEqual([...new Set(doc.rows.map((x) => x.root))], [0, 1, 2]);
      if (c.program === 'alltoall_perf')
        assert.ok(doc.rows.every((x) => x.inPlace.wrong === null && x.outOfPlace.wrong === 0));
    });
  }

  it('records only the filtered environment, and the command typed with --np as the rerun command', () => {
    const dir = tmp();
    const file = join(dir, 'np.json');
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', '-n', '2', '--np', '2', '-J', file], {
      env: { NCCL_DEBUG: 'WARN', COLLBENCH_TAG: 'nightly', SECRET_TOKEN: 's3cr3t-value', UCX_TLS: 'tcp' },
    });
    assert.equal(r.code, 0, r.stderr);
    const doc = readJson(file);
    assert.deepEqual(reportErrors(doc), []);
    assert.equal(doc.provenance.env.NCCL_DEBUG, 'WARN');
    assert.equal(doc.provenance.env.COLLBENCH_TAG, 'nightly');
    assert.equal(doc.provenance.env.UCX_TLS, 'tcp');
    assert.equal(doc.provenance.launcher, 'mpirun');
    assert.ok(!readFileSync(file, 'utf8').includes('s3cr3t-value'));
    assert.ok(Object.keys(doc.provenance.env).every((k) => /^(NCCL_|CUDA_|OMPI_|UCX_|GLOO_|COLLBENCH_)/.test(k)));
    assert.equal(doc.rerun, `${join(binDir, 'all_reduce_perf')} -b 8 -e 8 -n 2 --np 2 -J ${file}`);
  });

  it('planted secrets appear in no output: table, stderr, JSON (both layouts), CSV, Markdown, JUnit, HTML', () => {
    const dir = tmp();
    const secrets = {
      AWS_SECRET_ACCESS_KEY: 'aws-Zq8Plant3dS3cret',
      GITHUB_TOKEN: 'ghp_plant3dTok3nValue',
      SECRET_TOKEN: 'tok-plant3d',
    };
    const outputs = [
      '-J',
      join(dir, 'r.json'),
      '--csv',
      join(dir, 'r.csv'),
      '--md',
      join(dir, 'r.md'),
      '--junit',
      join(dir, 'r.xml'),
      '--html',
      join(dir, 'r.html'),
    ];
    const runs = [
      runProgram('all_reduce_perf', ['-b', '8', '-e', '64', '-f', '8', '-n', '2', '--np', '2', ...outputs], {
        env: secrets,
      }),
      runProgram(
        'all_reduce_perf',
        ['-b', '8', '-e', '8', '-n', '2', '-J', join(dir, 'nt.json'), '--json-format', 'nccl-tests'],
        { env: secrets },
      ),
    ];
    for (const r of runs) assert.equal(r.code, 0, r.stderr);
    const texts = [
      ...runs.flatMap((r) => [r.stdout, r.stderr]),
      ...['r.json', 'r.csv', 'r.md', 'r.xml', 'r.html', 'nt.json'].map((f) => readFileSync(join(dir, f), 'utf8')),
    ];
    for (const [name, value] of Object.entries(secrets)) {
      for (const t of texts) {
        assert.ok(!t.includes(value), `the value of ${name} leaked`);
        assert.ok(!t.includes(name), `${name} is named in an output`);
      }
    }
  });
});

describe('--json-format nccl-tests', () => {
  it('writes the nccl-tests v3 layout with every documented field', () => {
    const dir = tmp();
    const file = join(dir, 'nt.json');
    const r = runMpirun(2, 'all_reduce_perf', [
      '-b',
      '8',
      '-e',
      '4K',
      '-f',
      '8',
      '-n',
      '6',
      '-I',
      '1',
      '-K',
      '1',
      '-J',
      file,
      '--json-format',
      'nccl-tests',
    ]);
    assert.equal(r.code, 0, r.stderr);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const j = readJson<any>(file);
    assert.deepEqual(Object.keys(j), [
      'version',
      'start_time',
      'args',
      'env',
      'nccl_version',
      'config',
      'results',
      'out_of_bounds',
      'average_bus_bandwidth',
      'errors',
      'end_time',
    ]);
    assert.equal(j.version, 3);
    for (const t of [j.start_time, j.end_time]) assert.match(t, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.ok(Array.isArray(j.args) && j.args.includes('nccl-tests'));
    assert.ok(j.env.every((e: string) => /^(NCCL_|CUDA_|OMPI_|UCX_|GLOO_|COLLBENCH_)[^=]*=/.test(e)));
    assert.equal(j.nccl_version, 0); // not an NCCL run
    const cfg = j.config;
    for (const k of [
      'nthreads',
      'ngpus',
      'minimum_bytes',
      'maximum_bytes',
      'step_factor',
      'warmup_iters',
      'iterations',
      'aggregated_iterations',
      'validation',
      'graph',
      'per_iter_skip',
    ])
      assert.equal(typeof cfg[k], 'number', k);
    for (const k of ['blocking_collectives', 'per_iter_timing', 'parallel_init'])
      assert.match(cfg[k], /^(true|false)$/, k);
    assert.equal(cfg.step_bytes, undefined);
    assert.equal(cfg.iterations, 6);
    assert.equal(cfg.per_iter_timing, 'true');
    assert.equal(cfg.devices.length, 2);
    for (const d of cfg.devices) {
      assert.deepEqual(Object.keys(d), ['rank', 'group', 'pid', 'hostname', 'device', 'device_hex', 'device_info']);
      assert.ok(!d.hostname.includes('.'));
    }
    const table = parseRows(r.stdout);
    assert.equal(j.results.length, table.length);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    j.results.forEach((res: any, i: number) => {
      assert.deepEqual(Object.keys(res), [
        'size',
        'count',
        'type',
        'redop',
        'root',
        'out_of_place',
        'out_of_place_per_iter',
        'in_place',
        'in_place_per_iter',
        'actual_iterations',
        'experiment_name',
      ]);
      assert.equal(res.size, table[i]!.size);
      assert.equal(res.root, '    -1');
      assert.equal(res.actual_iterations, 6);
      assert.equal(res.experiment_name, '');
      for (const half of ['out_of_place', 'in_place']) {
        assert.deepEqual(Object.keys(res[half]), ['time', 'alg_bw', 'bus_bw', 'nwrong']);
        assert.equal(res[half].nwrong, 0);
        const p = res[`${half}_per_iter`];
        assert.deepEqual(Object.keys(p), [
          'skipped_iterations',
          'min_us',
          'max_us',
          'avg_us',
          'p50_us',
          'p95_us',
          'p99_us',
          'stdev_us',
          'cv_pct',
          'times_us',
          'per_process_max_times_us',
        ]);
        assert.equal(p.skipped_iterations, 1);
        assert.equal(p.times_us.length, 6); // raw samples keep the skipped one
        assert.equal(p.per_process_max_times_us.length, 2);
        // analyze_perf_json.py's consistency check: times_us = element-wise max over process rows
        p.times_us.forEach((t: number, k: number) =>
          assert.ok(Math.abs(t - Math.max(...p.per_process_max_times_us.map((row: number[]) => row[k]))) < 0.001),
        );
        assert.ok(p.min_us <= p.p50_us && p.p50_us <= p.max_us && p.p99_us <= p.max_us);
        assert.equal(p.min_us, Math.min(...p.times_us.slice(1)));
      }
    });
    assert.deepEqual(j.out_of_bounds, { count: 0, okay: 'true' });
    assert.equal(j.average_bus_bandwidth.okay, 'unchecked');
    assert.ok(
      Math.abs(j.average_bus_bandwidth.bandwidth - footer(r.stdout).avgBusBw) <=
        footer(r.stdout).avgBusBw * 0.01 + 1e-6,
    );
  });
});

describe('CSV, Markdown and JUnit of a run with real wrong results', () => {
  let lib = '';
  before(() => {
    lib = buildFault('corrupt_allreduce', tmp());
  });

  it('a PMPI interposer corrupts rank 2: #wrong in every file, JUnit failures, exit 7', () => {
    const dir = tmp();
    const f = (n: string) => join(dir, n);
    const r = runMpirun(
      3,
      'all_reduce_perf',
      [
        '-b',
        '1K',
        '-e',
        '4K',
        '-f',
        '2',
        '-n',
        '3',
        '-J',
        f('r.json'),
        '--csv',
        f('r.csv'),
        '--md',
        f('r.md'),
        '--junit',
        f('r.xml'),
      ],
      {
        mpirunExtra: ['-x', `LD_PRELOAD=${lib}`, '-x', 'CORRUPT_RANK', '-x', 'CORRUPT_INDEX'],
        env: { CORRUPT_RANK: '2', CORRUPT_INDEX: '5' },
      },
    );
    assert.equal(r.code, 7, r.stderr + r.stdout);
    const doc = readJson(f('r.json'));
    assert.deepEqual(reportErrors(doc), []);
    assert.equal(doc.summary!.exitCode, 7);
    assert.equal(doc.summary!.outOfBounds, 6);
    for (const row of doc.rows)
      assert.deepEqual(row.outOfPlace.firstWrong, { ...row.outOfPlace.firstWrong!, rank: 2, index: 5 });

    const csv = readFileSync(f('r.csv'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    assert.deepEqual(csv[0], [...CSV_COLUMNS]);
    assert.equal(csv.length, 1 + 6);
    const wrongCol = CSV_COLUMNS.indexOf('wrong');
    assert.deepEqual(
      csv.slice(1).map((l) => l[wrongCol]),
      ['1', '1', '1', '1', '1', '1'],
    );
    assert.deepEqual(
      csv.slice(1).map((l) => l[CSV_COLUMNS.indexOf('size_bytes')]),
      ['1024', '1024', '2048', '2048', '4096', '4096'],
    );
    assert.deepEqual(
      csv.slice(1).map((l) => l[CSV_COLUMNS.indexOf('nranks')]),
      Array(6).fill('3'),
    );

    const md = readFileSync(f('r.md'), 'utf8');
    const mdRows = md.split('\n').filter((l) => /^\| \d/.test(l));
    assert.equal(mdRows.length, 3);
    for (const l of mdRows) assert.equal(l.split(' | ')[8], '1'); // oop #wrong
    assert.match(md, /Out of bounds values: 6 FAILED/);
    assert.match(md, /Exit status: 7/);

    const xml = readFileSync(f('r.xml'), 'utf8');
    assert.match(
      xml,
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="collbench all_reduce_perf" tests="6" failures="6"/,
    );
    assert.equal(
      (xml.match(/<failure message="1 wrong elements on 1 rank\(s\); first: rank 2 index 5 /g) ?? []).length,
      6,
    );
    assert.match(xml, /<\/testsuites>\n$/);
  });

  it('NCCL_TESTS_MIN_BW: the bandwidth verdict is a JUnit case of its own', () => {
    const dir = tmp();
    const r = runMpirun(2, 'all_reduce_perf', ['-b', '1K', '-e', '1K', '-n', '2', '--junit', join(dir, 'r.xml')], {
      env: { NCCL_TESTS_MIN_BW: '1e9' },
    });
    assert.equal(r.code, 7, r.stderr);
    const xml = readFileSync(join(dir, 'r.xml'), 'utf8');
    assert.match(xml, /tests="3" failures="1"/);
    assert.match(
      xml,
      /<failure message="average bus bandwidth [^"]+ is below 0.9 x 1000000000 GB\/s" type="threshold">/,
    );
  });
});

describe('where the output goes', () => {
  it('-J - writes the document to stdout when the run ends; the table moves to stderr', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '64', '-f', '2', '-n', '2', '-J', '-']);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ReportDocument;
    assert.deepEqual(reportErrors(doc), []);
    assert.equal(doc.rows.length, 4);
    assert.equal(parseRows(r.stderr).length, 4);
    assert.match(r.stderr, /^# Out of bounds values : 0 OK$/m);
  });

  it('--csv - prints CSV only on stdout', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '16', '-f', '2', '-n', '2', '--csv', '-']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines[0], CSV_COLUMNS.join(','));
    assert.equal(lines.length, 5);
  });

  it('exporters leave the nccl-tests table on stdout exactly as without them', () => {
    const dir = tmp();
    const plain = runProgram('all_reduce_perf', ['-b', '8', '-e', '64', '-f', '2', '-n', '2']);
    const withFiles = runProgram('all_reduce_perf', [
      '-b',
      '8',
      '-e',
      '64',
      '-f',
      '2',
      '-n',
      '2',
      '-J',
      join(dir, 'a.json'),
      '--md',
      join(dir, 'a.md'),
    ]);
    assert.equal(withFiles.code, 0, withFiles.stderr);
    const shape = (s: string) =>
      s
        .split('\n')
        .map((l) =>
          l.startsWith('#') ? l.replace(/Pid +\d+/, 'Pid') : l.replace(/[-+.e\d]+/g, 'N').replace(/ +/g, ' '),
        );
    assert.deepEqual(shape(withFiles.stdout), shape(plain.stdout));
  });

  it('--format pretty prints boxed tables instead of the nccl-tests table', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '64', '-f', '2', '-n', '2', '--format', 'pretty']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /┌/);
    assert.match(r.stdout, /out-of-place/);
    assert.equal(parseRows(r.stdout).length, 0);
    assert.equal((r.stdout.match(/^│ +(8|16|32|64) │/gm) ?? []).length, 4);
    assert.match(r.stdout, /^# Out of bounds values : 0 OK$/m);
  });

  const refused: [string[], RegExp][] = [
    [
      ['--csv', '/nonexistent-dir/x.csv'],
      /^all_reduce_perf: --csv: cannot write \/nonexistent-dir\/x.csv: folder \/nonexistent-dir does not exist$/,
    ],
    [['--json-format', 'nccl-tests'], /^all_reduce_perf: --json-format: needs -J FILE/],
    [
      ['-J', 'x.json', '--json-format', 'xml'],
      /^all_reduce_perf: --json-format: unknown JSON format xml; valid: collbench, nccl-tests$/,
    ],
    [['--format', 'fancy'], /^all_reduce_perf: --format: unknown table format fancy/],
    [['-J', '-', '--md', '-'], /^all_reduce_perf: --md: stdout \(-\) already receives -J/],
    [['-J', 'same.out', '--csv', 'same.out'], /^all_reduce_perf: --csv: same.out is also the file of -J/],
  ];
  for (const [args, message] of refused) {
    it(`refuses ${args.join(' ')}: exit 2, one line, nothing written`, () => {
      const dir = tmp();
      const r = spawnSync(join(binDir, 'all_reduce_perf'), ['-b', '8', '-e', '8', ...args], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr.trim(), message);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.equal(r.stdout, '');
      assert.ok(!existsSync(join(dir, 'x.json')) && !existsSync(join(dir, 'same.out')));
    });
  }
});

/** Waits until `file` parses as JSON with at least `rows` rows (the run is still going), or fails. */
async function waitForRows(file: string, rows: number, child: { exitCode: number | null }): Promise<number> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`run ended (exit ${child.exitCode}) before ${rows} rows`);
    try {
      const n = readJson(file).rows.length;
      if (n >= rows) return n;
    } catch {
      /* not there yet */
    }
    await sleep(50);
  }
  throw new Error(`no ${rows} rows in ${file} after 30 s`);
}

function assertValidPartialFiles(dir: string, minRows: number): void {
  const doc = readJson(join(dir, 'r.json'));
  assert.deepEqual(reportErrors(doc), []);
  assert.equal(doc.status, 'incomplete');
  assert.equal(doc.summary, null);
  assert.ok(doc.rows.length >= minRows && doc.rows.length < 12, `${doc.rows.length} rows`);
  doc.rows.forEach((r, i) => assert.equal(r.sizeBytes, 65536 * 2 ** i));
  const csv = readFileSync(join(dir, 'r.csv'), 'utf8').trim().split('\n');
  assert.equal(csv[0], CSV_COLUMNS.join(','));
  assert.equal((csv.length - 1) % 2, 0); // whole rows only: both halves
  // The files are rewritten together, JSON first (at most once a second: report/outputs.ts): a kill between two of
  // them leaves the later ones at the rewrite before, never ahead of the JSON.
  assert.ok(csv.length - 1 <= 2 * doc.rows.length, `${csv.length - 1} CSV lines for ${doc.rows.length} rows`);
  for (const l of csv.slice(1)) assert.equal(l.split(',').length, CSV_COLUMNS.length);
  assert.match(readFileSync(join(dir, 'r.xml'), 'utf8'), /<\/testsuites>\n$/);
  assert.match(readFileSync(join(dir, 'r.md'), 'utf8'), /rows so far/);
  assert.match(readFileSync(join(dir, 'r.html'), 'utf8'), /<\/html>\n$/);
}

describe('atomic rewrite: a run stopped mid-sweep leaves valid, complete-so-far files', () => {
  const args = (dir: string) => [
    '-b',
    '64K',
    '-e',
    '128M',
    '-f',
    '2',
    '-n',
    '20',
    '-w',
    '0',
    '-J',
    join(dir, 'r.json'),
    '--csv',
    join(dir, 'r.csv'),
    '--md',
    join(dir, 'r.md'),
    '--junit',
    join(dir, 'r.xml'),
    '--html',
    join(dir, 'r.html'),
  ];

  it('kill -9 of a single-process run', async () => {
    const dir = tmp();
    const child = spawn(join(binDir, 'all_reduce_perf'), args(dir), { stdio: 'ignore' });
    const exited = new Promise((r) => child.on('exit', r));
    const seen = await waitForRows(join(dir, 'r.json'), 3, child);
    child.kill('SIGKILL');
    await exited;
    assertValidPartialFiles(dir, seen);
  });

  it('SIGINT or SIGTERM to a single process whose rows come faster than its files are rewritten: every row the table showed is in the file', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const dir = tmp();
      const file = join(dir, 'r.json');
      // rows every few hundred microseconds, the file rewritten at most once a second (report/outputs.ts)
      const child = spawn(
        join(binDir, 'all_reduce_perf'),
        ['-b', '8', '-e', '8', '-n', '1', '-w', '0', '-c', '0', '-N', '0', '-T', '60', '-J', file],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      const drained = new Promise((r) => child.stdout.once('close', r));
      const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_c, sig) => r(sig)));
      await waitForRows(file, 1, child);
      await sleep(700);
      child.kill(signal);
      assert.equal(await exited, signal, 'the process ends by the signal, as before');
      await drained;
      const shown = parseRows(stdout).length;
      const doc = readJson(file);
      assert.equal(doc.status, 'incomplete');
      assert.ok(shown > 10, `${shown} rows shown`);
      assert.equal(doc.rows.length, shown, `${signal}: ${doc.rows.length} rows in the file, ${shown} in the table`);
    }
  });

  it('Ctrl-C (SIGINT) to mpirun with 2 ranks', async () => {
    const dir = tmp();
    const child = spawn('mpirun', [...mpirunArgs(2), join(binDir, 'all_reduce_perf'), ...args(dir)], {
      stdio: 'ignore',
    });
    const exited = new Promise((r) => child.on('exit', r));
    const seen = await waitForRows(join(dir, 'r.json'), 2, child);
    child.kill('SIGINT');
    await exited;
    assertValidPartialFiles(dir, seen);
  });
});

describe('--np launchers: Ctrl-C exits 130, SIGTERM to the launcher alone exits 143; nothing left running', () => {
  const args = (dir: string, backend: string) => [
    '--np',
    '2',
    '--backend',
    backend,
    '-b',
    '64K',
    '-e',
    '128M',
    '-f',
    '2',
    '-n',
    '20',
    '-w',
    '0',
    '-J',
    join(dir, 'r.json'),
  ];
  /** Processes whose command line names `dir` (the launcher, mpirun, the ranks), as pgrep sees them. */
  const leftovers = (dir: string): string[] =>
    spawnSync('pgrep', ['-af', dir], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '');

  for (const backend of ['mpi', 'gloo']) {
    for (const [sig, how, code] of [
      ['SIGINT', 'the process group (Ctrl-C)', 130],
      ['SIGTERM', 'the launcher alone (a batch scheduler)', 143],
    ] as const) {
      it(`${backend}: ${sig} to ${how} → exit ${code}, the rows so far kept, no rank left`, async () => {
        const dir = tmp();
        // detached: its own process group, so a signal to -pid reaches the launcher and every rank, as Ctrl-C does
        const child = spawn(join(binDir, 'all_reduce_perf'), args(dir, backend), { stdio: 'ignore', detached: true });
        const exited = new Promise<number | null>((r) => child.on('exit', (c, s) => r(c ?? (s ? -1 : null))));
        const seen = await waitForRows(join(dir, 'r.json'), 2, child);
        const t0 = Date.now();
        process.kill(sig === 'SIGINT' ? -child.pid! : child.pid!, sig);
        assert.equal(await exited, code);
        assert.ok(Date.now() - t0 < 15_000, `took ${Date.now() - t0} ms to stop`);
        const doc = readJson(join(dir, 'r.json'));
        assert.deepEqual(reportErrors(doc), []);
        assert.equal(doc.status, 'incomplete');
        assert.ok(doc.rows.length >= seen, `${doc.rows.length} rows, ${seen} seen before the signal`);
        for (let i = 0; i < 50 && leftovers(dir).length > 0; i++) await sleep(100); // ranks may take a moment to go
        assert.deepEqual(leftovers(dir), []);
      });
    }
  }
});

describe('progress on stderr', () => {
  const cmd = (extra: string) => `${join(binDir, 'all_reduce_perf')} -b 1M -e 8M -f 2 -n 5 ${extra}`;

  it('is drawn on a terminal (rows done/total, collective, size, ETA)', () => {
    const r = spawnSync('script', ['-qfec', cmd(''), '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, CI: undefined, TERM: 'xterm' },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /\d\/4 rows \| all_reduce float \d+MB \| \d+s elapsed, ETA/);
    // eslint-disable-next-line no-control-regex -- terminal escapes of the progress bar are removed on purpose
    assert.equal(parseRows(r.stdout.replace(/\r|\u001b\[[0-9;]*[A-Za-z]/g, '\n')).length >= 4, true);
  });

  it('is not drawn with --quiet, nor when stderr is a pipe', () => {
    const quiet = spawnSync('script', ['-qfec', cmd('--quiet'), '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, CI: undefined, TERM: 'xterm' },
    });
    assert.equal(quiet.status, 0);
    assert.doesNotMatch(quiet.stdout, /rows \|/);
    const piped = runProgram('all_reduce_perf', ['-b', '1M', '-e', '8M', '-f', '2', '-n', '5'], {
      env: { CI: undefined },
    });
    assert.equal(piped.code, 0);
    assert.equal(piped.stderr, '');
  });
});
