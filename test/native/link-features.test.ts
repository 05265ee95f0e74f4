// accept's links check, locate starting from the whole job's --links, compare's per-setting NCCL choice, and part 70's
// cost summary, driven by rows the plugin really produced (the C++ harness, gathered and reported by the engine's
// collector) and by real tables; no hand-made link figures.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { linksRow, linksWords } from '../../bench/accept/links.js';
import { launchBackend } from '../../bench/backends/nccl-links.js';
import { parseProfile, type ProfileCheck } from '../../bench/accept/profile.js';
import { checkRows } from '../../bench/accept/rows.js';
import { AcceptChecks } from '../../bench/accept/runs.js';
import {
  ACCEPT_KIND,
  ACCEPT_SCHEMA_VERSION,
  renderVerdictJunit,
  renderVerdictText,
  type AcceptDocument,
  type CheckRow,
} from '../../bench/accept/verdict.js';
import { analysisFields, analyze, type RunResult } from '../../bench/compare/analyze.js';
import { COMPARE_KIND, COMPARE_SCHEMA_VERSION, type CompareDocument } from '../../bench/compare/document.js';
import { renderCompareMarkdown, renderText } from '../../bench/compare/render.js';
import { CompareRuns } from '../../bench/compare/runs.js';
import { combinations, parseAxis } from '../../bench/compare/settings.js';
import type { ChildRuns } from '../../bench/engine/child-runs.js';
import type { GroupSamples } from '../../bench/locate/decide.js';
import { locateErrors, renderLocateText, type LocateJob } from '../../bench/locate/document.js';
import { runLocate, type GroupSpec, type Measurer } from '../../bench/locate/flow.js';
import { LocateJobs } from '../../bench/locate/runs.js';
import type { LocateOptions } from '../../bench/locate/options.js';
import { childOutcome, locateOptions as sharedLocateOptions } from '../helpers/child-fixtures.js';
import type { IO } from '../../bench/core/io.js';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import type { ReportDocument, ReportLinks } from '../../bench/report/schema.js';
import { repoRoot } from '../helpers/cli.js';
import { linksReport, ring } from '../helpers/link-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'cb-links2-features-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const PROFILE = `kind: collbench-profile
version: 1
name: links
defaults: {iters: 5, warmupIters: 1, attempts: {pass: 1, of: 2}}
checks:
  - {name: ring links, collective: all_reduce, minBytes: 1K, maxBytes: 4K, links: true}
`;

function linksCheck(): ProfileCheck {
  const path = join(dir, 'links.yaml');
  writeFileSync(path, PROFILE);
  return parseProfile(PROFILE, path).checks[0]!;
}

function verdictOf(rows: CheckRow[]): AcceptDocument {
  return {
    kind: ACCEPT_KIND,
    schemaVersion: ACCEPT_SCHEMA_VERSION,
    verdict: rows.some((r) => r.status === 'fail') ? 'fail' : 'pass',
    exitCode: rows.some((r) => r.status === 'fail') ? 7 : 0,
    startTime: '2026-11-27T00:00:00.000+00:00',
    endTime: '2026-11-27T00:01:00.000+00:00',
    argv: ['collbench', 'accept'],
    profile: { name: 'links', path: 'links.yaml' },
    world: { nranks: 8, backend: 'nccl', host: 'n01' },
    baseline: null,
    savedBaseline: null,
    checks: rows,
    errors: [],
  };
}

const rowsOf = (c: ProfileCheck, docs: ReportDocument[]) =>
  checkRows({ check: c, docs, results: [], error: null }, null).filter((r) => r.check === 'links');

