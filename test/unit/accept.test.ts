// collbench accept's pieces without running a benchmark: profiles (the shipped ones against the published schema,
// and bad ones refused with file, line and key), the seeded bootstrap (reproducible, finds a real shift, quiet on
// none), threshold judging with k-of-n attempts, baseline matching, and the verdict's JSON (against its schema) and
// JUnit. The reports judged are real documents read back from fixtures the report tests already use.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { matchBaseline, matchWorld, type BaselineDocument } from '../../bench/accept/baseline.js';
import { decided, judge, lateEvidence, medianBusBwGBps, samplesBySize } from '../../bench/accept/evaluate.js';
import { loadProfile, parseProfile, type ProfileCheck } from '../../bench/accept/profile.js';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import {
  type AcceptDocument,
  classifyRatio,
  lateText,
  renderVerdictJunit,
  renderVerdictText,
} from '../../bench/accept/verdict.js';
import { bonferroniLevel, medianRatioInterval, seededRandom } from '../../bench/numbers/stats.js';
import { parseAcceptArgs } from '../../bench/accept/command.js';
import type { ReportDocument, ReportHalf } from '../../bench/report/schema.js';
import { repoRoot } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'collbench-accept-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const HEAD = 'kind: collbench-profile\nversion: 1\nname: t\nchecks:\n';
const profileError = (text: string, name = 'p.yaml'): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  try {
    loadProfile(path);
  } catch (e) {
    const message = (e as Error).message;
    assert.equal(message.split('\n').length, 1, message);
    return message.replace(`${path}:`, 'FILE:');
  }
  assert.fail('profile accepted');
};

describe('profiles', () => {
  test('the shipped profiles validate and resolve', () => {
    const smoke = loadProfile(join(repoRoot, 'profiles/cpu-smoke.yaml'));
    assert.deepEqual([...new Set(smoke.checks.map((c) => c.collective))], ['all_reduce', 'all_gather', 'sendrecv']);
    for (const c of smoke.checks) assert.deepEqual(c.attempts, { pass: 2, of: 3 });
    const h100 = loadProfile(join(repoRoot, 'profiles/h100-node.yaml'));
    assert.equal(h100.name, 'h100-node');
    const bw = h100.checks.find((c) => c.id === 'all_reduce bandwidth')!;
    assert.equal(bw.minBusBwGBps, 368);
    assert.equal(bw.sizes.at(-1), 8 * 1024 ** 3);
    assert.equal(h100.checks.find((c) => c.collective === 'reduce_scatter')!.baselineTolerance, 0.1);
  });

  test('JSON profiles are read the same way', () => {
    const path = join(dir, 'p.json');
    writeFileSync(
      path,
      JSON.stringify(
        {
          kind: 'collbench-profile',
          version: 1,
          name: 'j',
          checks: [
            { collective: 'all_reduce', minBytes: '1K', maxBytes: '1M', minBusBwGBps: 1, attempts: { pass: 1, of: 2 } },
          ],
        },
        null,
        2,
      ),
    );
    const p = loadProfile(path);
    assert.equal(p.checks[0]!.id, 'all_reduce 1K-1M');
    assert.equal(p.checks[0]!.sizes.length, 11);
    assert.throws(
      () => loadProfile(path.replace('p.json', 'missing.json')),
      /--profile: cannot read .*missing\.json: ENOENT$/,
    );
  });

  test('errors name the file, the line and the key', () => {
    assert.equal(
      profileError(`${HEAD}  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 1M\n    maxTimeUs: -3\n`),
      'FILE:8: checks[0].maxTimeUs: must be > 0',
    );
    assert.equal(
      profileError(
        `${HEAD}  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 1M\n    maxTimeUs: 3\n    colour: red\n`,
      ),
      'FILE:9: checks[0].colour: unknown key',
    );
    assert.equal(
      profileError(`${HEAD}  - collective: all_reduce\n    minBytes: 8x\n    maxBytes: 1M\n    wrong: 0\n`),
      'FILE:6: checks[0].minBytes: must be a size in bytes: an integer, or 8, 64K, 1M, 2G',
    );
    assert.equal(
      profileError(`${HEAD}  - collective: all_reduce\n    minBytes: 1M\n    maxBytes: 8\n    wrong: 0\n`),
      'FILE:7: checks[0].maxBytes: 8 is below minBytes 1M',
    );
    assert.match(
      profileError(
        `${HEAD}  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 1M\n    wrong: 0\n` +
          '    attempts: {pass: 3, of: 2}\n',
      ),
      /^FILE:9: checks\[0\]\.attempts: 3 passes of 2 attempts cannot happen$/,
    );
    assert.match(
      profileError(`${HEAD}  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 1M\n`),
      /^FILE:5: checks\[0\]: needs at least one of minBusBwGBps, maxTimeUs, maxCvPct, wrong, links, baseline$/,
    );
    assert.match(
      profileError(`${HEAD}  - collective: allreduce\n    minBytes: 8\n    maxBytes: 1M\n    wrong: 0\n`),
      /^FILE:5: checks\[0\]\.collective: must be equal to one of the allowed values: all_reduce, /,
    );
    assert.match(profileError('kind: collbench-profile\nversion: 1\nname: [unclosed\n'), /^FILE:4: syntax: /);
    assert.match(profileError('kind: collbench-profile\nkind: again\n'), /^FILE:2: syntax: .*unique/i);
    assert.match(
      profileError('kind: collbench-profile\nversion: 2\nname: t\nchecks: []\n'),
      /^FILE:2: version: must be equal to constant 1$/,
    );
    assert.match(
      profileError(
        `${HEAD}  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 8\n    wrong: 0\n` +
          '  - collective: all_reduce\n    minBytes: 8\n    maxBytes: 8\n    wrong: 0\n',
      ),
      /^FILE:9: checks\[1\]\.collective: check 'all_reduce 8-8' is already check 1; give one a name$/,
    );
    // the safe loader: tags that would construct objects elsewhere are plain strings or errors, never code
    assert.match(
      profileError(
        `${HEAD}  - collective: !!js/function "function () {}"\n    minBytes: 8\n    maxBytes: 8\n    wrong: 0\n`,
      ),
      /^FILE:\d+: /,
    );
  });
});

