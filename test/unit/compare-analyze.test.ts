// The verdict of collbench compare from known inputs: real report documents (built by the report
// exporter's own builder) with chosen busbw per size, and child outcomes for clean, failed, rejected,
// timed-out and corrupting runs. Medians, spreads, best, gain, crossovers, correctness, exit codes, and
// every rendering of the result (terminal, CSV, Markdown, JUnit, HTML, NCCL tuner CSV).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { analysisFields, analyze, classifyRun, type RunResult } from '../../bench/compare/analyze.js';
import { medianOf } from '../../bench/numbers/stats.js';
import { COMPARE_KIND, COMPARE_SCHEMA_VERSION, type CompareDocument } from '../../bench/compare/document.js';
import { parseNcclTuningLog } from '../../bench/compare/tuning-log.js';
import {
  renderCompareCsv,
  renderCompareHtml,
  renderCompareJunit,
  renderCompareMarkdown,
  renderText,
  spreadCell,
} from '../../bench/compare/render.js';
import type { ChildOutcome } from '../../bench/launch/child-job.js';
import { childOutcome } from '../helpers/child-fixtures.js';
import { combinations, parseAxis, type Combination } from '../../bench/compare/settings.js';
import { renderTunerCsv } from '../../bench/compare/tuner-csv.js';
import { reportBuilder } from '../../bench/report/exporters/json.js';
import type { RowRecord } from '../../bench/report/reporter.js';
import { reportErrors, type ReportDocument } from '../../bench/report/schema.js';
import { repoRoot } from '../helpers/cli.js';
import { fakeMeta } from '../helpers/report-fixtures.js';

const SIZES = [1024, 65536, 1048576, 16777216];

/** A real report document whose out-of-place busbw at SIZES[i] is bus[i] (in-place: half of it). */
function doc(
  bus: number[],
  wrong: (number | null)[] = bus.map(() => 0),
  opts: { complete?: boolean } = {},
): ReportDocument {
  const b = reportBuilder({});
  b.begin(fakeMeta(false));
  fill(b, bus, wrong, opts);
  return b.doc!;
}

/** A one-rank report (busbw 0 by definition: all_reduce's factor 2(n-1)/n), out-of-place time at SIZES[i] times[i] µs. */
function oneRankDoc(times: number[]): ReportDocument {
  const b = reportBuilder({});
  const meta = fakeMeta(false);
  b.begin({
    ...meta,
    info: { ...meta.info, nranks: 1, localSize: 1 },
    ranks: meta.ranks.slice(0, 1),
    clock: { ...meta.clock!, offsetsUs: [0] },
  });
  times.forEach((t, i) => {
    const size = SIZES[i]!;
    const half = (inPlace: boolean) => ({
      inPlace,
      timeUs: t,
      algBw: size / (t * 1e3),
      busBw: 0,
      wrong: 0,
      result: { timeUs: t, cpuTimeUs: 1, checked: true, wrong: 0, ranksWithWrong: 0 },
      late: null,
      lastShare: null,
    });
    b.row({
      sweep: { dtype: 'float', op: 'sum', root: -1 },
      cycle: 0,
      sizeBytes: size,
      count: size / 4,
      type: 'float',
      redop: 'sum',
      root: -1,
      time: new Date('2026-01-02T03:04:06Z'),
      halves: [half(false), half(true)],
    });
  });
  b.end({ outOfBounds: 0, avgBusBw: 0, minBwVerdict: null, exitCode: 0, skipped: null });
  return b.doc!;
}

function fill(
  b: ReturnType<typeof reportBuilder>,
  bus: number[],
  wrong: (number | null)[],
  opts: { complete?: boolean },
): void {
  bus.forEach((bw, i) => {
    const size = SIZES[i]!;
    const half = (inPlace: boolean, w: number | null) => {
      const busBw = inPlace ? bw / 2 : bw;
      return {
        inPlace,
        timeUs: size / (busBw * 1e3),
        algBw: busBw,
        busBw,
        wrong: w,
        result: {
          timeUs: size / (busBw * 1e3),
          cpuTimeUs: 1,
          checked: w !== null,
          wrong: w ?? 0,
          ranksWithWrong: w ? 1 : 0,
        },
        late: null,
        lastShare: null,
      };
    };
    const row: RowRecord = {
      sweep: { dtype: 'float', op: 'sum', root: -1 },
      cycle: 0,
      sizeBytes: size,
      count: size / 4,
      type: 'float',
      redop: 'sum',
      root: -1,
      time: new Date('2026-01-02T03:04:06Z'),
      halves: [half(false, wrong[i]!), half(true, wrong[i] === null ? null : 0)],
    };
    b.row(row);
  });
  if (opts.complete !== false) b.end({ outOfBounds: 0, avgBusBw: 1, minBwVerdict: null, exitCode: 0, skipped: null });
}

