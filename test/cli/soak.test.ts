// Soak and health monitoring: --duration repeats the sweep until the time has passed (every rank stopping after the
// same row), --warn-busbw warns once per cycle whose average busbw is below it (and makes the exit status 7), --prom
// writes Prometheus metrics that the official Prometheus client's text parser (python3-prometheus-client) reads —
// while the run goes on (the file is replaced atomically, never seen half-written) and at the end.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ReportDocument } from '../../bench/report/schema.js';
import { binDir, runProgram } from '../helpers/cli.js';

interface Sample {
  labels: Record<string, string>;
  value: number;
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        out.setdefault(s.name, []).append({"labels": s.labels, "value": s.value})
print(json.dumps(out))
`;
// Debian's python3 (where apt puts python3-prometheus-client), not whichever python3 comes first on PATH.
const PYTHON = '/usr/bin/python3';
const parserMissing =
  spawnSync(PYTHON, ['-c', 'import prometheus_client.parser'], { encoding: 'utf8' }).status !== 0
    ? 'python3-prometheus-client is not installed (make deps installs it)'
    : false;

function parseProm(file: string): Record<string, Sample[]> {
  const r = spawnSync(PYTHON, ['-c', PARSE, file], { encoding: 'utf8' });
  assert.equal(
    r.status,
    0,
    `the Prometheus parser rejected ${file}: ${r.stderr}\n${existsSync(file) ? readFileSync(file, 'utf8') : ''}`,
  );
  return JSON.parse(r.stdout) as Record<string, Sample[]>;
}

const one = (m: Record<string, Sample[]>, name: string): number => {
  assert.equal(m[name]?.length, 1, `${name}: ${JSON.stringify(m[name])}`);
  return m[name]![0]!.value;
};

describe('soak: --duration, --warn-busbw, --prom', { skip: parserMissing }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'collbench-soak-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('2 ranks for 4 s below a high threshold: a warning per cycle, exit 7, metrics agree with the JSON report', async () => {
    const prom = join(dir, 'high.prom'),
      json = join(dir, 'high.json');
    const child = spawn(join(binDir, 'all_reduce_perf'), [
      '-b',
      '64K',
      '-e',
      '1M',
      '-f',
      '4',
      '-n',
      '5',
      '-w',
      '1',
      '-S',
      '1',
      '--duration',
      '4s',
      '--warn-busbw',
      '1000',
      '--prom',
      prom,
      '-J',
      json,
      '--np',
      '2',
    ]);
    let stdout = '',
      stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const t0 = Date.now();
    const exited = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
    // While it runs, every version of the file parses (atomic replacement).
    let reads = 0;
    let running = true;
    void exited.then(() => {
      running = false;
    });
    while (running) {
      if (existsSync(prom)) {
        parseProm(prom);
        reads++;
      }
      await new Promise((res) => setTimeout(res, 300));
    }
    const code = await exited;
    const took = (Date.now() - t0) / 1000;
    assert.equal(code, 7, stderr);
    assert.ok(reads >= 3, `read the metrics ${reads} times during the run`);
    assert.ok(took >= 4 && took < 30, `took ${took} s`);
    const doc = JSON.parse(readFileSync(json, 'utf8')) as ReportDocument;
    const cycles = doc.summary!.cycles!;
    assert.ok(cycles >= 2, `cycles ${cycles}`);
    assert.equal(doc.summary!.cyclesBelowWarnBusBw, cycles);
    assert.equal(doc.summary!.exitCode, 7);
    // One warning line per judged cycle, naming it.
    const warnings = stdout.split('\n').filter((l) => l.startsWith('# Warning: cycle '));
    assert.equal(warnings.length, cycles, stdout);
    assert.match(
      warnings[0]!,
      /^# Warning: cycle 0 \(float sum root -1, ended \S+\): average busbw \S+ GB\/s is below --warn-busbw 1000 GB\/s$/,
    );
    // -S: every row carries its timestamp.
    assert.ok(doc.rows.every((r) => !Number.isNaN(Date.parse(r.time))));
    const m = parseProm(prom);
    const labels = { collective: 'all_reduce', type: 'float', redop: 'sum', root: '-1' };
    assert.deepEqual(m.collbench_cycles_completed![0]!.labels, labels);
    assert.equal(one(m, 'collbench_cycles_completed'), cycles);
    assert.equal(one(m, 'collbench_cycles_below_warn_busbw'), cycles);
    assert.equal(one(m, 'collbench_warn_busbw_gbps'), 1000);
    assert.equal(one(m, 'collbench_run_complete'), 1);
    const ended = one(m, 'collbench_last_cycle_timestamp_seconds');
    assert.ok(ended * 1000 > t0 && ended * 1000 <= Date.now(), `last cycle at ${ended}`);
    assert.ok(one(m, 'collbench_cycle_avg_busbw_gbps') > 0);
    // The latest busbw, time and #wrong of each size and placement: 64K, 256K, 1M × 2.
    for (const name of ['collbench_busbw_gbps', 'collbench_time_us', 'collbench_wrong_elements']) {
      assert.equal(m[name]!.length, 6, name);
      assert.deepEqual([...new Set(m[name]!.map((s) => s.labels.size_bytes))].sort(), ['1048576', '262144', '65536']);
    }
    assert.ok(m.collbench_busbw_gbps!.every((s) => s.value > 0));
    assert.ok(m.collbench_wrong_elements!.every((s) => s.value === 0));
    assert.equal(m.collbench_run_info![0]!.labels.nranks, '2');
  });

  it('a healthy threshold: no warning, exit 0, no cycle below', () => {
    const prom = join(dir, 'low.prom');
    const r = runProgram('all_reduce_perf', [
      '-b',
      '64K',
      '-e',
      '256K',
      '-f',
      '4',
      '-n',
      '5',
      '--duration',
      '2',
      '--warn-busbw',
      '0.0001',
      '--prom',
      prom,
      '--np',
      '2',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /# Warning: cycle/);
    const m = parseProm(prom);
    assert.ok(one(m, 'collbench_cycles_completed') >= 1);
    assert.equal(one(m, 'collbench_cycles_below_warn_busbw'), 0);
  });

  it('bad input: one line, exit 2, before anything runs', () => {
    for (const [args, said] of [
      [['--duration', 'soon'], /^all_reduce_perf: --duration: duration must be a time above 0/],
      [['--duration', '-5s'], /^all_reduce_perf: --duration: /],
      [
        ['--warn-busbw', '-1'],
        /^all_reduce_perf: --warn-busbw: warning threshold of bus bandwidth \(GB\/s\) must be a number above 0/,
      ],
      [['--warn-busbw', '2GB'], /^all_reduce_perf: --warn-busbw: /],
      [['--prom', '-'], /^all_reduce_perf: --prom: Prometheus metrics go to a file, not stdout/],
      [['--prom', join(dir, 'missing', 'x.prom')], /^all_reduce_perf: --prom: cannot write .*folder .* does not exist/],
    ] as const) {
      const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, said);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(r.stdout, '');
    }
  });
});
