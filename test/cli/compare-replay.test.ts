// `collbench compare … -- collbench replay TRACE…` end to end: a replay per setting with the verdict per step and for
// the whole iteration. A real difference: a PMPI interposer makes rank 1 sleep 2 ms after the trace's 12-element
// all_reduce (step 0) unless LATE_SKIP is set, so that setting must win step 0, significantly; a bad trace or a
// replay flag compare sets itself is refused in one line before any timed run.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompareDocument } from '../../bench/compare/document.js';
import { repoRoot, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const FR = join(repoRoot, 'test/fixtures/replay/flight-recorder-json');

describe('collbench compare runs a replay per setting', () => {
  let dir = '';
  let late = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'collbench-compare-replay-'));
    late = buildFault('late_allreduce', dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  // 6 repeats, not 5: only steps where a non-default setting wins are tested, Holm-corrected over them, and 5 runs
  // against 5 reach p 0.0079 at best, above 0.05/7 when all 7 steps happen to go to LATE_SKIP (it did, once in 24 runs).
  it('--repeats 6: the setting that removes a 2 ms straggler at step 0 wins step 0, significantly', () => {
    const json = join(dir, 'c.json'),
      csv = join(dir, 'c.csv'),
      html = join(dir, 'c.html');
    const r = runProgram(
      'collbench',
      [
        'compare',
        '--env',
        'LATE_SKIP=1',
        '--repeats',
        '6',
        '--quiet',
        '--json',
        json,
        '--csv',
        csv,
        '--html',
        html,
        '--',
        'collbench',
        'replay',
        FR,
        '--backend',
        'mpi',
        '-n',
        '5',
        '-w',
        '1',
      ],
      {
        timeoutMs: 240_000,
        env: { LD_PRELOAD: late, LATE_RANK: '1', LATE_US: '2000', LATE_COUNT: '12', OMPI_MCA_mpi_yield_when_idle: '1' },
      },
    );
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    const doc = JSON.parse(readFileSync(json, 'utf8')) as CompareDocument;
    assert.equal(doc.program.collective, 'replay');
    assert.equal(doc.judgedOn.metric, 'time');
    assert.deepEqual(
      doc.combinations.map((c) => [c.id, c.status, c.runs.length]),
      [
        ['C0', 'ok', 6],
        ['C1', 'ok', 6],
      ],
    );
    const [steps, iteration] = doc.cases;
    assert.equal(steps!.title, 'replayed steps, each alone');
    assert.deepEqual(
      steps!.sizes.map((s) => [s.step!.index, s.step!.collective, s.sizeBytes]),
      [
        [0, 'all_reduce', 48],
        [1, 'broadcast', 4096],
        [2, 'all_gather', 1024],
        [3, 'reduce_scatter', 1024],
        [4, 'alltoallv', 4096],
        [5, 'alltoallv', 2400],
        [6, 'all_reduce', 4000000],
      ],
    );
    const s0 = steps!.sizes[0]!;
    assert.equal(s0.best, 'C1', JSON.stringify(s0));
    assert.ok(s0.results[0]!.timeUs!.median >= 2000, JSON.stringify(s0.results[0]));
    assert.ok(s0.gainInterval!.lo > 0, JSON.stringify(s0));
    assert.equal(s0.significance, 'significant');
    assert.ok(steps!.sizes.every((s) => s.results.every((x) => x.n === 6 && x.wrong === 0)));
    assert.equal(iteration!.title, 'whole replayed iteration');
    assert.equal(iteration!.sizes[0]!.step!.index, -1);
    assert.ok(iteration!.sizes[0]!.results.every((x) => x.n === 6 && x.timeUs!.median > 0));
    // The table names steps, not sizes; the CSV carries the step; the HTML page holds both verdict tables.
    assert.match(r.stdout, /^# replayed steps, each alone$/m);
    assert.match(r.stdout, /^ +0 all_reduce 48 B .* C1 +\+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\] +significant /m);
    assert.match(r.stdout, /^ +iteration \(\d+ B\) /m);
    const lines = readFileSync(csv, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1 + (7 + 1) * 2);
    assert.ok(lines.slice(1).some((l) => l.endsWith(',iteration')));
    const page = readFileSync(html, 'utf8');
    assert.match(page, /replayed steps, each alone/);
    assert.match(page, /whole replayed iteration/);
  });

  it('a bad trace, or -J in the replay words: one line, exit 2, no run', () => {
    const bad = join(dir, 'bad');
    writeFileSync(join(dir, 'bad.json'), '{"entries": "no"}');
    const r = runProgram('collbench', [
      'compare',
      '--mca',
      'coll_tuned_allreduce_algorithm=1',
      '--',
      'collbench',
      'replay',
      join(dir, 'bad.json'),
      '--backend',
      'mpi',
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /compare: .*bad\.json/);
    const j = runProgram('collbench', ['compare', '--mca', 'a=1', '--', 'collbench', 'replay', bad, '-J', 'x.json']);
    assert.equal(j.code, 2);
    assert.match(j.stderr, /-J: compare writes each replay's -J itself/);
  });
});