const outcome = (exitCode: number | null, extra: Partial<ChildOutcome> = {}): ChildOutcome =>
  childOutcome(exitCode, { durationSec: 1.5, ...extra });
const ok = (run: number, d: ReportDocument): RunResult => ({
  run,
  outcome: outcome(0),
  doc: d,
  docError: null,
  reportPath: `/r/${run}.json`,
});

function compareDoc(
  combos: Combination[],
  results: Map<string, RunResult[]>,
  extra: Partial<CompareDocument> = {},
  probeEvents: ReturnType<typeof parseNcclTuningLog> | null = null,
): CompareDocument {
  const a = analyze(combos, results, {
    placement: 'out-of-place',
    timeoutSec: 60,
    collective: 'all_reduce',
    probeEvents,
  });
  return {
    kind: COMPARE_KIND,
    schemaVersion: COMPARE_SCHEMA_VERSION,
    status: 'complete',
    startTime: 't0',
    endTime: 't1',
    argv: ['collbench', 'compare', '--env', 'NCCL_ALGO=Ring,Tree', '--', 'all_reduce_perf'],
    program: {
      words: ['all_reduce_perf', '-b', '1K', '-e', '16M', '-f', '16'],
      collective: 'all_reduce',
      name: 'all_reduce_perf',
    },
    axes: [],
    runsPerCombination: 3,
    placement: 'out-of-place',
    timeoutSec: 60,
    ...analysisFields(a),
    probe: probeEvents
      ? { ran: true, env: {}, status: 'ok', error: null, events: probeEvents.length, files: [] }
      : null,
    exitCode: a.exitCode,
    ...extra,
  };
}

