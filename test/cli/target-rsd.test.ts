// --target-rsd: per row-half the iterations double from -n until the mean time's relative standard deviation (the
// per-iteration samples' cv / sqrt(n)) reaches the target or the budget runs out; every rank runs the same count (rank
// 0 decides, an allreduce tells the others), and the report states the spread reached.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ReportDocument } from '../../bench/report/schema.js';
import { runProgram } from '../helpers/cli.js';

describe('--target-rsd', () => {
  const dir = mkdtempSync(join(tmpdir(), 'collbench-rsd-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('2 ranks: met halves are within the target, counts are -n times a power of two, agreed by both ranks', () => {
    const json = join(dir, 'met.json');
    const r = runProgram(
      'all_reduce_perf',
      ['-b', '8', '-e', '64K', '-f', '8', '-n', '10', '--target-rsd', '3', '-J', json, '--np', '2'],
      { env: { ...process.env, COLLBENCH_TARGET_RSD_BUDGET_S: '4' } },
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(readFileSync(json, 'utf8')) as ReportDocument;
    assert.equal(doc.options.perIterTiming, true, '--target-rsd turns -I on');
    const halves = doc.rows.flatMap((row) => [row.outOfPlace, row.inPlace]);
    for (const h of halves) {
      const p = h.precision!;
      assert.ok(p, JSON.stringify(h));
      assert.equal(p.targetRsdPct, 3);
      assert.ok(Number.isInteger(Math.log2(p.iterations / 10)), `iterations ${p.iterations}`);
      // Both ranks ran exactly that many iterations: their sample rows have that length.
      assert.deepEqual(
        h.perIter!.perRank.map((k) => k.samplesUs.length),
        [p.iterations, p.iterations],
      );
      // The stated spread is the samples' own: cv from the report's statistics, over sqrt(n).
      assert.ok(Math.abs(p.sampleCvPct - h.perIter!.stats.cvPct) < 1e-9);
      assert.ok(Math.abs(p.rsdPct - p.sampleCvPct / Math.sqrt(p.iterations)) < 1e-9);
      assert.equal(p.met, p.rsdPct <= 3);
    }
    const met = halves.filter((h) => h.precision!.met).length;
    assert.match(
      r.stdout,
      new RegExp(`^# target-rsd 3%: met in ${met} of ${halves.length} row-halves, \\d+ to \\d+ iterations$`, 'm'),
    );
    assert.equal((r.stdout.match(/^# target-rsd: /gm) ?? []).length, halves.length - met);
  });

  it('an unreachable target stops at the budget and says so for every half', () => {
    const json = join(dir, 'unmet.json');
    const t0 = Date.now();
    const r = runProgram(
      'all_reduce_perf',
      ['-b', '4K', '-e', '4K', '-n', '10', '--target-rsd', '0.0001', '-J', json, '--np', '2'],
      { env: { ...process.env, COLLBENCH_TARGET_RSD_BUDGET_S: '1' } },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - t0 < 20_000, 'the budget bounds the row');
    const doc = JSON.parse(readFileSync(json, 'utf8')) as ReportDocument;
    for (const h of [doc.rows[0]!.outOfPlace, doc.rows[0]!.inPlace]) {
      assert.equal(h.precision!.met, false);
      assert.ok(h.precision!.iterations > 10, 'it tried more iterations first');
    }
    assert.match(
      r.stdout,
      /^# target-rsd: 4096 B out-of-place: the mean time's rsd is \S+% after \d+ iterations \(samples' cv \S+%\), above the 0.0001% target/m,
    );
    assert.match(r.stdout, /^# target-rsd 0.0001%: met in 0 of 2 row-halves/m);
  });

  it('bad input: one line, exit 2', () => {
    for (const [args, said] of [
      [
        ['--target-rsd', '0'],
        /--target-rsd: target relative standard deviation \(%\) must be a number above 0 and at most 100, got '?0/,
      ],
      [['--target-rsd', '101'], /--target-rsd: .* at most 100/],
      [['--target-rsd', 'tight'], /--target-rsd: /],
      [['--target-rsd', '1', '-I', '0'], /--target-rsd: needs per-iteration timing, which it turns on; drop -I 0/],
    ] as const) {
      const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, said);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
  });
});
