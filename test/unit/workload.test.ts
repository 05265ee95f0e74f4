// The sequences `collbench workload` times, against PyTorch's rules on models small enough to bucket by hand
// (torch/csrc/distributed/c10d/reducer.cpp compute_bucket_assignment_by_size, FSDP's padded flat parameters), the
// synthetic model, the recommendation's statistics and the document's schema.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCount, parseWorkloadArgs } from '../../bench/workload/command.js';
import { MIB } from '../../bench/config/sizes.js';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import { recommend, summarize, type RepeatSamples } from '../../bench/workload/analyze.js';
import { capBytes, ddpBuckets, DDP_FIRST_BUCKET_BYTES } from '../../bench/workload/ddp.js';
import { buildDocument, renderCsv, renderText } from '../../bench/workload/document.js';
import { fsdpStep, fsdpUnits } from '../../bench/workload/fsdp.js';
import { defaultLayers, layerOfName, modelFromEntries, syntheticModel } from '../../bench/workload/model.js';
import { ddpPlan, fsdpPlan, gapsFor, planLines } from '../../bench/workload/plan.js';

const params = (buckets: { params: number[] }[]): number[][] => buckets.map((b) => b.params);

describe('DDP buckets (PyTorch reducer rule)', () => {
  it('fills in reverse definition order; the first bucket closes at the first cap, the others at the cap', () => {
    // 5 parameters of 4 bytes, first cap 4, cap 8: [4] closes at 4 >= 4; [3,2] at 8 >= 8; [1,0] at 8.
    assert.deepEqual(params(ddpBuckets([4, 4, 4, 4, 4], 8, 4)), [[4], [3, 2], [1, 0]]);
  });
  it('a bucket closes when it reaches or passes the cap, so it may exceed it by its last parameter', () => {
    // caps 5 then 5: 3 → 3+3 = 6 >= 5 closes [2,1] at 6 bytes; [0] is what is left.
    const b = ddpBuckets([3, 3, 3], 5, 5);
    assert.deepEqual(params(b), [[2, 1], [0]]);
    assert.deepEqual(
      b.map((x) => x.bytes),
      [6, 3],
    );
  });
  it('a parameter larger than the cap is a bucket of its own', () => {
    assert.deepEqual(params(ddpBuckets([100, 1, 1, 100], 10, 10)), [[3], [2, 1, 0]]);
  });
  it('PyTorch defaults: 100 parameters of 1 MiB → a 1 MiB first bucket, then 25 MiB buckets (25, 25, 25, 24)', () => {
    const b = ddpBuckets(Array(100).fill(MIB), capBytes(25));
    assert.equal(DDP_FIRST_BUCKET_BYTES, MIB);
    assert.deepEqual(
      b.map((x) => x.params.length),
      [1, 25, 25, 25, 24],
    );
    assert.deepEqual(b[0]!.params, [99]);
    assert.equal(
      b.reduce((a, x) => a + x.bytes, 0),
      100 * MIB,
    );
  });
  it('bucket_cap_mb is MiB, as DDP computes it: int(mb * 1024 * 1024)', () => {
    assert.equal(capBytes(25), 26_214_400);
    assert.equal(capBytes(0.5), 524_288);
  });
});

