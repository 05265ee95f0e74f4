// Device arrivals (bench/numbers/lateness.ts: deviceArrivalsOnHost, rankClock) on recorded-shape arrays: each GPU's
// -I marks against its own reference event, placed on its host's clock, aligned across hosts, and fed to the one
// lateness rule, which then names the delayed GPU where the host enqueue times (at -z 0, far ahead of the GPUs) name
// nobody. The GPU side (marks, reference, the delay hook) is proven on hardware by scripts/gpu-check/40-arrival.sh.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { traceArrivals } from '../../bench/engine/arrivals.js';
import {
  alignClocks,
  arrivalEvidence,
  deviceArrivalsOnHost,
  LATE_RULE,
  rankClock,
} from '../../bench/numbers/lateness.js';
import { lateLine, lateSummaryLine } from '../../bench/report/reporters/nccl-table.js';

/**
 * What the native loop returns at -z 0 for `ranks` GPUs over `iters` iterations of a collective taking `opUs` once all
 * have arrived: a GPU reaches iteration i when its stream has finished iteration i - 1 (all finish together) plus any
 * device-side delay put before i on it (`delay(r, i)` µs, the COLLBENCH_TEST_GPU_DELAY spin kernel). Rows are µs since
 * each GPU's reference event; `refs` are the references' host times (each host's own clock) and window half-widths.
 */
function recorded(
  ranks: number,
  iters: number,
  opUs: number,
  delay: (r: number, i: number) => number,
  refHostUs: (r: number) => number,
  refGpuUs: (r: number) => number,
) {
  const truth: number[][] = Array.from({ length: ranks }, () => []); // on one common timeline (µs)
  let free = 1000; // when the previous collective completed everywhere
  for (let i = 0; i < iters; i++) {
    for (let r = 0; r < ranks; r++) truth[r]!.push(free + delay(r, i) + 0.4 * r);
    free = Math.max(...truth.map((row) => row[i]!)) + opUs;
  }
  // Rank r's reference happened at common time refGpuUs(r), read on its host clock as refHostUs(r).
  const sinceRefUs = truth.map((row, r) => row.map((t) => t - refGpuUs(r)));
  const refs = truth.map((_, r) => [refHostUs(r), 3]);
  return { sinceRefUs, refs, truth };
}

describe('deviceArrivalsOnHost and rankClock', () => {
  it('adds each GPU its own reference, and keeps the widest window as the uncertainty', () => {
    const m = deviceArrivalsOnHost(
      [
        [0, 10.5],
        [2, 12],
      ],
      [
        [1e9, 2],
        [5e8, 4.5],
      ],
    );
    assert.deepEqual(m.arrivalsUs, [
      [1e9, 1e9 + 10.5],
      [5e8 + 2, 5e8 + 12],
    ]);
    assert.equal(m.referenceUs, 4.5);
    assert.throws(() => deviceArrivalsOnHost([[0]], []), /1 rank rows but 0 references/);
  });

  it('spreads each process clock offset over its ranks and adds the reference uncertainty', () => {
    const c = rankClock({ method: 'barrier-aligned', offsetsUs: [0, 250], uncertaintyUs: 3 }, 2, 4);
    assert.deepEqual(c, { method: 'barrier-aligned', offsetsUs: [0, 0, 250, 250], uncertaintyUs: 5 });
  });
});