describe('bootstrap interval of the ratio of medians', () => {
  const draw = (seed: number, n: number, scale: number): number[] => {
    const r = seededRandom(seed);
    return Array.from({ length: n }, () => scale * (10 + 5 * r() + (r() < 0.05 ? 500 * r() : 0))); // with rare outliers
  };

  test('seeded: the same samples give the same interval; another seed a close one', () => {
    const a = draw(1, 100, 1),
      b = draw(2, 100, 1);
    assert.deepEqual(medianRatioInterval(a, b, 0.99, 42), medianRatioInterval(a, b, 0.99, 42));
    const other = medianRatioInterval(a, b, 0.99, 43);
    assert.ok(Math.abs(other.lo - medianRatioInterval(a, b, 0.99, 42).lo) < 0.02);
  });

  test('no shift: the interval covers 1 and nothing is flagged, over many independent draws', () => {
    let flagged = 0;
    for (let i = 0; i < 40; i++) {
      const r = medianRatioInterval(draw(100 + i, 60, 1), draw(200 + i, 60, 1), bonferroniLevel(0.05, 40), i, 1000);
      if (classifyRatio(r, 0) !== 'unchanged') flagged++;
    }
    assert.ok(flagged <= 1, `${flagged} of 40 flagged`);
  });

  test('a 30% slowdown is significant; it is a regression only beyond the tolerance', () => {
    const r = medianRatioInterval(draw(5, 100, 1.3), draw(6, 100, 1), 0.99, 7);
    assert.ok(r.lo > 1 && r.estimate > 1.2 && r.estimate < 1.4, JSON.stringify(r));
    assert.equal(classifyRatio(r, 0.1), 'regression');
    assert.equal(classifyRatio(r, 0.5), 'unchanged');
    assert.equal(classifyRatio(medianRatioInterval(draw(6, 100, 1), draw(5, 100, 1.3), 0.99, 7), 0.1), 'improvement');
  });

  test('Bonferroni level', () => {
    assert.equal(bonferroniLevel(0.05, 1), 0.95);
    assert.ok(Math.abs(bonferroniLevel(0.05, 20) - 0.9975) < 1e-12);
  });
});