describe("accept's links check", () => {
  it('a profile check asks for it; its runs get --links only when the launch names the nccl backend', () => {
    const c = linksCheck();
    assert.equal(c.links, true);
    assert.deepEqual(linksWords(c, ['--np', '8', '--backend', 'nccl']), ['--links']);
    assert.deepEqual(linksWords(c, ['--backend=nccl']), ['--links']);
    assert.deepEqual(linksWords(c, ['--backend', 'gloo']), []);
    assert.deepEqual(linksWords(c, []), []);
    assert.deepEqual(linksWords({ ...c, links: false }, ['--backend', 'nccl']), []);
    assert.equal(launchBackend(['--np', '2']), null);
    const words = new AcceptChecks(
      { launch: ['--backend', 'nccl', '--np', '8'], timeoutSec: 60, quiet: true },
      {} as ChildRuns,
      {} as IO,
      null,
    ).childWords(c, 'r.json');
    assert.ok(words.includes('--links') && words.includes('-I'), words.join(' '));
  });

  it("a run naming a slow link fails it with the link's sentence (text, JSON, JUnit)", async () => {
    const c = linksCheck();
    const docs = [await linksReport(ring('--slow', '3:2', '--factor', '4.6'))];
    const [row] = rowsOf(c, docs);
    assert.equal(row!.status, 'fail');
    assert.equal(row!.measured, 1);
    assert.equal(row!.links!.length, 1);
    assert.match(
      row!.links![0]!,
      /^slow link: rank 3 \(n04\) -> rank 4 \(n05\), channel 2: [\d.]+ GB\/s in SendWait vs [\d.]+ GB\/s median of 63 other links$/,
    );
    const doc = verdictOf([row!]);
    assert.deepEqual(schemaErrors('collbench-accept.v1', doc), []);
    const text = renderVerdictText(doc);
    assert.ok(text.includes(`# ring links: ${row!.links![0]!}`), text.join('\n'));
    assert.match(
      text.find((l) => l.includes(' links ') && l.includes('1 named'))!,
      /FAIL$/,
    );
    assert.match(renderVerdictJunit(doc), /<failure message="links [^"]*slow link: rank 3 \(n04\) -&gt; rank 4/);
  });

  it('runs naming none pass it', async () => {
    const c = linksCheck();
    const docs = [await linksReport(ring()), await linksReport(ring('--late', '5', '--late-us', '400'))];
    const [row] = rowsOf(c, docs);
    assert.equal(row!.status, 'pass');
    assert.equal(row!.measured, 0);
    assert.equal(row!.links, undefined);
    assert.deepEqual(row!.attempts, { pass: 1, of: 2, run: 2, passed: 2 });
  });

  it('no links from the runs (NCCL did not load the plugin, another backend): "not measured", never a pass', async () => {
    const c = linksCheck();
    const notLoaded = rowsOf(c, [await linksReport(null)])[0]!;
    assert.equal(notLoaded.status, 'not-measured');
    assert.deepEqual(notLoaded.links, ["NCCL did not load collbench's profiler plugin; links not measured"]);
    const gloo = await linksReport(null);
    gloo.options.links = false;
    delete gloo.links;
    gloo.world.backend = 'gloo';
    const other = rowsOf(c, [gloo])[0]!;
    assert.deepEqual(other.links, ['--links needs --backend nccl (the runs used gloo); links not measured']);
    const doc = verdictOf([other]);
    assert.deepEqual(schemaErrors('collbench-accept.v1', doc), []);
    const text = renderVerdictText(doc);
    assert.match(
      text.find((l) => l.includes(' links '))!,
      /NOT MEASURED$/,
    );
    assert.equal(text.at(-1), '# verdict: PASS (0 of 1 checks passed, 1 not measured)');
    assert.match(renderVerdictJunit(doc), /<skipped message="--links needs --backend nccl/);
    assert.equal(linksRow(c, [], { ...other }).status, 'not-measured');
  });

  it('end to end on 2 gloo ranks: the links check is NOT MEASURED in the verdict, the other checks decide', () => {
    const profile = join(dir, 'e2e.yaml');
    writeFileSync(profile, PROFILE.replace('links: true}', 'links: true, maxTimeUs: 1000000}'));
    const json = join(dir, 'e2e.json');
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(repoRoot, 'bench', 'bin', 'collbench.ts'),
        'accept',
        '--profile',
        profile,
        '--np',
        '2',
        '--backend',
        'gloo',
        '-J',
        json,
      ],
      { encoding: 'utf8', timeout: 240_000, cwd: repoRoot },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const d = JSON.parse(readFileSync(json, 'utf8')) as AcceptDocument;
    assert.deepEqual(schemaErrors('collbench-accept.v1', d), []);
    const row = d.checks.find((x) => x.check === 'links')!;
    assert.equal(row.status, 'not-measured');
    assert.match(row.links![0]!, /^--links needs --backend nccl \(the runs used gloo/);
    assert.match(r.stdout, /^# verdict: PASS \(1 of 2 checks passed, 1 not measured\)$/m);
    assert.match(r.stdout, /^# ring links: --links needs --backend nccl/m);
  });
});

/** locate's jobs in memory: every group at 10 GB/s; the whole job's report with --links is `wholeJob` (a run's
 *  report made from the harness's rows), its hosts n01-n08 as the harness names ranks 0-7. */
class LinksMeasurer implements Measurer {
  interrupted = false;
  readonly calls: GroupSpec[][][] = [];
  constructor(
    readonly opts: LocateOptions,
    private readonly wholeJob: ReportLinks | null,
  ) {}
  progress(): void {}
  measure(
    rounds: GroupSpec[][],
    repeats: number,
  ): Promise<{ groups: GroupSamples[]; jobs: LocateJob[]; links: Map<string, ReportLinks> }> {
    this.calls.push(rounds);
    const flat = rounds.flat();
    const level = (i: number, r: number) => 10 * (1 + 0.03 * Math.sin(i * 1.7 + r));
    const links = new Map<string, ReportLinks>();
    for (const g of flat) if (g.links && this.wholeJob) links.set(g.id, this.wholeJob);
    return Promise.resolve({
      groups: flat.map((g) => ({
        id: g.id,
        hosts: g.hosts,
        bySize: new Map([
          [4 << 20, Array.from({ length: repeats }, (_, r) => Array.from({ length: 16 }, (_, i) => level(i, r)))],
        ]),
        failed: null,
      })),
      jobs: flat.map((g) => ({
        id: g.id,
        hosts: g.hosts,
        repeat: 1,
        status: 'ok' as const,
        error: null,
        durationSec: 1,
        budgetSec: null,
        capped: false,
        iterations: null,
      })),
      links,
    });
  }
}

const hosts = Array.from({ length: 8 }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);
const locateOptions = (runArgs: string[]): LocateOptions => sharedLocateOptions(hosts, runArgs);
const NCCL = ['--backend', 'nccl'];

describe("collbench locate from the whole job's --links", () => {
  it('a link named in the first run is reported and the pairwise stage skipped (saying so)', async () => {
    const report = (await linksReport(ring('--slow', '1', '--factor', '10'))).links!;
    const m = new LinksMeasurer(locateOptions(NCCL), report);
    const doc = await runLocate(m, ['--hosts', hosts.join(','), '--', ...NCCL]);
    assert.deepEqual(locateErrors(doc), []);
    assert.equal(m.calls.length, 1);
    assert.deepEqual(m.calls[0], [[{ id: 'whole-job', hosts, links: true }]]);
    assert.equal(doc.verdict, 'suspect');
    assert.equal(doc.exitCode, 7);
    assert.equal(doc.links.length, 1);
    const l = doc.links[0]!;
    assert.deepEqual(l.hosts, ['n02', 'n03']);
    assert.equal(l.confirmedBy, 'links');
    assert.equal(l.confidence, 1);
    assert.ok(l.ratio! > 0.05 && l.ratio! < 0.2, `ratio ${l.ratio}`);
    assert.match(
      l.evidence,
      /^NCCL's own timings in one run of the whole job \(--links\): slow link: rank 1 \(n02\) -> rank 2 \(n03\), channels 0,1,2,3,4,5,6,7: /,
    );
    assert.equal(doc.partial, false);
    assert.deepEqual(
      doc.stages.map((st) => st.name),
      ['whole-job'],
    );
    assert.equal(
      doc.reason,
      "link n02 - n03 named by NCCL's own timings in one run of the whole job (--links); the pairwise stage was skipped",
    );
    assert.ok(
      renderLocateText(doc).some((line) => line.startsWith('# suspect link n02 - n03 (confidence 1.0000): NCCL')),
    );
  });

  for (const [what, report] of [
    ['names none', async () => (await linksReport(ring())).links!],
    ['cannot give links (the plugin not loaded)', async () => (await linksReport(null)).links!],
    ['has no links in its report', () => Promise.resolve(null)],
  ] as const) {
    it(`a first run that ${what}: the stages go on as today, the whole job not run twice`, async () => {
      const m = new LinksMeasurer(locateOptions(NCCL), await report());
      const doc = await runLocate(m, []);
      assert.deepEqual(locateErrors(doc), []);
      assert.equal(doc.verdict, 'healthy');
      assert.deepEqual(m.calls[0], [[{ id: 'whole-job', hosts, links: true }]]);
      assert.ok(m.calls.length > 1 && m.calls.slice(1).some((c) => c.flat().some((g) => g.id.includes('+'))));
      assert.equal(m.calls.flat(2).filter((g) => g.id === 'whole-job').length, 1);
      assert.deepEqual(
        doc.stages.map((st) => st.name),
        ['whole-job', 'pairs'],
      );
      assert.deepEqual(doc.links, []);
    });
  }

  it("locate's jobs: --links in the words of a group that asks (once), its report's links handed back", async () => {
    const report = await linksReport(ring('--slow', '1', '--factor', '10'));
    const words: string[][] = [];
    const children = {
      stopped: false,
      stopReason: null,
      run: (_tag: string, w: (path: string) => string[]) => {
        words.push(w('/r.json'));
        const outcome = childOutcome();
        return Promise.resolve({ outcome, report: { doc: report, error: null }, reportPath: '/r.json' });
      },
    } as unknown as ChildRuns;
    const io = { out: () => {}, err: () => {} } as unknown as IO;
    const jobs = new LocateJobs(locateOptions(NCCL), children, io);
    const m = await jobs.measure([[{ id: 'whole-job', hosts, links: true }]], 1);
    assert.equal(words[0]!.filter((w) => w === '--links').length, 1);
    assert.deepEqual(m.links.get('whole-job')!.named, report.links!.named);
    await jobs.measure([[{ id: 'n01+n02', hosts: ['n01', 'n02'] }]], 1);
    assert.ok(!words[1]!.includes('--links'));
    const already = new LocateJobs(locateOptions([...NCCL, '--links']), children, io);
    await already.measure([[{ id: 'whole-job', hosts, links: true }]], 1);
    assert.equal(words[2]!.filter((w) => w === '--links').length, 1);
  });

  it('another backend: no --links run first (locate as today)', async () => {
    const m = new LinksMeasurer(locateOptions(['--backend', 'mpi']), null);
    await runLocate(m, []);
    assert.ok(m.calls[0]!.flat().every((g) => g.id !== 'whole-job' && !g.links));
  });
});

describe("compare: what NCCL chose under each setting, from the plugin's collective events", () => {
  const SIZES = [8 << 20, 16 << 20, 32 << 20]; // the harness's row-halves: 8, 16, 32 MiB
  const run = (n: number, doc: ReportDocument): RunResult => ({
    run: n,
    outcome: childOutcome(),
    doc,
    docError: null,
    reportPath: `/r/${n}.json`,
  });

  it('per size and setting: algorithm/protocol and channels; ? for a setting whose runs had no plugin rows', async () => {
    const combos = combinations([parseAxis('env', 'NCCL_MIN_NCHANNELS=2,8')]); // C0 default, C1 2, C2 8
    const results = new Map<string, RunResult[]>([
      ['C0', [run(1, await linksReport(ring('--channels', '8'), 6, SIZES))]],
      ['C1', [run(1, await linksReport(ring('--channels', '2'), 6, SIZES))]],
      ['C2', [run(1, await linksReport(null, 6, SIZES))]],
    ]);
    const a = analyze(combos, results, { placement: 'out-of-place', timeoutSec: 60, collective: 'all_reduce' });
    const sizes = a.cases[0]!.sizes;
    assert.deepEqual(
      sizes.map((s) => s.sizeBytes),
      SIZES,
    );
    for (const s of sizes) {
      // 8 ranks × 8 iterations × 2 row-halves of each size, every rank's calls counted
      assert.deepEqual(s.results[0]!.ncclChose, [{ label: 'RING/SIMPLE 8ch', calls: 128 }]);
      assert.deepEqual(s.results[1]!.ncclChose, [{ label: 'RING/SIMPLE 2ch', calls: 128 }]);
      assert.equal(s.results[2]!.ncclChose, undefined);
      assert.deepEqual(s.ncclChoice, s.results[0]!.ncclChose, 'the default column from the plugin, no log run');
    }
    const doc: CompareDocument = {
      kind: COMPARE_KIND,
      schemaVersion: COMPARE_SCHEMA_VERSION,
      status: 'complete',
      startTime: 't0',
      endTime: 't1',
      argv: ['collbench', 'compare'],
      program: { words: ['all_reduce_perf', '--links'], collective: 'all_reduce', name: 'all_reduce_perf' },
      axes: [],
      runsPerCombination: 1,
      placement: 'out-of-place',
      timeoutSec: 60,
      ...analysisFields(a),
      probe: null,
      exitCode: a.exitCode,
    };
    const text = renderText(doc);
    const at = text.findIndex((l) => l.startsWith("# NCCL chose, per setting: from NCCL's own collective events"));
    assert.ok(at > 0, text.join('\n'));
    assert.match(text[at + 1]!, /^# size \(B\) +C0 +C1 +C2$/);
    assert.match(text[at + 2]!, /^ +8388608 +RING\/SIMPLE 8ch +RING\/SIMPLE 2ch +\?$/);
    assert.ok(
      text.some((l) => / RING\/SIMPLE 8ch$/.test(l)),
      'the verdict table\'s "NCCL chose (C0)" column',
    );
    const md = renderCompareMarkdown(doc);
    assert.match(md, /^\| 33554432 \| RING\/SIMPLE 8ch \| RING\/SIMPLE 2ch \| \? \|$/m);
  });

  it("the NCCL_DEBUG=TUNING run is needed only when no run carried the plugin's rows", async () => {
    const combos = combinations([parseAxis('env', 'NCCL_MIN_NCHANNELS=2')]);
    const runs = () =>
      new CompareRuns(
        { combos, program: {} as never, runs: 1, timeoutSec: 60, quiet: true },
        {} as ChildRuns,
        false,
        {} as IO,
      );
    const without = runs();
    without.results.get('C0')!.push(run(1, await linksReport(null, 6, SIZES)));
    assert.equal(without.pluginGaveChoices(), false);
    const withRows = runs();
    withRows.results.get('C1')!.push(run(1, await linksReport(ring('--halves', '2', '--iters', '1'), 2, SIZES)));
    assert.equal(withRows.pluginGaveChoices(), true);
  });

  it("no plugin rows in any run: no per-setting block, the default column stays the log's (fallback)", async () => {
    const combos = combinations([parseAxis('env', 'NCCL_MIN_NCHANNELS=2')]);
    const results = new Map<string, RunResult[]>([
      ['C0', [run(1, await linksReport(null, 6, SIZES))]],
      ['C1', [run(1, await linksReport(null, 6, SIZES))]],
    ]);
    const a = analyze(combos, results, {
      placement: 'out-of-place',
      timeoutSec: 60,
      collective: 'all_reduce',
      probeEvents: [],
    });
    for (const s of a.cases[0]!.sizes) {
      assert.ok(s.results.every((r) => r.ncclChose === undefined));
      assert.deepEqual(s.ncclChoice, []);
    }
  });
});

describe("the GPU check's --links cost summary (scripts/gpu-check/links-cost.sh) on real tables", () => {
  const script = join(repoRoot, 'scripts', 'gpu-check', 'links-cost.sh');
  /** One real table: all_reduce on 1 gloo rank, 8 B to 256 KiB (double for the heavier "with" run). */
  const table = (dtype: string) => {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(repoRoot, 'bench', 'bin', 'collbench.ts'),
        'all_reduce',
        '--backend',
        'gloo',
        '-b',
        '8',
        '-e',
        '256K',
        '-f',
        '8',
        '-n',
        '20',
        '-w',
        '2',
        '-d',
        dtype,
      ],
      { encoding: 'utf8', timeout: 60_000, cwd: repoRoot },
    );
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  const times = (t: string) =>
    new Map(
      t
        .split('\n')
        .filter((l) => /^ *\d+ +\d+ /.test(l))
        .map((l) => l.trim().split(/\s+/))
        .map((c) => [Number(c[0]), Number(c[5])]),
    );
  const med = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };

  it('per size the median cost over interleaved rounds, and the decision by the rule (2 % small, 1 % largest)', () => {
    const costDir = mkdtempSync(join(dir, 'cost-'));
    const rounds: { without: Map<number, number>; with: Map<number, number> }[] = [];
    for (const round of [1, 2, 3]) {
      const without = table('float');
      const withLinks = table('double'); // a real, heavier run stands in for "with": its cost is what it is
      writeFileSync(join(costDir, `${round}-without.out`), without);
      writeFileSync(join(costDir, `${round}-with.out`), withLinks);
      rounds.push({ without: times(without), with: times(withLinks) });
    }
    const r = spawnSync('bash', [script, costDir], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    const sizes = [...rounds[0]!.without.keys()];
    assert.deepEqual(sizes, [8, 64, 512, 4096, 32768, 262144]);
    const cost = (size: number) => med(rounds.map((x) => (x.with.get(size)! / x.without.get(size)! - 1) * 100));
    sizes.forEach((size, i) => {
      const m = /^ +(\d+) B: without ([\d.]+) us, with ([\d.]+) us \(median of 3 rounds\): cost ([-+][\d.]+) %$/.exec(
        lines[i]!,
      );
      assert.ok(m, lines[i]);
      assert.equal(Number(m[1]), size);
      assert.ok(Math.abs(Number(m[4]) - cost(size)) < 0.051, `${lines[i]} vs ${cost(size)}`);
    });
    const small = med(sizes.filter((s) => s <= 65536).map(cost));
    const last = cost(262144);
    const on = small < 2 && last < 1 ? 'yes' : 'no';
    assert.match(
      lines.at(-1)!,
      new RegExp(
        `^decision: --links on by default with -I 1: ${on} \\(median cost <= 65536 B: [-+][\\d.]+ %, limit 2 %; ` +
          'at 262144 B: [-+][\\d.]+ %, limit 1 %; 3 rounds\\)$',
      ),
    );
    // Equal tables cost nothing: the same run as both is a yes.
    const same = mkdtempSync(join(dir, 'same-'));
    const t = table('float');
    writeFileSync(join(same, '1-without.out'), t);
    writeFileSync(join(same, '1-with.out'), t);
    const s2 = spawnSync('bash', [script, same], { encoding: 'utf8' });
    assert.match(s2.stdout, /^decision: --links on by default with -I 1: yes \(median cost <= 65536 B: \+0\.0 %/m);
  });

  it('a folder without a pair of tables: one line, exit 2', () => {
    const empty = mkdtempSync(join(dir, 'empty-'));
    writeFileSync(join(empty, '1-with.out'), '# no table\n');
    const r = spawnSync('bash', [script, empty], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.equal(r.stderr, `links-cost.sh: no round with both tables in ${empty}\n`);
  });
});