describe('device arrivals name the delayed GPU', () => {
  it('-g 4 in one process: GPU 2 delayed 500 us before every iteration is named; the host enqueue times name nobody', () => {
    const iters = 20;
    // One process: every reference on the same host clock; the GPUs' references a few µs apart.
    const rec = recorded(
      4,
      iters,
      80,
      (r) => (r === 2 ? 500 : 0),
      (r) => 7e8 + r * 6,
      (r) => 5 + r * 6,
    );
    const dev = deviceArrivalsOnHost(rec.sinceRefUs, rec.refs);
    const ev = arrivalEvidence(dev.arrivalsUs, rankClock(alignClocks([[]], true), 4, dev.referenceUs))!;
    assert.equal(ev.late?.process, 2);
    assert.equal(ev.late.lastFraction, 1);
    assert.ok(Math.abs(ev.late.medianLateUs - 500) < 2, String(ev.late.medianLateUs));
    assert.deepEqual(ev.lastShare, [0, 0, 1, 0]);
    // The host, one thread for all four GPUs, enqueued iteration i at 7e8 + 4 µs·i on every rank alike: nobody last.
    const host = Array.from({ length: 4 }, () => Array.from({ length: iters }, (_, i) => 7e8 + 4 * i));
    assert.equal(arrivalEvidence(host, alignClocks([[]], true))!.late, null);
  });

  it('2 hosts x 2 GPUs on barrier-aligned clocks: rank 3 (host B, GPU 1) is named, not the host whose clock is ahead', () => {
    const hostOffset = [0, 250_000]; // host B's clock reads 250 ms ahead of host A's
    const rec = recorded(
      4,
      30,
      200,
      (r, i) => (r === 3 && i % 10 !== 0 ? 1500 : 0),
      (r) => 9e8 + hostOffset[r >> 1]! + r * 7,
      (r) => 20 + r * 7,
    );
    const samples = hostOffset.map((off) => Array.from({ length: 64 }, (_, k) => 5e8 + 40 * k + off + Math.sin(k)));
    const clock = alignClocks(samples, false);
    const dev = deviceArrivalsOnHost(rec.sinceRefUs, rec.refs);
    const ev = arrivalEvidence(dev.arrivalsUs, rankClock(clock, 2, dev.referenceUs))!;
    assert.equal(ev.late?.process, 3);
    assert.equal(ev.late.lastFraction, 27 / 30);
    // Unaligned, host B's two GPUs look late by 250 ms in every iteration: rank 2 or 3, whichever the noise makes last.
    const naive = arrivalEvidence(dev.arrivalsUs, rankClock(alignClocks([[], []], true), 2, 0))!;
    assert.ok(naive.late !== null && naive.late.medianLateUs > 200_000);
  });

  it('one delay before iteration k moves that arrival by D and names nobody (one iteration of 20 is no majority)', () => {
    for (const D of [50, 500, 5000]) {
      const rec = recorded(
        2,
        20,
        100,
        (r, i) => (r === 1 && i === 7 ? D : 0),
        () => 1e9,
        () => 0,
      );
      const dev = deviceArrivalsOnHost(rec.sinceRefUs, rec.refs);
      const steps = dev.arrivalsUs[1]!.slice(1).map((t, i) => t - dev.arrivalsUs[1]![i]!);
      assert.ok(
        Math.abs(steps[6]! - steps[0]! - D) < 1e-6,
        `D=${D}: step into iteration 7 is ${steps[6]}, others ${steps[0]}`,
      );
      const ev = arrivalEvidence(dev.arrivalsUs, rankClock(alignClocks([[]], true), 2, dev.referenceUs))!;
      assert.equal(ev.late, null);
      // Late at iteration 7 only when D clears the margin (max(floor, half the iteration as the others saw it)).
      assert.equal(ev.lastShare[1], D > 2 * LATE_RULE.floorUs ? 1 / 20 : 0, `D=${D}`);
    }
  });

  it('a wide reference window widens the margin: 100 us of lateness is not named against 30 us windows', () => {
    const rec = recorded(
      3,
      20,
      40,
      (r) => (r === 0 ? 100 : 0),
      () => 1e9,
      () => 0,
    );
    const tight = deviceArrivalsOnHost(rec.sinceRefUs, rec.refs);
    assert.equal(
      arrivalEvidence(tight.arrivalsUs, rankClock(alignClocks([[]], true), 3, tight.referenceUs))!.late?.process,
      0,
    );
    const wide = deviceArrivalsOnHost(
      rec.sinceRefUs,
      rec.refs.map(([t]) => [t!, 30]),
    );
    assert.equal(arrivalEvidence(wide.arrivalsUs, rankClock(alignClocks([[]], true), 3, wide.referenceUs))!.late, null);
  });
});

describe('late lines with the GPU', () => {
  const cell = {
    rank: 5,
    host: 'n07.cluster',
    lastFraction: 1,
    medianLateUs: 500,
    marginUs: 60,
    device: 5,
    bus: '0000:9a:00',
  };
  it('names the rank with its host and GPU', () => {
    assert.equal(
      lateLine(1024, 'in-place', cell),
      '# late: 1024 B in-place: rank 5 on n07, GPU 5 [0000:9a:00] last in 100% of iterations, +500 us median (margin 60 us)',
    );
    assert.equal(
      lateSummaryLine([cell, cell], 4),
      '# late rank: 5 on n07, GPU 5 [0000:9a:00] (late in 2 of 4 row-halves; last in 100% of their iterations, +500 us median)',
    );
  });
});

describe('COLLBENCH_ARRIVAL_TRACE (test hook)', () => {
  it('appends one line per row-half on rank 0: device arrivals on the host clock and the host enqueue times', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-trace-'));
    try {
      const path = join(dir, 't.jsonl');
      const env = { COLLBENCH_ARRIVAL_TRACE: path };
      const base = { timeUs: 1, cpuTimeUs: 1, checked: false, wrong: 0, ranksWithWrong: 0 };
      traceArrivals(env, 1024, false, {
        ...base,
        arrivalUs: [[0, 10]],
        deviceRefUs: [[500, 2]],
        enqueueUs: [[490, 492]],
      });
      traceArrivals(env, 1024, true, { ...base, arrivalUs: [] }); // another rank: nothing to write
      traceArrivals({}, 1024, true, { ...base, arrivalUs: [[1, 2]] }); // hook off
      assert.deepEqual(
        readFileSync(path, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as unknown),
        [{ sizeBytes: 1024, inPlace: false, deviceUs: [[500, 510]], referenceUs: 2, hostUs: [[490, 492]] }],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