/** A report of the check's sizes with the given out-of-place figures (the rest of the document is not read). */
function report(c: ProfileCheck, halves: Partial<ReportHalf>[]): ReportDocument {
  const half = (h: Partial<ReportHalf>): ReportHalf => ({
    timeUs: 10,
    cpuTimeUs: 10,
    algBwGBps: 1,
    busBwGBps: 1,
    wrong: 0,
    ranksWithWrong: 0,
    late: null,
    ...h,
  });
  return {
    world: { nranks: 2, backend: 'mpi (Open MPI 4.1.4)' },
    rows: c.sizes.map((s, i) => ({
      index: i,
      cycle: 0,
      sizeBytes: s,
      count: s / 4,
      type: 'float',
      redop: 'sum',
      root: -1,
      time: '',
      outOfPlace: half(halves[i] ?? {}),
      inPlace: half({}),
    })),
  } as unknown as ReportDocument;
}

const perIter = (samples: number[], cvPct = 5): ReportHalf['perIter'] => {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    skip: 0,
    samplesUs: samples,
    perRank: [],
    stats: {
      n: samples.length,
      min: sorted[0]!,
      max: sorted.at(-1)!,
      mean: 0,
      p50: sorted[samples.length >> 1]!,
      p95: 0,
      p99: 0,
      stdev: 0,
      cvPct,
    },
  };
};

