// The late-rank rule (bench/numbers/lateness.ts) and its lines (report/reporters/nccl-table.ts): clock alignment from
// barrier exits, naming the process that arrived last in most iterations by more than the margin, and not naming
// anybody for the collective's own small exit order or for a rank that is last only sometimes. The end-to-end proof
// with a real straggler (a PMPI interposer) is test/cli/late-rank.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { alignClocks, arrivalEvidence, formatLateUs, LATE_RULE, lateMarginUs } from '../../bench/numbers/lateness.js';
import { medianOf } from '../../bench/numbers/stats.js';
import { lateLine, lateSummaryLine } from '../../bench/report/reporters/nccl-table.js';

const shared = alignClocks([[0], [0]], true);

/** Arrivals of `procs` processes over `iters` iterations of `stepUs`, with `late(p, i)` µs added to process p. */
function arrivals(
  procs: number,
  iters: number,
  stepUs: number,
  late: (p: number, i: number) => number,
  offsets: number[] = [],
): number[][] {
  return Array.from({ length: procs }, (_, p) =>
    Array.from({ length: iters }, (_, i) => 1e9 + (offsets[p] ?? 0) + i * stepUs + p * 0.3 + late(p, i)),
  );
}

describe('alignClocks', () => {
  it('takes offsets as 0 on a shared clock', () => {
    assert.deepEqual(
      alignClocks(
        [
          [5, 6],
          [105, 106],
          [7, 8],
        ],
        true,
      ),
      { method: 'shared-clock', offsetsUs: [0, 0, 0], uncertaintyUs: 0 },
    );
  });

  it('estimates each clock against rank 0 from barrier exits, robust to a stray round', () => {
    const rounds = 32;
    const truth = [0, 123_456.5, -98_765.25];
    const samples = truth.map((off, p) =>
      Array.from(
        { length: rounds },
        (_, k) => 5e8 + k * 40 + off + (p === 2 && k === 7 ? 900 : 0) + 2 * Math.sin(k * 12.9898 + p * 78.233),
      ),
    );
    const a = alignClocks(samples, false);
    assert.equal(a.method, 'barrier-aligned');
    truth.forEach((off, p) =>
      assert.ok(Math.abs(a.offsetsUs[p]! - off) <= 3, `process ${p}: ${a.offsetsUs[p]} vs ${off}`),
    );
    assert.ok(a.uncertaintyUs > 0 && a.uncertaintyUs < 5, String(a.uncertaintyUs));
  });
});

describe('arrivalEvidence: who the others waited for', () => {
  it('names the process that arrives last by a large margin in most iterations', () => {
    const ev = arrivalEvidence(
      arrivals(4, 40, 100, (p, i) => (p === 2 && i % 10 !== 0 ? 1500 : 0)),
      shared,
    )!;
    assert.equal(ev.late?.process, 2);
    assert.equal(ev.late.lastFraction, 36 / 40);
    assert.equal(ev.late.medianLateUs > 1400 && ev.late.medianLateUs < 1600, true);
    assert.equal(ev.lastShare[2], 0.9);
    assert.equal(ev.lastShare[0], 0);
  });

  it('names nobody for a consistent exit order below the margin, or for a rank that is last only sometimes', () => {
    // Process 3 always last, but by 20 µs of a 1 ms iteration: the collective's own exit order.
    const small = arrivalEvidence(
      arrivals(4, 40, 1000, (p) => (p === 3 ? 20 : 0)),
      shared,
    )!;
    assert.equal(small.late, null);
    assert.deepEqual(small.lastShare, [0, 0, 0, 0]);
    // Process 1 very late, but in only 40 % of the iterations.
    const sometimes = arrivalEvidence(
      arrivals(3, 40, 100, (p, i) => (p === 1 && i % 5 < 2 ? 5000 : 0)),
      shared,
    )!;
    assert.equal(sometimes.late, null);
    assert.equal(sometimes.lastShare[1], 0.4);
    // Late by a quarter of the iteration: below half of it.
    assert.equal(
      arrivalEvidence(
        arrivals(2, 40, 4000, (p) => (p === 1 ? 1000 : 0)),
        shared,
      )!.late,
      null,
    );
  });

  it('puts the clocks together before comparing: a process whose clock is ahead is not late for it', () => {
    const offsets = [0, 250_000, -40_000];
    const raw = arrivals(3, 30, 100, (p) => (p === 0 ? 900 : 0), offsets);
    const samples = offsets.map((off) => Array.from({ length: 32 }, (_, k) => 7e8 + k * 50 + off));
    const ev = arrivalEvidence(raw, alignClocks(samples, false))!;
    assert.equal(ev.late?.process, 0);
    // Without alignment process 1 (clock 250 ms ahead) would look late every time.
    assert.equal(arrivalEvidence(raw, shared)!.late?.process, 1);
  });

  it('widens the margin with the iteration time and the clock uncertainty', () => {
    assert.equal(lateMarginUs(10, shared), LATE_RULE.floorUs);
    assert.equal(lateMarginUs(10_000, shared), 10_000 * LATE_RULE.iterationFraction);
    assert.equal(
      lateMarginUs(10, { method: 'barrier-aligned', offsetsUs: [0, 1], uncertaintyUs: 100 }),
      100 * LATE_RULE.uncertainties,
    );
  });

  it('says nothing for one process or no iterations', () => {
    assert.equal(arrivalEvidence([[1, 2, 3]], shared), null);
    assert.equal(arrivalEvidence([[], []], shared), null);
    assert.ok(Number.isNaN(medianOf([])));
  });
});

describe('late lines', () => {
  const cell = (rank: number) => ({ rank, host: 'h3.cluster', lastFraction: 0.93, medianLateUs: 1400, marginUs: 60 });
  it('one line per named row-half and a summary for the rank named in at least a quarter of them', () => {
    assert.equal(
      lateLine(1048576, 'out-of-place', cell(2)),
      '# late: 1048576 B out-of-place: rank 2 on h3 last in 93% of iterations, +1.4 ms median (margin 60 us)',
    );
    assert.equal(
      lateSummaryLine([cell(2), cell(2), cell(1)], 8),
      '# late rank: 2 on h3 (late in 2 of 8 row-halves; last in 93% of their iterations, +1.4 ms median)',
    );
    assert.equal(lateSummaryLine([cell(2)], 8), null, 'one of eight row-halves is an odd size, not a culprit');
    assert.equal(lateSummaryLine([], 8), null);
  });

  it('formats durations in the unit a person reads', () => {
    assert.equal(formatLateUs(850.4), '850 us');
    assert.equal(formatLateUs(1420), '1.4 ms');
    assert.equal(formatLateUs(2.1e6), '2.1 s');
    assert.equal(formatLateUs(150_400), '150 ms', 'never in exponent form');
    assert.equal(formatLateUs(72_000), '72 ms');
  });
});
