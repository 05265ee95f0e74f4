// `collbench report` (bench/commands/report.ts, bench/report/exporters/html.ts) on reports of real runs:
// overlaying collbench and nccl-tests-format files into Markdown and a self-contained HTML page, which is
// then opened in headless Chromium (Debian's chromium, driven by playwright-core) to check that the charts
// rendered with the expected number of series, that the page loads nothing from the network, and to save
// a screenshot in the test's temp dir. Also the command's refusals (exit 2, one line).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { runMpirun, runProgram } from '../helpers/cli.js';

const CHROMIUM = process.env.COLLBENCH_CHROMIUM ?? '/usr/bin/chromium';
// The flags this machine needs (no sandbox as root, no GPU, no background network: it is closed).
// playwright adds --headless and gives every launch a fresh temporary --user-data-dir of its own.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('collbench report', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cb-report-cmd-'));
  const f = (n: string) => join(dir, n);
  let browser: Browser | null = null;

  before(() => {
    // A: 2 ranks with per-rank samples; B: 1 rank without -I; C: 3 ranks in nccl-tests' layout with -I.
    const a = runMpirun(2, 'all_reduce_perf', [
      '-b',
      '1K',
      '-e',
      '256K',
      '-f',
      '4',
      '-n',
      '5',
      '-I',
      '1',
      '-J',
      f('a.json'),
    ]);
    assert.equal(a.code, 0, a.stderr);
    const b = runProgram('all_reduce_perf', ['-b', '1K', '-e', '256K', '-f', '4', '-n', '5', '-J', f('b.json')]);
    assert.equal(b.code, 0, b.stderr);
    const c = runMpirun(3, 'all_reduce_perf', [
      '-b',
      '1K',
      '-e',
      '64K',
      '-f',
      '4',
      '-n',
      '5',
      '-I',
      '1',
      '-J',
      f('c.json'),
      '--json-format',
      'nccl-tests',
    ]);
    assert.equal(c.code, 0, c.stderr);
  });

  after(async () => {
    await browser?.close();
  });

  it('overlays three runs into Markdown: one column per run × placement', () => {
    const r = runProgram('collbench', [
      'report',
      f('a.json'),
      f('b.json'),
      f('c.json'),
      '--label',
      'two ranks',
      '--label',
      'one rank',
      '--md',
      f('cmp.md'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `report: wrote ${f('cmp.md')} (Markdown, 3 runs: two ranks, one rank, c)\n`); // says what it wrote
    const md = readFileSync(f('cmp.md'), 'utf8');
    for (const h of ['## two ranks', '## one rank', '## c (', '## Bus bandwidth (GB/s)', '## Time (us)'])
      assert.ok(md.includes(h), h);
    const header = md.split('\n').find((l) => l.startsWith('| size (B)'))!;
    assert.equal(
      header,
      '| size (B) | two ranks out-of-place | two ranks in-place | one rank out-of-place | one rank in-place | c out-of-place | c in-place |',
    );
    const sizes = md
      .split('\n')
      .filter((l) => /^\| \d+ \|/.test(l))
      .map((l) => Number(l.split(' | ')[0]!.slice(2)));
    assert.deepEqual(sizes.slice(0, 5), [1024, 4096, 16384, 65536, 262144]); // busbw table: union of sizes
    assert.match(md, /- rerun: `mpirun -np 2 /);
  });

  it('writes one self-contained HTML page; Chromium renders every chart with the expected series', async () => {
    const r = runProgram('collbench', [
      'report',
      f('a.json'),
      f('b.json'),
      f('c.json'),
      '--html',
      f('cmp.html'),
      '--title',
      'three runs',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const html = readFileSync(f('cmp.html'), 'utf8');
    assert.doesNotMatch(html, /<script|<link|@import|src="http|href="http/i); // nothing to fetch, nothing to run
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: make deps installs Debian's chromium package`);

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    const url = pathToFileURL(f('cmp.html')).href;
    await page.goto(url, { waitUntil: 'load' });
    assert.deepEqual(requests, [url]);
    assert.equal(await page.title(), 'three runs');

    const charts = await page.$$eval('figure[data-chart]', (figs) =>
      figs.map((fig) => {
        const svg = fig.querySelector('svg')!;
        const box = svg.getBoundingClientRect();
        return {
          chart: fig.getAttribute('data-chart'),
          declared: Number(fig.getAttribute('data-series')),
          lines: svg.querySelectorAll('g.mark-line.role-mark path').length,
          legend: Array.from(svg.querySelectorAll('g.role-legend-label text')).map((t) => t.textContent),
          rects: svg.querySelectorAll('g.mark-rect.role-mark path').length,
          title: svg.querySelector('g.role-title-text text')?.textContent ?? '',
          width: box.width,
          height: box.height,
        };
      }),
    );
    assert.deepEqual(
      charts.map((c) => c.chart),
      ['busbw', 'time', 'heatmap', 'heatmap', 'lateness'],
    );
    for (const c of charts) assert.ok(c.width > 200 && c.height > 100, JSON.stringify(c));
    const series = ['a in-place', 'a out-of-place', 'b in-place', 'b out-of-place', 'c in-place', 'c out-of-place'];
    for (const c of charts.slice(0, 2)) {
      assert.equal(c.lines, 6, `${c.chart}: one line per run × placement`);
      assert.equal(c.declared, 6);
      assert.deepEqual([...c.legend].sort(), series);
    }
    // heatmaps: ranks × sizes cells (a: 2 ranks × 5 sizes; c: 3 processes × 4 sizes)
    assert.equal(charts[2]!.rects, 2 * 5);
    assert.equal(charts[3]!.rects, 3 * 4);
    assert.match(charts[2]!.title, /^a: time per rank relative to the median rank$/);
    // lateness (collbench v2 reports only: a, 2 ranks × 5 sizes): who the others waited for
    assert.equal(charts[4]!.rects, 2 * 5);
    assert.match(charts[4]!.title, /^a: who the others waited for$/);

    const shot = join(dir, 'report.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 20_000, 'screenshot written');
  });

  it('--html - writes the page to stdout', () => {
    const r = runProgram('collbench', ['report', f('b.json'), '--html', '-']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^<!DOCTYPE html>/);
    assert.match(r.stdout, /data-chart="busbw" data-series="2"/);
    assert.doesNotMatch(r.stdout, /data-chart="heatmap"/); // one rank, no -I: no per-rank data
  });

  it('refuses bad input with one line and exit 2', () => {
    const doc = JSON.parse(readFileSync(f('b.json'), 'utf8'));
    doc.rows[0].outOfPlace.timeUs = 'fast';
    writeFileSync(f('bad-schema.json'), JSON.stringify(doc));
    writeFileSync(f('not-json.json'), '{');
    writeFileSync(f('other.json'), '{"hello": 1}');
    const cases: [string[], RegExp][] = [
      [[f('a.json')], /^collbench: report: nothing to write; give --html FILE and\/or --md FILE$/],
      [['--html', f('x.html')], /^collbench: report: no input file/],
      [[f('missing.json'), '--md', f('x.md')], /^collbench: report: cannot read .*missing.json: ENOENT$/],
      [[f('not-json.json'), '--md', f('x.md')], /^collbench: report: .*not-json.json is not JSON/],
      [[f('other.json'), '--md', f('x.md')], /is neither a collbench report .* nor nccl-tests JSON/],
      [
        [f('bad-schema.json'), '--md', f('x.md')],
        /does not match the collbench report schema: \/rows\/0\/outOfPlace\/timeUs: must be number,null/,
      ],
      [
        [f('a.json'), '--label', 'x', '--label', 'y', '--md', f('x.md')],
        /^collbench: report: --label: 2 labels for 1 files$/,
      ],
      [[f('a.json'), '--html', '/nonexistent-dir/x.html'], /^collbench: --html: cannot write/],
      [[f('a.json'), '--bogus', '--md', f('x.md')], /^collbench: report: unknown option '--bogus'/],
    ];
    for (const [args, msg] of cases) {
      const r = runProgram('collbench', ['report', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr.trim(), msg);
      assert.ok(!existsSync(f('x.md')) && !existsSync(f('x.html')));
    }
    const help = runProgram('collbench', ['report', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^USAGE: collbench report FILE.json/);
  });
});