describe('judging thresholds', () => {
  const check = parseProfile(
    `${HEAD}  - collective: all_reduce\n    minBytes: 1K\n    maxBytes: 4K\n    minBusBwGBps: 2\n` +
      '    maxTimeUs: 20\n    maxCvPct: 10\n    wrong: 0\n    attempts: {pass: 2, of: 3}\n',
    'p.yaml',
  ).checks[0]!;

  test('busbw and time from the median per-iteration time; worst size decides', () => {
    const h = { timeUs: 30, busBwGBps: 1, perIter: perIter([9, 10, 10, 11, 1000], 12) };
    assert.equal(medianBusBwGBps(h as ReportHalf), 3); // 1 GB/s at the 30 us mean = 3 GB/s at the 10 us median
    const doc = report(check, [h, { timeUs: 30, busBwGBps: 1.5, perIter: perIter([12, 15, 15]) }, h]);
    const r = judge(check, [doc]);
    const by = Object.fromEntries(r.map((x) => [x.name, x]));
    assert.equal(by.minBusBw!.measured, 3);
    assert.equal(by.maxTime!.measured, 15);
    assert.equal(by.maxTime!.sizeBytes, 2048);
    assert.equal(by.maxCv!.attempts[0]!.holds, false); // cv 12% > 10%
    assert.equal(by.wrong!.measured, 0);
  });

  test('k of n: runs stop once decided; the k-th best run gives the measured figure', () => {
    const ok = report(check, [{ perIter: perIter([5]) }, { perIter: perIter([6]) }, { perIter: perIter([7]) }]);
    const slow = report(check, [{ perIter: perIter([50]) }]);
    const bad = report(check, [{ wrong: 3, perIter: perIter([5]) }]);
    const time = (docs: ReportDocument[]) => judge(check, docs).find((x) => x.name === 'maxTime')!;
    assert.equal(decided(check, judge(check, [ok]), 1), false);
    assert.equal(decided(check, judge(check, [ok, ok]), 2), true);
    assert.equal(decided(check, judge(check, [slow]), 1), false);
    assert.equal(decided(check, judge(check, [slow, slow]), 2), true); // 2 of 3 can no longer pass
    const mixed = time([slow, ok, ok]);
    assert.equal(mixed.status, 'pass');
    assert.equal(mixed.passed, 2);
    assert.equal(mixed.measured, 7); // the 2nd best run's worst size
    assert.equal(time([slow, ok, slow]).status, 'fail');
    assert.equal(time([slow, ok, slow]).measured, 50);
    const wrong = judge(check, [bad, bad]).find((x) => x.name === 'wrong')!;
    assert.deepEqual([wrong.status, wrong.measured, wrong.sizeBytes], ['fail', 3, 1024]);
    assert.deepEqual(samplesBySize(check, [ok, ok]).get(1024), [5, 5]);
  });

  test('late evidence: the rank named in most row-halves, with its host', () => {
    const late = { rank: 1, host: 'n2', lastFraction: 0.9, medianLateUs: 1500, marginUs: 50 };
    const doc = report(check, [{ late }, { late }, { late: { ...late, rank: 0, host: 'n1' } }]);
    assert.deepEqual(lateEvidence([doc]), { rank: 1, host: 'n2', rowHalves: 2, of: 6, medianLateUs: 1500 });
    assert.equal(lateEvidence([report(check, [])]), null);
  });

  test('late evidence from device arrivals (NCCL -I 1, as accept runs its checks): the rank named with its GPU', () => {
    const late = {
      rank: 5,
      host: 'n07.cluster',
      lastFraction: 0.95,
      medianLateUs: 480,
      marginUs: 40,
      device: 5,
      bus: '0000:9a:00',
    };
    const doc = report(check, [{ late }, { late }, { late: null }]);
    const e = lateEvidence([doc])!;
    assert.deepEqual(e, {
      rank: 5,
      host: 'n07.cluster',
      rowHalves: 2,
      of: 6,
      medianLateUs: 480,
      device: 5,
      bus: '0000:9a:00',
    });
    assert.match(lateText(e), /^rank 5 on n07, GPU 5 \[0000:9a:00\] arrived late in 2 of 6 row-halves \(\+480/);
    const cpu = lateEvidence([report(check, [{ late: { ...late, device: undefined, bus: undefined } }])])!;
    assert.match(lateText(cpu), /^rank 5 on n07 arrived late/);
  });
});

describe('baselines', () => {
  const profile = parseProfile(
    `${HEAD}  - collective: all_reduce\n    minBytes: 1K\n    maxBytes: 4K\n    wrong: 0\n`,
    'p.yaml',
  );
  const base = (
    over: Partial<BaselineDocument['checks'][number]> = {},
    world = { nranks: 2, backend: 'mpi (Open MPI 4.1.4)' },
  ) => ({
    path: 'b.json',
    doc: {
      kind: 'collbench-accept-baseline',
      schemaVersion: 1,
      createdAt: '',
      profile: { name: 't', path: 'p.yaml' },
      world,
      host: 'h',
      checks: [
        {
          id: 'all_reduce 1K-4K',
          collective: 'all_reduce',
          dtype: 'float',
          op: 'sum',
          placement: 'out-of-place',
          runs: 1,
          sizes: [1024, 2048, 4096].map((s) => ({ sizeBytes: s, samplesUs: [1] })),
          ...over,
        },
      ],
    } as BaselineDocument,
  });

  test('a matching baseline is accepted; each mismatch is named', () => {
    assert.equal(matchBaseline(base(), profile).size, 1);
    assert.throws(
      () => matchBaseline(base({ collective: 'all_gather' }), profile),
      /--baseline: b\.json: check 'all_reduce 1K-4K': collective all_gather in the baseline, all_reduce in the profile$/,
    );
    assert.throws(
      () => matchBaseline(base({ sizes: [{ sizeBytes: 1024, samplesUs: [1] }] }), profile),
      /sizes 1K in the baseline, 1K, 2K, 4K in the profile$/,
    );
    assert.throws(
      () => matchBaseline(base({ id: 'other' }), profile),
      /has no check 'all_reduce 1K-4K' \(it has 'other'\)$/,
    );
    assert.throws(
      () => matchWorld(base(), { nranks: 4, backend: 'mpi (Open MPI 4.1.4)' }),
      /was taken on 2 ranks; this run has 4$/,
    );
    assert.throws(
      () => matchWorld(base(), { nranks: 2, backend: 'gloo (0.5)' }),
      /taken with backend mpi \(Open MPI 4\.1\.4\); this run uses gloo/,
    );
    assert.deepEqual(schemaErrors('collbench-baseline.v1', base().doc), []);
  });
});

describe('verdict outputs', () => {
  const doc: AcceptDocument = {
    kind: 'collbench-accept',
    schemaVersion: 1,
    verdict: 'fail',
    exitCode: 7,
    startTime: 't0',
    endTime: 't1',
    argv: ['collbench', 'accept'],
    profile: { name: 'p<&>', path: 'p.yaml' },
    world: { nranks: 2, backend: 'mpi', host: 'h' },
    baseline: { path: 'b.json', createdAt: 't', host: 'h', tolerance: 3, alpha: 0.05, comparisons: 2 },
    savedBaseline: null,
    errors: [],
    checks: [
      {
        id: 'lat',
        collective: 'all_reduce',
        check: 'maxTime',
        status: 'pass',
        minBytes: 8,
        maxBytes: 64,
        placement: 'out-of-place',
        measured: 3.1,
        unit: 'us',
        sizeBytes: 64,
        threshold: '<= 25 us',
        attempts: { pass: 2, of: 3, run: 2, passed: 2 },
        late: null,
      },
      {
        id: 'lat',
        collective: 'all_reduce',
        check: 'baseline',
        status: 'fail',
        minBytes: 8,
        maxBytes: 64,
        placement: 'out-of-place',
        measured: 5000,
        unit: 'x',
        sizeBytes: 8,
        threshold: 'x4.00 max',
        attempts: { pass: 2, of: 3, run: 2, passed: 2 },
        late: { rank: 1, host: 'n2', rowHalves: 3, of: 4, medianLateUs: 1500 },
        baseline: {
          tolerance: 3,
          level: 0.975,
          sizes: [
            {
              sizeBytes: 8,
              baselineMedianUs: 0.3,
              medianUs: 1500,
              ratio: 5000,
              low: 4000,
              high: 6000,
              change: 'regression',
            },
            {
              sizeBytes: 64,
              baselineMedianUs: 0.3,
              medianUs: 0.31,
              ratio: 1.03,
              low: 0.9,
              high: 1.2,
              change: 'unchanged',
            },
          ],
        },
      },
    ],
  };

  test('JSON matches the published schema; the text names the late rank and the regressed size', () => {
    assert.deepEqual(schemaErrors('collbench-accept.v1', JSON.parse(JSON.stringify(doc))), []);
    assert.notDeepEqual(schemaErrors('collbench-accept.v1', { ...doc, verdict: 'maybe' }), []);
    const text = renderVerdictText(doc).join('\n');
    assert.match(text, /^# lat: rank 1 on n2 arrived late in 3 of 4 row-halves \(\+1500 us median\)$/m);
    assert.match(text, /^# lat: 8 B is x5000\.00 slower \[4000\.00, 6000\.00\]/m);
    assert.match(text, /^# verdict: FAIL \(1 of 2 checks passed\)$/m);
  });

  test('JUnit: one test case per row, a failure for the failing one, escaped', () => {
    const xml = renderVerdictJunit(doc);
    assert.equal(xml.match(/<testcase /g)!.length, 2);
    assert.equal(xml.match(/<failure /g)!.length, 1);
    assert.match(xml, /<testsuites name="collbench accept p&lt;&amp;&gt;" tests="2" failures="1" errors="0">/);
    assert.match(
      xml,
      /<failure message="baseline 8-64 B: measured x5000\.00 time, required x4\.00 max; rank 1 on n2 arrived late/,
    );
  });
});

describe('command line', () => {
  test('own options, launch options passed on, bad values refused', () => {
    const o = parseAcceptArgs([
      '--profile',
      'p.yaml',
      '--np',
      '2',
      '--backend=mpi',
      '-J',
      'v.json',
      '--tolerance',
      '0.5',
    ]);
    assert.ok(o !== 'help');
    assert.deepEqual(o.launch, ['--np=2', '--backend=mpi']);
    assert.equal(o.np, 2);
    assert.equal(o.tolerance, 0.5);
    assert.equal(o.json, 'v.json');
    assert.equal(o.force, false);
    assert.equal((parseAcceptArgs(['--profile', 'p', '--force']) as { force: boolean }).force, true);
    assert.throws(() => parseAcceptArgs(['--np', '2']), /accept: --profile: missing/);
    assert.throws(
      () => parseAcceptArgs(['--profile', 'p', '--tolerance', 'x']),
      /accept: --tolerance: tolerance must be a number from 0 to 100, got x$/,
    );
    assert.throws(() => parseAcceptArgs(['--profile', 'p', '-b', '8']), /accept: unknown option '-b'/);
    assert.equal(parseAcceptArgs(['-h']), 'help');
  });
  test('more ranks than cores: refused once, before any run; --oversubscribe passed on as a switch', () => {
    assert.throws(
      () => parseAcceptArgs(['--profile', 'p', '--np', '100000']),
      /^UsageError: --np 100000: this host has \d+ cores?; add --oversubscribe/,
    );
    const o = parseAcceptArgs(['--profile', 'p', '--np', '100000', '--oversubscribe']);
    assert.ok(o !== 'help');
    assert.deepEqual(o.launch, ['--np=100000', '--oversubscribe']);
  });
});
