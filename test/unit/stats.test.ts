// The bootstrap interval of a ratio of medians (bench/numbers/stats.ts): reproducible, covering the truth for clearly
// separated and for identical samples, and saying nothing from one run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bootstrapPaired,
  bootstrapRatio,
  holm,
  mannWhitneyP,
  medianOf,
  normalCdf,
  seededRandom,
} from '../../bench/numbers/stats.js';

describe('bootstrapRatio', () => {
  it('separated samples: the interval excludes 1 and contains the ratio of medians; same seed, same interval', () => {
    const a = [12.1, 11.8, 12.4, 12.0, 11.9],
      b = [10.0, 10.3, 9.8, 10.1, 10.2];
    const ci = bootstrapRatio(a, b, { seed: 7 })!;
    assert.ok(Math.abs(ci.estimate - 12.0 / 10.1) < 1e-12);
    assert.ok(ci.lo > 1 && ci.lo <= ci.estimate && ci.estimate <= ci.hi, JSON.stringify(ci));
    assert.deepEqual(bootstrapRatio(a, b, { seed: 7 }), ci);
  });

  it('overlapping samples of one distribution: the interval contains 1', () => {
    const rand = seededRandom(3);
    const noise = (): number => 10 * (1 + 0.2 * (rand() - 0.5));
    let covered = 0;
    for (let trial = 0; trial < 50; trial++) {
      const ci = bootstrapRatio(Array.from({ length: 5 }, noise), Array.from({ length: 5 }, noise), {
        seed: trial,
        resamples: 1000,
      })!;
      if (ci.lo <= 1 && ci.hi >= 1) covered++;
    }
    assert.ok(covered >= 45, `1 inside the 95% interval in ${covered} of 50 trials`);
  });

  it('one run on either side proves nothing', () => {
    assert.equal(bootstrapRatio([1], [1, 2]), null);
    assert.equal(bootstrapRatio([1, 2], [0, 0]), null);
    assert.equal(medianOf([3, 1, 2, 10]), 2.5);
  });
});

describe('bootstrapPaired', () => {
  it('rows stay together: a difference of paired rows is exact when every row has the same difference', () => {
    const rows = [
      [10, 7],
      [50, 47],
      [12, 9],
      [80, 77],
    ] as const;
    const ci = bootstrapPaired(rows, (rs) => medianOf(rs.map((r) => r[0] - r[1])), { seed: 2 })!;
    assert.deepEqual([ci.estimate, ci.lo, ci.hi], [3, 3, 3], 'resampling rows apart would spread it over ±70');
    assert.deepEqual(
      bootstrapPaired(rows, (rs) => medianOf(rs.map((r) => r[0] - r[1])), { seed: 2 }),
      ci,
    );
  });
  it('the interval contains the estimate and covers the spread; one row proves nothing', () => {
    const ci = bootstrapPaired([1, 2, 3, 4, 5, 6, 7], medianOf, { seed: 1 })!;
    assert.ok(ci.lo < 4 && ci.hi > 4 && ci.lo >= 1 && ci.hi <= 7, JSON.stringify(ci));
    assert.equal(bootstrapPaired([1], medianOf), null);
  });
});

describe('mannWhitneyP', () => {
  it('exact small-sample values (tables of the U distribution)', () => {
    // 3 vs 3 completely separated: P(U = 0) = 1/20, two-sided 0.1 — never below 0.05.
    assert.equal(mannWhitneyP([4, 5, 6], [1, 2, 3]), 0.1);
    // 5 vs 5 completely separated: 1/252, two-sided 2/252.
    assert.ok(Math.abs(mannWhitneyP([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) - 2 / 252) < 1e-12);
    // 4 vs 4 with U = 1: (1 + 1) / 70 one-sided, 4/70 two-sided.
    assert.ok(Math.abs(mannWhitneyP([3, 5, 6, 7], [1, 2, 2.5, 4]) - 4 / 70) < 1e-12);
    // 4 vs 4 with U = 3: (1 + 1 + 2 + 3) / 70 one-sided
    assert.ok(Math.abs(mannWhitneyP([2, 5, 6, 7], [1, 3, 3.5, 4]) - 14 / 70) < 1e-12);
    // interleaved samples: large p
    assert.ok(mannWhitneyP([1, 3, 5, 7], [2, 4, 6, 8]) > 0.5);
  });

  it('ties and large samples take the normal approximation', () => {
    const a = Array.from({ length: 40 }, (_, i) => i + 20),
      b = Array.from({ length: 40 }, (_, i) => i);
    assert.ok(mannWhitneyP(a, b) < 0.001);
    assert.ok(mannWhitneyP([1, 1, 2, 2], [1, 1, 2, 2]) > 0.9);
    assert.ok(Math.abs(normalCdf(1.959964) - 0.975) < 1e-6);
  });
});

describe('holm', () => {
  it('steps down: the smallest p against alpha/m, the next against alpha/(m-1), stopping at the first failure', () => {
    assert.deepEqual(holm([0.01, 0.04, 0.03, 0.005]), [true, false, false, true]);
    assert.deepEqual(holm([0.001, 0.02, 0.03]), [true, true, true]);
    assert.deepEqual(holm([0.2]), [false]);
  });
});
