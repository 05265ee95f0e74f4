// `collbench workload` end to end on real engines: DDP bucket sequences on 2 MPI ranks and FSDP shard sequences on
// 2 Gloo ranks through the native sequence loop (outputs checked against their schema and against the plan that
// --dry-run prints); a real per-call cost (a PMPI interposer making rank 1 sleep after every MPI_Allreduce) must make
// the cap with the fewest calls the recommendation, significantly ahead of the one with the most; a corrupting
// interposer must give #wrong > 0 and exit 7; bad input is one line, exit 2, nothing written.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import type { WorkloadDocument } from '../../bench/workload/document.js';
import { runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

describe('collbench workload', () => {
  let dir = '';
  const libs = { late: '', corrupt: '' };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'collbench-workload-'));
    for (const k of ['late', 'corrupt'] as const) {
      libs[k] = buildFault(`${k}_allreduce`, dir);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const workload = (args: string[], env: Record<string, string> = {}) =>
    runProgram('collbench', ['workload', ...args], { env, timeoutMs: 240_000 });
  const load = (path: string): WorkloadDocument => {
    const doc = JSON.parse(readFileSync(path, 'utf8')) as WorkloadDocument;
    assert.deepEqual(schemaErrors('collbench-workload.v1', doc), []);
    return doc;
  };
  /** --dry-run's sequence per configuration: [collective, bytes][]. */
  const dryRun = (args: string[]): Map<string, [string, number][]> => {
    const r = workload([...args, '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    const plans = new Map<string, [string, number][]>();
    let current: [string, number][] = [];
    for (const line of r.stdout.split('\n')) {
      const head = /^# .* (\S+): \d+ calls/.exec(line);
      if (head) plans.set(head[1]!, (current = []));
      const op = /^\s+\d+\s+(\S+)\s+(\d+)\s/.exec(line);
      if (op) current.push([op[1]!, Number(op[2])]);
    }
    return plans;
  };

  it('ddp on 2 MPI ranks: the planned bucket sequence per cap, timed and checked, in JSON, CSV and HTML', () => {
    const model = ['--params', '2e7', '--layers', '4', '--bucket-mb', '1,5,25'];
    const plans = dryRun(['ddp', ...model]);
    assert.deepEqual([...plans.keys()], ['1', '5', '25']);
    const [json, csv, html] = ['w.json', 'w.csv', 'w.html'].map((f) => join(dir, f));
    const r = workload([
      'ddp',
      ...model,
      '--backend',
      'mpi',
      '--np',
      '2',
      '--repeats',
      '2',
      '-n',
      '3',
      '-J',
      json,
      '--csv',
      csv,
      '--html',
      html,
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^# Recommended bucket cap \(MB\): (1|5|25) /m);
    const doc = load(json);
    assert.equal(doc.nranks, 2);
    assert.equal(doc.backend.name, 'mpi');
    for (const c of doc.configurations) {
      assert.deepEqual(
        c.ops.map((o) => [o.collective, o.bytes]),
        plans.get(c.label),
        `cap ${c.label}`,
      );
      assert.equal(c.wrong, 0);
      assert.equal(c.samples.commUs.length, 2);
      for (const s of c.samples.commUs) assert.equal(s.length, 3);
      assert.ok(c.commUs.median > 0 && c.busBwGBps > 0);
      // Every bucket carries gradients: the buckets of one cap add up to the whole model.
      assert.equal(c.bytesPerStep, doc.model.totalParams * 2);
    }
    assert.ok(doc.configurations[0]!.calls > doc.configurations[2]!.calls, 'a smaller cap means more all-reduces');
    const lines = readFileSync(csv, 'utf8').trim().split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[0]!, /^workload,backend,nranks,/);
    const page = readFileSync(html, 'utf8');
    assert.match(page, /<figure data-chart="workload" data-series="3"><svg/);
  });

  it('fsdp on 2 Gloo ranks with stand-in compute: all-gathers and reduce-scatters of padded units, overlap reported', () => {
    const model = ['--params', '1e7', '--layers', '4', '--unit-layers', '1,4', '--dtype', 'fp32'];
    const plans = dryRun(['fsdp', ...model, '--world', '2']);
    const json = join(dir, 'fsdp.json');
    const r = workload([
      'fsdp',
      ...model,
      '--backend',
      'gloo',
      '--np',
      '2',
      '--repeats',
      '2',
      '-n',
      '2',
      '--compute-ms',
      '5',
      '-J',
      json,
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    assert.equal(doc.model.world, 2);
    for (const c of doc.configurations) {
      assert.deepEqual(
        c.ops.map((o) => [o.collective, o.bytes]),
        plans.get(c.label),
      );
      assert.equal(c.wrong, 0);
      assert.ok(c.stepUs !== null && c.computeUs !== null && c.overlapPct !== null);
      // The busy gaps were really spent: about 5 ms per step.
      assert.ok(c.computeUs! > 4500 && c.computeUs! < 20_000, `compute ${c.computeUs} us`);
      for (const o of c.ops) assert.equal(o.bytes % (2 * 4), 0, 'units are padded to whole shards');
    }
    assert.doesNotMatch(r.stdout, /issues the same calls/);
    const one = doc.configurations.find((c) => c.label === '1')!;
    assert.equal(
      one.calls,
      1 + 4 + 4 + 4 + 1,
      'root + 4 blocks forward, 4 gathers and 4 scatters backward, root scatter',
    );
  });

  it('tiny communication against 20 ms of compute: no negative overlap printed as a figure (issue 28 item 6)', () => {
    // 0.2 MB per step on 2 MPI ranks (well under 1 ms) against 20 ms of busy compute: the step's jitter exceeds the
    // communication, so (comm + compute − step) / comm came out −8 to −36 % before; now the interval decides.
    const json = join(dir, 'overlap.json');
    const r = workload([
      'ddp',
      '--params',
      '1e5',
      '--layers',
      '2',
      '--bucket-mb',
      '1,25',
      '--backend',
      'mpi',
      '--np',
      '2',
      '--repeats',
      '3',
      '-n',
      '5',
      '--compute-ms',
      '20',
      '--quiet',
      '-J',
      json,
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    const rows = r.stdout.split('\n').filter((l) => /^ {3}\d/.test(l));
    assert.equal(rows.length, 2, r.stdout);
    for (const [i, c] of doc.configurations.entries()) {
      assert.ok(c.computeUs! > 19_000, `compute ${c.computeUs} us`); // (comm: well under 1 ms unloaded, more on a busy host)
      const cell = rows[i]!.trim().split(/\s{2,}/)[7]!;
      const o = c.overlap!;
      if (o.verdict === 'hidden') assert.match(cell, /^\d+ \[\d+, \d+\]$/);
      else assert.equal(cell, o.verdict === 'none' ? 'none' : 'within noise');
      if (c.overlapPct! < 0) assert.notEqual(o.verdict, 'hidden', 'a negative estimate is never "hidden"');
    }
    assert.doesNotMatch(rows.join('\n'), /\s-\d/, 'no negative figure in the table');
  });

  it('a real per-call cost makes the cap with the fewest calls the significant recommendation', () => {
    const json = join(dir, 'late.json');
    // 100 parameters of 256 KiB (fp32): a 1 MB cap makes 25 all-reduces per step, a 64 MB cap two (the first bucket is capped at 1 MiB).
    const sizes = join(dir, 'sizes.json');
    writeFileSync(
      sizes,
      JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ name: `layers.${i}.weight`, shape: [256, 256] }))),
    );
    const r = workload(
      [
        'ddp',
        '--param-sizes',
        sizes,
        '--dtype',
        'fp32',
        '--bucket-mb',
        '1,64',
        '--backend',
        'mpi',
        '--np',
        '2',
        '--repeats',
        '5',
        '-n',
        '3',
        '-J',
        json,
        '--quiet',
      ],
      { LD_PRELOAD: libs.late, LATE_RANK: '1', LATE_US: '4000' },
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    const [small, big] = doc.configurations;
    assert.deepEqual([small!.calls, big!.calls], [25, 2]); // the first bucket stays at 1 MiB (DDP's first_bucket_bytes_cap)
    assert.equal(doc.recommendation.label, '64', r.stdout);
    const m = doc.recommendation.margins[0]!;
    assert.equal(m.label, '1');
    assert.ok(m.significant && m.lo! > 1, r.stdout);
    assert.match(r.stdout, /^# {3}1: [\d.]+x \[[\d.]+, [\d.]+\], p=[\d.e-]+, significantly slower$/m);
  });

  it('a corrupting library: #wrong counted per configuration, the call named, exit 7', () => {
    const json = join(dir, 'corrupt.json');
    const r = workload(
      [
        'ddp',
        '--params',
        '1e7',
        '--layers',
        '2',
        '--bucket-mb',
        '25',
        '--dtype',
        'fp32',
        '--backend',
        'mpi',
        '--np',
        '2',
        '--repeats',
        '2',
        '-n',
        '2',
        '-J',
        json,
      ],
      { LD_PRELOAD: libs.corrupt, CORRUPT_RANK: '1', CORRUPT_INDEX: '100' },
    );
    assert.equal(r.code, 7, r.stdout + r.stderr);
    assert.match(r.stderr, /call \d+ \(all_reduce \d+ B\): rank \d+ element \d+: expected/);
    assert.ok(load(json).configurations[0]!.wrong! > 0);
  });

  it('bad input: one line, exit 2, nothing written', () => {
    const out = join(dir, 'never.json');
    const bad = join(dir, 'bad-sizes.json');
    writeFileSync(bad, JSON.stringify([{ name: 'w', numel: 0 }]));
    const cases: [string[], RegExp][] = [
      [['ddp', '--backend', 'mpi'], /give the model as --params N or --param-sizes FILE/],
      [
        ['ddp', '--params', '7e9', '--dtype', 'bf17'],
        /^collbench: workload: --dtype: unknown datatype bf17; valid: bf16, fp16, fp32, fp64, int8/,
      ],
      [['ddp', '--params', 'lots'], /^collbench: workload: --params: expected a parameter count/],
      [
        ['ddp', '--params', '1e7', '--bucket-mb', '25,0'],
        /^collbench: workload: --bucket-mb: bucket cap \(MB\) must be a number above 0, got 0\n$/,
      ],
      [['fsdp', '--params', '1e7', '--bucket-mb', '25'], /--bucket-mb: applies to workload ddp only/],
      [['fsdp', '--params', '1e7', '--world', '4', '--backend', 'mpi', '--np', '2'], /--world: 4 differs from --np 2/],
      [['ddp', '--param-sizes', bad], /--param-sizes: .*bad-sizes.json: \/0\/numel: must be >= 1/],
      [['ddp', '--params', '1e7', '-b', '8'], /unknown option '-b'/],
      [['mlp', '--params', '1e7'], /expected ddp or fsdp, got 'mlp'/],
    ];
    for (const [args, re] of cases) {
      const r = workload([...args, '-J', out]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(existsSync(out), false);
    }
    writeFileSync(out, 'keep');
    const r = workload(['ddp', '--params', '1e7', '--backend', 'mpi', '--np', '2', '-J', out]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--force/);
    assert.equal(readFileSync(out, 'utf8'), 'keep');
  });
});