describe('FSDP units and step', () => {
  const p = (name: string, numel: number) => ({ name, numel, layer: layerOfName(name) });
  const model = [
    p('embed.weight', 10),
    p('layers.0.w', 5),
    p('layers.1.w', 6),
    p('layers.2.w', 7),
    p('norm.weight', 1),
  ];
  it('units: the root (outside the blocks) and every k blocks, padded to a multiple of the world', () => {
    assert.deepEqual(
      fsdpUnits(model, 1, 4).map((u) => [u.name, u.numel, u.paddedNumel]),
      [
        ['root', 11, 12],
        ['block 0', 5, 8],
        ['block 1', 6, 8],
        ['block 2', 7, 8],
      ],
    );
    assert.deepEqual(
      fsdpUnits(model, 2, 4).map((u) => [u.name, u.numel, u.paddedNumel]),
      [
        ['root', 11, 12],
        ['blocks 0-1', 11, 12],
        ['block 2', 7, 8],
      ],
    );
  });
  it('step: forward gathers, then backward gather (next prefetched) and reduce-scatter, last block first, root last', () => {
    const step = fsdpStep(fsdpUnits(model, 1, 4), true).map(
      (o) => `${o.collective === 'all_gather' ? 'AG' : 'RS'}${o.unit}`,
    );
    assert.deepEqual(step, ['AG0', 'AG1', 'AG2', 'AG3', 'AG3', 'AG2', 'RS3', 'AG1', 'RS2', 'RS1', 'RS0']);
  });
  it('a model without blocks is one root unit: one gather, one reduce-scatter', () => {
    const units = fsdpUnits([p('a', 3), p('b', 4)], 1, 2);
    assert.deepEqual(
      units.map((u) => u.paddedNumel),
      [8],
    );
    assert.deepEqual(
      fsdpStep(units, true).map((o) => o.collective),
      ['all_gather', 'reduce_scatter'],
    );
  });
  it('plan sizes are the padded unit in bytes (all_gather output, reduce_scatter input)', () => {
    const m = modelFromEntries(
      [
        { name: 'embed', numel: 10 },
        { name: 'layers.0.w', numel: 5 },
      ],
      'test',
    );
    const plan = fsdpPlan(m, 'bfloat16', 2, 4, [1]);
    assert.deepEqual(
      plan.configurations[0]!.ops.map((o) => [o.collective, o.bytes]),
      [
        ['all_gather', 24],
        ['all_gather', 16],
        ['all_gather', 16],
        ['reduce_scatter', 16],
        ['reduce_scatter', 24],
      ],
    );
  });
});

describe('models', () => {
  it('a synthetic 7e9 model: 32 layers, hidden 4232, parameters within 1 % of the request', () => {
    const m = syntheticModel(7e9);
    assert.equal(defaultLayers(7e9), 32);
    assert.match(m.source, /32 layers, hidden 4232,/);
    assert.ok(Math.abs(m.totalParams / 7e9 - 1) < 0.01, String(m.totalParams));
    assert.equal(
      m.params.reduce((a, x) => a + x.numel, 0),
      m.totalParams,
    );
    assert.equal(m.params.length, 2 + 6 * 32);
  });
  it('parameter files: counts, shapes, names that say the block', () => {
    const m = modelFromEntries(
      [7, { name: 'model.layers.12.mlp.weight', shape: [4, 8] }, { name: 'x', numel: 3, layer: 2 }],
      'f',
    );
    assert.deepEqual(
      m.params.map((x) => [x.numel, x.layer]),
      [
        [7, null],
        [32, 12],
        [3, 2],
      ],
    );
    assert.equal(m.layers, 2);
  });
  it('parameter counts: 7e9, 7B, 125M, 1.5T', () => {
    assert.deepEqual(
      ['7e9', '7B', '125M', '1.5T', '1000'].map((t) => parseCount(t, '--params')),
      [7e9, 7e9, 125e6, 1.5e12, 1000],
    );
    assert.throws(() => parseCount('7Q', '--params'), /--params: expected a parameter count/);
  });
  it('the stand-in compute is spread in proportion to bytes and adds up to the total', () => {
    const gaps = gapsFor(
      [
        { collective: 'all_reduce', bytes: 1, what: '' },
        { collective: 'all_reduce', bytes: 3, what: '' },
      ],
      1000,
    );
    assert.deepEqual(gaps, [250, 750]);
  });
});