describe('compare verdict', () => {
  const combos = combinations([parseAxis('env', 'NCCL_ALGO=Ring,Tree')]); // C0 default, C1 Ring, C2 Tree
  // three interleaved runs; C2 wins small sizes, C1 large ones, C0 never
  const results = new Map<string, RunResult[]>([
    ['C0', [ok(1, doc([1, 10, 50, 100])), ok(2, doc([1.2, 11, 52, 104])), ok(3, doc([0.8, 9, 48, 96]))]],
    ['C1', [ok(1, doc([1.5, 12, 80, 150])), ok(2, doc([1.6, 13, 82, 160])), ok(3, doc([1.4, 11.5, 81, 155]))]],
    ['C2', [ok(1, doc([3, 20, 60, 90])), ok(2, doc([3.3, 12.5, 61, 91])), ok(3, doc([2.9, 21, 59, 89]))]],
  ]);
  const a = analyze(combos, results, { placement: 'out-of-place', timeoutSec: 60, collective: 'all_reduce' });

  it('uses valid report documents as input', () => {
    assert.deepEqual(reportErrors(results.get('C1')![0]!.doc), []);
  });

  it('takes the median and the spread of each combination per size', () => {
    assert.equal(medianOf([3, 1, 2]), 2);
    assert.equal(medianOf([4, 1, 2, 3]), 2.5);
    const s = a.cases[0]!.sizes[0]!;
    assert.equal(s.sizeBytes, 1024);
    assert.deepEqual(
      s.results.map((r) => r.busBwGBps),
      [
        { median: 1, min: 0.8, max: 1.2 },
        { median: 1.5, min: 1.4, max: 1.6 },
        { median: 3, min: 2.9, max: 3.3 },
      ],
    );
    assert.deepEqual(
      s.results.map((r) => r.n),
      [3, 3, 3],
    );
    assert.equal(s.results[2]!.vsDefaultPct, 200);
  });

  it('names the best per size, its gain over the default, the crossovers and whether the margin is clear', () => {
    const sizes = a.cases[0]!.sizes;
    assert.deepEqual(
      sizes.map((s) => s.best),
      ['C2', 'C2', 'C1', 'C1'],
    );
    assert.deepEqual(
      sizes.map((s) => s.runnerUp),
      ['C1', 'C1', 'C2', 'C0'],
    );
    assert.deepEqual(
      sizes.map((s) => Math.round(s.gainPct!)),
      [200, 100, 62, 55],
    );
    assert.deepEqual(
      sizes.map((s) => s.clear),
      [true, false, true, true],
    ); // 64K: C2's 12.5 is inside C1's 11.5–13
    assert.deepEqual(a.cases[0]!.crossovers, [{ sizeBytes: 1048576, from: 'C2', to: 'C1' }]);
    assert.deepEqual(a.winners, ['C2', 'C1']);
    assert.equal(a.exitCode, 0);
    assert.equal(a.backend, 'mpi (Open MPI 4.1.4)');
    assert.equal(a.nranks, 2);
    assert.equal(a.nodes, 2);
  });

  it('compares the in-place half when asked', () => {
    const ip = analyze(combos, results, { placement: 'in-place', timeoutSec: 60, collective: 'all_reduce' });
    assert.equal(ip.cases[0]!.sizes[0]!.results[0]!.busBwGBps!.median, 0.5);
  });

  it('marks failed, rejected and timed-out combinations and never counts them as best', () => {
    const r = new Map(results);
    // C2 (the small-size winner) times out in its second run: it shows its numbers but cannot win
    r.set('C2', [
      ok(1, doc([3, 20, 60, 90])),
      {
        run: 2,
        outcome: outcome(null, { timedOut: true, signal: 'SIGTERM' }),
        doc: doc([3.1], [0], { complete: false }),
        docError: null,
        reportPath: null,
      },
      { run: 3, outcome: null, skipped: true, doc: null, docError: null, reportPath: null },
    ]);
    const b = analyze(combos, r, { placement: 'out-of-place', timeoutSec: 60, collective: 'all_reduce' });
    const c2 = b.combinations[2]!;
    assert.equal(c2.status, 'timeout');
    assert.equal(c2.error, 'run 2: timed out after 60 s (killed)');
    assert.deepEqual(
      c2.runs.map((x) => x.status),
      ['ok', 'timeout', 'skipped'],
    );
    assert.deepEqual(
      b.cases[0]!.sizes.map((s) => s.best),
      ['C1', 'C1', 'C1', 'C1'],
    );
    assert.equal(b.cases[0]!.sizes[0]!.results[2]!.n, 2); // its partial rows are still shown
    assert.equal(b.exitCode, 4);
  });

  it('classifies how a child ended', () => {
    const c = (o: ChildOutcome, d: ReportDocument | null = null) =>
      classifyRun({ run: 1, outcome: o, doc: d, docError: d ? null : 'the run wrote no report', reportPath: null }, 30);
    assert.deepEqual(c(outcome(0), doc([1])), { status: 'ok', error: null });
    assert.deepEqual(c(outcome(7), doc([1], [3])), { status: 'wrong', error: '3 wrong elements' });
    assert.deepEqual(c(outcome(7), doc([1])), { status: 'ok', error: null }); // NCCL_TESTS_MIN_BW, not the setting's fault
    assert.deepEqual(c(outcome(0)), {
      status: 'failed',
      error: 'exit 0, but no readable report: the run wrote no report',
    });
    assert.deepEqual(c(outcome(0), doc([1], [0], { complete: false })), {
      status: 'failed',
      error: 'exit 0, but its report is incomplete',
    });
    assert.deepEqual(
      c(outcome(3, { stderrTail: 'vm: nccl failure NCCL_INVALID_USAGE at ncclCommInitRank: NCCL_ALGO: bad value\n' })),
      {
        status: 'rejected',
        error: 'exit 3: vm: nccl failure NCCL_INVALID_USAGE at ncclCommInitRank: NCCL_ALGO: bad value',
      },
    );
    assert.deepEqual(c(outcome(2, { stderrTail: 'collbench: --gloo-algo: nope\n' })), {
      status: 'rejected',
      error: 'exit 2: collbench: --gloo-algo: nope',
    });
    const mpi =
      '--------------------------------------------------------------------------\nAn MPI process failed.\n' +
      '--------------------------------------------------------------------------\nvm: mpi failure MPI_ERR_OTHER at MPI_Init: bad\nmpirun noticed that …\n';
    assert.deepEqual(c(outcome(3, { stderrTail: mpi })), {
      status: 'failed',
      error: 'exit 3: vm: mpi failure MPI_ERR_OTHER at MPI_Init: bad',
    });
    assert.deepEqual(c(outcome(null, { signal: 'SIGSEGV', stderrTail: 'Segmentation fault\n' })), {
      status: 'failed',
      error: 'killed by SIGSEGV: Segmentation fault',
    });
    assert.deepEqual(c(outcome(null, { spawnError: 'spawn ENOENT' })), {
      status: 'failed',
      error: 'could not start: spawn ENOENT',
    });
  });

  it('makes a correctness matrix: a corrupting combination is shown, excluded from best, and exits 7', () => {
    const r = new Map(results);
    r.set('C1', [ok(1, doc([1.5, 12, 80, 150], [0, 0, 5, 0])), ok(2, doc([1.6, 13, 82, 160]))]);
    r.get('C1')![0]!.outcome = outcome(7);
    const b = analyze(combos, r, { placement: 'out-of-place', timeoutSec: 60, collective: 'all_reduce' });
    assert.equal(b.combinations[1]!.status, 'wrong');
    assert.equal(b.combinations[1]!.wrong, 5);
    assert.deepEqual(
      b.cases[0]!.sizes.map((s) => s.results[1]!.wrong),
      [0, 0, 5, 0],
    );
    assert.deepEqual(
      b.cases[0]!.sizes.map((s) => s.best),
      ['C2', 'C2', 'C2', 'C0'],
    );
    assert.equal(b.exitCode, 7);
    const text = renderText(compareDoc(combos, r)).join('\n');
    assert.match(text, /# correctness: #wrong per size/);
    assert.match(text, /^ +1048576 +0 +5 +0$/m);
    assert.match(text, /^ +1048576 .*81(\.\d+)? \[80(\.\d+)?-82(\.\d+)?\] !/m);
  });

  it("says 'too few runs' where runs that do not overlap could not pass the test, 'no significant difference' where they could", () => {
    // n runs, C1 ahead of C0 (by `gain`) at the first `c1Wins` sizes, behind at the others; + r/100 in run r: no ties
    const verdicts = (n: number, c1Wins: number, gain = 2): (string | null)[] => {
      const runs = (busbw: (i: number) => number, offset: number): RunResult[] =>
        Array.from({ length: n }, (_, r) => ok(r + 1, doc(SIZES.map((_, i) => busbw(i) + offset + r / 100))));
      const res = new Map([
        ['C0', runs((i) => (i < c1Wins ? 10 : 20), 0)],
        ['C1', runs((i) => (i < c1Wins ? 10 * gain : 10), 0.005)],
      ]);
      return compareDoc(combinations([parseAxis('env', 'NCCL_ALGO=Ring')]), res).cases[0]!.sizes.map(
        (s) => s.significance,
      );
    };
    // 4 runs: smallest p 2/70 = 0.029, above 0.05 / 4 sizes tested, below 0.05 for one
    assert.deepEqual(verdicts(4, 4), ['too few runs', 'too few runs', 'too few runs', 'too few runs']);
    assert.deepEqual(verdicts(4, 1), ['significant', null, null, null]);
    // 5 runs: 0.0079, below 0.05 / 4; runs that overlap (C1 0.5 % ahead, within the runs' spread) could have passed
    assert.deepEqual(verdicts(5, 4), ['significant', 'significant', 'significant', 'significant']);
    assert.deepEqual(verdicts(5, 1, 1.0005), ['no significant difference', null, null, null]);
  });

  it('renders the terminal table, CSV, Markdown and JUnit from the document', async () => {
    const d = compareDoc(combos, results);
    const text = renderText(d);
    assert.ok(
      text.every((l) => l.startsWith('#') || /^ +\d+ /.test(l)),
      text.join('\n'),
    );
    assert.ok(text.includes('# crossovers: 1M C2 -> C1'));
    assert.ok(
      text.includes('# correctness: #wrong 0 for every combination at every size (both placements, every run)'),
    );
    assert.ok(text.includes('# winners: C2, C1 (2 distinct)'));
    // the gain with its bootstrap interval; 3 runs against 3 cannot pass a rank test (smallest p 0.1): too few runs
    assert.match(
      text.join('\n'),
      /^ +1024 +1\.00 \[0\.80-1\.20\] +1\.50 \[1\.40-1\.60\] +3\.00 \[2\.90-3\.30\] +C2 +\+200\.0% \[\+\d+\.\d%, \+\d+\.\d%\] +too few runs +clear$/m,
    );
    assert.ok(!text.some((l) => l.includes('NCCL chose')), 'no NCCL column without an NCCL log');
    // the note on too few runs says how many there are and how many would do, only where a size says so (4 sizes
    // tested: 5 runs, smallest p 0.0079, pass 0.05 / 4)
    assert.ok(
      text.includes(
        '# over the sizes at 0.05; too few runs: 3 runs against 3 cannot pass it over 4 sizes tested (smallest p 0.10): use --repeats 5 or more',
      ),
      text.join('\n'),
    );
    // small values keep 3 significant digits (were 0.00 [0.00-0.00])
    assert.equal(spreadCell({ median: 0.001234, min: 0.0011, max: 0.0015 }, 3), '0.00123 [0.0011-0.0015]');
    assert.equal(spreadCell({ median: 12.5, min: 0, max: 0.5 }, 3), '12.50 [0.00-0.50]');

    const csv = renderCompareCsv(d).trim().split('\n');
    assert.equal(csv.length, 1 + 4 * 3);
    assert.match(csv[0]!, /^type,redop,root,size_bytes,count,combination,label,status,samples,busbw_median_gbps,/);
    assert.match(
      csv[3]!,
      /^float,sum,-1,1024,256,C2,NCCL_ALGO=Tree,ok,3,3,2\.9,3\.3,.*,1,C2,200,clear,,[\d.]+,[\d.]+,0\.1,too few runs,busbw,$/,
    );

    const md = renderCompareMarkdown(d);
    assert.match(
      md,
      /\| 1024 \| 1\.00 \\\[0\.80-1\.20\\\] \| 1\.50 \\\[1\.40-1\.60\\\] \| 3\.00 \\\[2\.90-3\.30\\\] \| C2 \| \+200\.0% \[\+\d+\.\d%, \+\d+\.\d%\] \| too few runs \| clear \|/,
    );
    assert.match(md, /Crossovers: 1M: C2 → C1/);

    const failed = new Map(results);
    failed.set('C1', [
      {
        run: 1,
        outcome: outcome(3, { stderrTail: 'vm: nccl failure NCCL_INVALID_USAGE at init: no\n' }),
        doc: null,
        docError: 'x',
        reportPath: null,
      },
    ]);
    const junit = renderCompareJunit(compareDoc(combos, failed));
    assert.match(junit, /<testsuites name="collbench compare all_reduce_perf" tests="3" failures="1"/);
    assert.match(
      junit,
      /<testcase name="C1 NCCL_ALGO=Ring"[^>]*>\n {6}<failure message="run 1: exit 3: vm: nccl failure NCCL_INVALID_USAGE at init: no" type="rejected">/,
    );
    const failedText = renderText(compareDoc(combos, failed)).join('\n');
    assert.match(
      failedText,
      /^# {2}C1 +NCCL_ALGO=Ring +rejected +N\/A +0\/1 +run 1: exit 3: vm: nccl failure NCCL_INVALID_USAGE/m,
    );
    assert.match(failedText, /^ +1024 +1\.00 \[0\.80-1\.20\] +rejected +3\.00/m);

    const html = await renderCompareHtml(d);
    assert.match(html, /data-chart="busbw" data-series="3"/);
    assert.match(html, /<table class="facts" data-table="verdict">/);
    assert.match(html, /<td class="best"><strong>3\.00 \[2\.90-3\.30\]<\/strong><\/td>/);
  });

  it('adds what NCCL chose for the default when the probe logged it', () => {
    const events = parseNcclTuningLog(
      readFileSync(join(repoRoot, 'test/fixtures/nccl-logs/v2.30-allreduce-g8.log'), 'utf8'),
    );
    const d = compareDoc(combos, results, {}, events);
    assert.deepEqual(
      d.cases[0]!.sizes.map((s) => s.ncclChoice?.[0]?.label ?? null),
      ['RING/LL', null, null, 'NVLS/SIMPLE'],
    );
    const text = renderText(d).join('\n');
    assert.match(text, /NCCL chose \(C0\)$/m);
    assert.match(text, /^ +1024 .* RING\/LL$/m);
    assert.match(text, /^ +65536 .* \?$/m);
    assert.match(
      text,
      /^# NCCL choice: one extra default run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \(timings unused\): ok, 17 per-call lines$/m,
    );
  });
});

describe('compare on one rank: busbw is 0 by definition, the verdict is on time (issue 28 item 7)', () => {
  const combos = combinations([parseAxis('env', 'NCCL_ALGO=Ring,Tree')]);
  // C1 is 2x faster than C0 at every size with separated runs; C2 as slow as C0.
  const results = new Map<string, RunResult[]>([
    [
      'C0',
      [
        ok(1, oneRankDoc([10, 20, 40, 80])),
        ok(2, oneRankDoc([11, 21, 41, 82])),
        ok(3, oneRankDoc([10.5, 20.5, 40.5, 81])),
      ],
    ],
    [
      'C1',
      [
        ok(1, oneRankDoc([5, 10, 20, 40])),
        ok(2, oneRankDoc([5.2, 10.2, 20.4, 40.5])),
        ok(3, oneRankDoc([5.1, 10.1, 20.2, 41])),
      ],
    ],
    [
      'C2',
      [
        ok(1, oneRankDoc([10, 19, 39, 79])),
        ok(2, oneRankDoc([12, 22, 43, 83])),
        ok(3, oneRankDoc([10.6, 20.6, 40.6, 80])),
      ],
    ],
  ]);
  const d = compareDoc(combos, results);

  it('uses valid one-rank report documents whose busbw is 0', () => {
    const r = results.get('C0')![0]!.doc!;
    assert.deepEqual(reportErrors(r), []);
    assert.equal(r.world.nranks, 1);
    assert.ok(r.rows.every((x) => x.outOfPlace.busBwGBps === 0));
  });
  it('judges on time: the faster combination is best at every size, clear, with its speed gain over C0', () => {
    assert.deepEqual(d.judgedOn, {
      metric: 'time',
      why: 'busbw is 0 by definition for all_reduce on 1 rank (its factor is 0)',
    });
    for (const s of d.cases[0]!.sizes) {
      assert.equal(s.best, 'C1', JSON.stringify(s));
      assert.equal(s.clear, true, "C1's slowest run is faster than the runner-up's fastest");
      assert.ok(s.gainPct! > 90 && s.gainPct! < 110, String(s.gainPct)); // C0's time over C1's: 2x
      assert.ok(
        s.gainInterval!.lo > 0 && s.gainInterval!.lo <= s.gainPct! && s.gainPct! <= s.gainInterval!.hi,
        JSON.stringify(s.gainInterval),
      );
      assert.ok(s.results[1]!.vsDefaultPct! > 90);
    }
    assert.deepEqual(d.winners, ['C1']);
  });
  it('says so in the header of every rendering, and the cells are times', () => {
    const text = renderText(d).join('\n');
    assert.match(
      text,
      /^# judged on time: busbw is 0 by definition for all_reduce on 1 rank \(its factor is 0\); cells: out-of-place time \(us\)/m,
    );
    assert.match(text, /^# best: lowest median time /m);
    assert.doesNotMatch(text, / overlap$/m);
    assert.match(text, /^ +1024 +10\.50 \[10\.00-11\.00\] +5\.10 \[5\.00-5\.20\] .* C1 +\+\d+\.\d% .* clear$/m);
    assert.match(renderCompareMarkdown(d), /^- judged on time: busbw is 0 by definition/m);
    assert.match(renderCompareMarkdown(d), /^## Time: float sum root -1/m);
    const csv = renderCompareCsv(d).trim().split('\n');
    assert.match(csv[0]!, /,judged_on,step$/);
    assert.ok(csv.slice(1).every((l) => l.endsWith(',time,')));
  });
  it('more ranks: busbw as before', () => {
    const a = analyze(combos, new Map([['C0', [ok(1, doc([1, 2, 3, 4]))]]]), {
      placement: 'out-of-place',
      timeoutSec: 60,
      collective: 'all_reduce',
    });
    assert.deepEqual(a.judgedOn, { metric: 'busbw', why: null });
  });
});

describe('compare --tuner-csv', () => {
  /** The example plugin's reading of the file (plugins/tuner/example/plugin.c loadConfig), for the test. */
  function pluginConfigs(text: string) {
    const valid = {
      coll: ['broadcast', 'reduce', 'allgather', 'reducescatter', 'allreduce'],
      algo: ['tree', 'ring', 'collnet_direct', 'collnet_chain', 'nvls', 'nvls_tree', 'pat'],
      proto: ['ll', 'll128', 'simple'],
    };
    return text
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => {
        assert.ok(l.length < 256, 'the plugin reads 256-byte lines');
        const t = l.split(',');
        assert.ok(t.length >= 8 && t.length <= 10, l);
        assert.ok(valid.coll.includes(t[0]!) && valid.algo.includes(t[3]!) && valid.proto.includes(t[4]!), l);
        return {
          coll: t[0],
          min: Number(t[1]),
          max: Number(t[2]),
          algo: t[3],
          proto: t[4],
          channels: Number(t[5]),
          nNodes: Number(t[6]),
          nRanks: Number(t[7]),
        };
      });
  }

  it("writes the winners' algorithm/protocol per size range in the plugin's format", () => {
    const combos = combinations([parseAxis('env', 'NCCL_ALGO=Ring,Tree'), parseAxis('env', 'NCCL_PROTO=LL,Simple')]);
    // C1 Ring/LL, C2 Ring/Simple, C3 Tree/LL, C4 Tree/Simple. Winners: C3, C1, C2, C2.
    const r = new Map<string, RunResult[]>([
      ['C0', [ok(1, doc([1, 1, 1, 1]))]],
      ['C1', [ok(1, doc([2, 9, 3, 3]))]],
      ['C2', [ok(1, doc([1, 2, 9, 9]))]],
      ['C3', [ok(1, doc([9, 3, 2, 2]))]],
      ['C4', [ok(1, doc([1, 1, 1, 1]))]],
    ]);
    const text = renderTunerCsv(compareDoc(combos, r));
    assert.deepEqual(pluginConfigs(text), [
      { coll: 'allreduce', min: 1024, max: 1024, algo: 'tree', proto: 'll', channels: -1, nNodes: 2, nRanks: 2 },
      { coll: 'allreduce', min: 1025, max: 65536, algo: 'ring', proto: 'll', channels: -1, nNodes: 2, nRanks: 2 },
      {
        coll: 'allreduce',
        min: 65537,
        max: 16777216,
        algo: 'ring',
        proto: 'simple',
        channels: -1,
        nNodes: 2,
        nRanks: 2,
      },
    ]);
    assert.match(text, /^# NCCL tuner configuration written by collbench compare/);
    assert.match(text, /^# C2 NCCL_ALGO=Ring NCCL_PROTO=Simple$/m);
  });

  it("uses NCCL's logged choice where the default wins, channels when forced, and comments what it cannot express", () => {
    const combos = combinations([
      parseAxis('env', 'NCCL_ALGO=^NVLS'),
      parseAxis('env', 'NCCL_MIN_NCHANNELS=4'),
      parseAxis('env', 'NCCL_MAX_NCHANNELS=4'),
    ]);
    const events = parseNcclTuningLog(
      readFileSync(join(repoRoot, 'test/fixtures/nccl-logs/v2.30-allreduce-g8.log'), 'utf8'),
    );
    const r = new Map<string, RunResult[]>([
      ['C0', [ok(1, doc([5, 1, 1, 5]))]],
      ['C1', [ok(1, doc([1, 5, 5, 1]))]],
    ]);
    const text = renderTunerCsv(compareDoc(combos, r, {}, events));
    // 1 KiB: the default wins and NCCL logged RING/LL; 16 MiB: default, NVLS/SIMPLE; between: C1 "^NVLS" cannot be one line
    assert.deepEqual(
      pluginConfigs(text).map((c) => [c.min, c.max, c.algo, c.proto]),
      [
        [1024, 1024, 'ring', 'll'],
        [1048577, 16777216, 'nvls', 'simple'],
      ],
    );
    assert.match(text, /^# 65536 B: best C1: NCCL_ALGO=\^NVLS is not one algorithm; no line \(NCCL decides\)$/m);
    const forced = combinations([
      parseAxis('env', 'NCCL_ALGO=Ring'),
      parseAxis('env', 'NCCL_PROTO=LL128'),
      parseAxis('env', 'NCCL_MIN_NCHANNELS=4'),
      parseAxis('env', 'NCCL_MAX_NCHANNELS=4'),
    ]);
    const f = renderTunerCsv(
      compareDoc(
        forced,
        new Map([
          ['C0', [ok(1, doc([1]))]],
          ['C1', [ok(1, doc([2]))]],
        ]),
      ),
    );
    assert.deepEqual(
      pluginConfigs(f).map((c) => [c.algo, c.proto, c.channels]),
      [['ring', 'll128', 4]],
    );
  });
});