describe('arguments', () => {
  it('run flags keep their run meaning; defaults for steps and warm-up', () => {
    const a = parseWorkloadArgs([
      'ddp',
      '--params',
      '1e8',
      '--backend',
      'gloo',
      '--np',
      '3',
      '-n',
      '7',
      '-c',
      '0',
      '--bucket-mb',
      '5,25',
    ]);
    assert.ok(a !== 'help');
    assert.equal(a.run.backend, 'gloo');
    assert.equal(a.run.np, 3);
    assert.deepEqual([a.steps, a.warmupSteps, a.check, a.bucketMb, a.dtype], [7, 2, false, [5, 25], 'bfloat16']);
    assert.deepEqual(a.own, ['ddp', '--params=1e8', '--bucket-mb=5,25']);
  });
  it('--dry-run lines list every call of every configuration', () => {
    const a = parseWorkloadArgs(['ddp', '--params', '1e6', '--layers', '2', '--bucket-mb', '1']);
    assert.ok(a !== 'help');
    const m = syntheticModel(1e6, 2);
    const lines = planLines(ddpPlan(m, 'bfloat16', 2, 1, [1], 1));
    assert.match(lines[1]!, /^# bucket cap \(MB\) 1: \d+ calls, \d+ bytes per step$/);
  });
});

describe('recommendation and document', () => {
  const model = modelFromEntries(Array(8).fill(MIB / 4), 'test');
  const plan = ddpPlan(model, 'float', 4, 2, [1, 4], 1);
  const reps = (median: number, n = 5): RepeatSamples[] =>
    Array.from({ length: n }, (_, i) => ({
      commUs: [median + i, median + i + 1],
      stepUs: null,
      computeUs: 0,
      wrong: 0,
    }));

  it('a clearly faster configuration is recommended, significantly ahead', () => {
    const s = summarize(plan, 2, [reps(1000), reps(500)]);
    const r = recommend(s);
    assert.equal(r.label, '4');
    assert.equal(r.margins[0]!.label, '1');
    assert.ok(r.margins[0]!.significant && r.margins[0]!.lo! > 1.9);
    assert.equal(r.metric, 'comm');
  });
  it('indistinguishable configurations: no significant difference', () => {
    const s = summarize(plan, 2, [reps(500), reps(500)]);
    const r = recommend(s);
    assert.equal(r.margins[0]!.significant, false);
  });
  it('the document validates against its published schema; text and CSV carry every configuration', () => {
    const samples = [reps(1000), reps(500)];
    const summaries = summarize(plan, 2, samples);
    const doc = buildDocument({
      plan,
      settings: {
        varies: plan.varies,
        repeats: 5,
        steps: 2,
        warmupSteps: 1,
        computeMs: 0,
        firstBucketMb: 1,
        check: true,
      },
      summaries,
      samples,
      recommendation: recommend(summaries),
      version: 'test',
      startTime: 'now',
      argv: ['collbench'],
      backend: { name: 'mpi', version: 'x' },
      nranks: 2,
      hosts: ['h'],
      exitCode: 0,
    });
    assert.deepEqual(schemaErrors('collbench-workload.v1', doc), []);
    // 8 MiB of fp32 gradients; all_reduce's bus factor at 2 ranks is 2(n-1)/n = 1.
    assert.equal(doc.configurations[0]!.busBytesPerStep, 8 * MIB);
    const text = renderText(doc).join('\n');
    assert.match(text, /^ {3}1 +\d+ +8\.4 /m);
    assert.match(text, /^# Recommended bucket cap \(MB\): 4 /m);
    assert.equal(renderCsv(doc).trim().split('\n').length, 3);
    assert.doesNotMatch(text, /issues the same calls/);
  });
  it('configurations that issue the same calls are said to (every 1 MiB parameter is above both caps)', () => {
    const twin = ddpPlan(model, 'float', 4, 2, [0.5, 1], 1);
    assert.deepEqual(twin.configurations[0]!.ops, twin.configurations[1]!.ops);
    const samples = [reps(500), reps(501)];
    const summaries = summarize(twin, 2, samples);
    const doc = buildDocument({
      plan: twin,
      settings: { varies: twin.varies, repeats: 5, steps: 2, warmupSteps: 1, computeMs: 0, check: true },
      summaries,
      samples,
      recommendation: recommend(summaries),
      version: 'test',
      startTime: 'now',
      argv: ['collbench'],
      backend: { name: 'mpi', version: 'x' },
      nranks: 2,
      hosts: ['h'],
      exitCode: 0,
    });
    assert.match(renderText(doc).join('\n'), /^# bucket cap \(MB\) 1 issues the same calls as 0\.5$/m);
  });
});

describe('overlap with its interval (issue 28 item 6: -29 % printed for 0.15 ms of communication against 20 ms of compute)', () => {
  const model = modelFromEntries(Array(8).fill(MIB / 4), 'test');
  const plan = ddpPlan(model, 'float', 4, 2, [1, 4], 1);
  /** 5 repeats: comm `comm` µs, compute 20 ms, the step with compute comm + compute − hidden, plus the jitter `noise[r]`. */
  const reps = (comm: number, hidden: number, noise: number[]): RepeatSamples[] =>
    noise.map((n, r) => ({
      commUs: [comm + r * 0.1, comm + r * 0.1 + 1],
      stepUs: [comm + 20_000 - hidden + n, comm + 20_000 - hidden + n + 1],
      computeUs: 20_000 + r * 0.01,
      wrong: 0,
    }));
  const docOf = (samples: RepeatSamples[][]) => {
    const summaries = summarize(plan, 2, samples);
    return buildDocument({
      plan,
      settings: {
        varies: plan.varies,
        repeats: 5,
        steps: 2,
        warmupSteps: 1,
        computeMs: 20,
        firstBucketMb: 1,
        check: true,
      },
      summaries,
      samples,
      recommendation: recommend(summaries),
      version: 'test',
      startTime: 'now',
      argv: ['collbench'],
      backend: { name: 'mpi', version: 'x' },
      nranks: 2,
      hosts: ['h'],
      exitCode: 0,
    });
  };
  const overlapColumn = (text: string): string[] =>
    text
      .split('\n')
      .filter((l) => /^ {3}\d/.test(l))
      .map((l) => l.trim().split(/\s{2,}/)[7]!); // cells are 2+ spaces apart

  it('tiny communication, jitter of the 20 ms step larger than it: the point estimate is negative, printed as within noise', () => {
    // 150 µs of communication, nothing hidden, the step jittering by ±100 µs over the repeats (a scheduler tick).
    const doc = docOf([reps(150, 0, [40, -100, 60, 90, -30]), reps(150, 0, [70, -20, 100, -80, 50])]);
    assert.deepEqual(schemaErrors('collbench-workload.v1', doc), []);
    for (const c of doc.configurations) {
      assert.ok(c.overlapPct! < 0, `the raw estimate is negative (${c.overlapPct})`);
      assert.equal(c.overlap!.verdict, 'noise');
      assert.ok(c.overlap!.lo < 0 && c.overlap!.hi > 0);
    }
    const text = renderText(doc).join('\n');
    assert.deepEqual(overlapColumn(text), ['within noise', 'within noise']);
    assert.doesNotMatch(
      text
        .split('\n')
        .filter((l) => /^ {3}\d/.test(l))
        .join('\n'),
      /\s-\d/,
      'no negative figure in the table',
    );
    assert.match(
      text,
      /^# overlap within noise \(95% bootstrap interval over the repeats contains 0\): 1 \[-\d+, \d+\] %, 4 \[/m,
    );
    assert.match(renderCsv(doc), /,noise\n/);
  });
  it('communication really hidden: the figure with its interval, above 0', () => {
    // 2 ms of communication, 1.5 ms of it hidden, ±20 µs of jitter: 75 % [74, 76] or so.
    const doc = docOf([reps(2000, 1500, [10, -20, 15, 5, -10]), reps(2000, 1500, [0, 20, -15, 10, -5])]);
    for (const c of doc.configurations) assert.equal(c.overlap!.verdict, 'hidden');
    for (const cell of overlapColumn(renderText(doc).join('\n'))) {
      const m = /^(\d+) \[(\d+), (\d+)\]$/.exec(cell);
      assert.ok(m, cell);
      assert.ok(Number(m[2]) <= 75 && Number(m[3]) >= 74 && Number(m[1]) >= 74 && Number(m[1]) <= 76, cell);
    }
  });
  it('a step with compute longer than both together in every repeat: "none", never a negative figure', () => {
    const doc = docOf([reps(150, -300, [5, -5, 3, 0, 2]), reps(150, 0, [40, -100, 60, 90, -30])]);
    assert.equal(doc.configurations[0]!.overlap!.verdict, 'none');
    const text = renderText(doc).join('\n');
    assert.deepEqual(overlapColumn(text), ['none', 'within noise']);
    assert.match(
      text,
      /^# overlap none \(95% interval below 0\): 1 \[-\d+, -\d+\] %; the step with compute took longer/m,
    );
  });
});
