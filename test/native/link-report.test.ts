// --links' rank × peer heatmap and split communicators, from rows the plugin really produced (the C++ harness driving
// it as NCCL does): the matrix in the verdict, the table's `#` block (or a pointer when the world is large), the JSON
// report (schema-checked), and collbench report's Markdown and HTML; rows of two communicators judged apart.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  algoLines,
  algoPerSize,
  judgeLinks,
  matrixLines,
  slowLinkLines,
  MATRIX_TABLE_MAX_RANKS,
} from '../../bench/backends/nccl-links.js';
import { reportCommand } from '../../bench/commands/report.js';
import { renderRunHtml } from '../../bench/report/exporters/html.js';
import { renderMarkdown } from '../../bench/report/exporters/md.js';
import { reportErrors } from '../../bench/report/schema.js';
import { gathered, linksReport, ring } from '../helpers/link-harness.js';

describe('the rank × peer matrix of send links', () => {
  const slow = judgeLinks(gathered(ring('--slow', '3:2', '--factor', '4.6')));

  it("a ring's matrix: one cell per rank -> successor, the named link's slowest channel 4-6 times below the others", () => {
    const m = slow.matrix;
    assert.equal(m.ranks, 8);
    for (let s = 0; s < 8; s++) {
      for (let r = 0; r < 8; r++) assert.equal(m.gbps[s]![r] !== null, r === (s + 1) % 8, `cell ${s} -> ${r}`);
    }
    assert.deepEqual(m.named, [[3, 4]]);
    const others = m.slowestChannelGbps.flatMap((row, s) => row.filter((v, r) => v !== null && !(s === 3 && r === 4)));
    const ratio = Math.min(...(others as number[])) / m.slowestChannelGbps[3]![4]!;
    assert.ok(ratio > 3 && ratio < 6, `slowest other channel / named channel ${ratio}`);
    // The pair's rate (all 8 channels, one slow) is the lowest cell too, less far below.
    const pairs = m.gbps.flatMap((row) => row.filter((v): v is number => v !== null));
    assert.equal(Math.min(...pairs), m.gbps[3]![4]);
  });

  it('the table gets it as a # block up to 16 ranks: the named cell starred, no link as .', () => {
    const lines = matrixLines(slow.matrix);
    assert.equal(lines.length, 2 + 8);
    assert.match(lines[0]!, /^# link matrix \(GB\/s in SendWait, sender rank down, receiver across/);
    const row3 = lines[2 + 3]!.split(/\s+/).slice(2);
    assert.equal(row3.length, 8);
    assert.match(row3[4]!, /^[\d.]+\*$/);
    assert.deepEqual(
      row3.filter((_, r) => r !== 4),
      ['.', '.', '.', '.', '.', '.', '.'],
    );
    assert.equal(lines.filter((l) => l.includes('*') && !l.includes('named slow')).length, 1);
    const healthy = matrixLines(judgeLinks(gathered(ring())).matrix);
    assert.equal(healthy.filter((l) => /\d\*/.test(l)).length, 0);
  });

  it(`a world above ${MATRIX_TABLE_MAX_RANKS} ranks gets one line pointing at the report`, async () => {
    const big = judgeLinks(gathered(ring('--ranks', '20', '--channels', '2', '--halves', '2')));
    assert.equal(big.matrix.ranks, 20);
    assert.deepEqual(matrixLines(big.matrix), [
      '# link matrix: 20 ranks, too many for the table: links.matrix in the JSON report (-J), drawn by collbench ' +
        'report --html/--md',
    ]);
    // 40 ranks: the report still draws it (the HTML heatmap without figures in its cells, the Markdown table).
    const doc = await linksReport(
      ring('--ranks', '40', '--channels', '1', '--halves', '2', '--slow', '5', '--factor', '5'),
    );
    assert.deepEqual(doc.links!.matrix!.named, [[5, 6]]);
    assert.match(await renderRunHtml(doc), /<figure data-chart="links" data-series="40">/);
    assert.match(renderMarkdown(doc), /^\| 5 \|( {2}\|){6} \*\*[\d.]+\*\* \|( {2}\|){33}$/m);
  });

  it("the run's table lines, the JSON report (schema-valid), its Markdown and HTML carry it", async () => {
    const doc = await linksReport(ring('--slow', '3:2', '--factor', '4.6'));
    assert.deepEqual(reportErrors(doc), []);
    assert.deepEqual(doc.links!.matrix!.named, [[3, 4]]);
    assert.ok(reportErrors({ ...doc, links: { ...doc.links, matrix: { ...doc.links!.matrix, gbps: 3 } } }).length > 0);
    const md = renderMarkdown(doc);
    assert.match(md, /^## Links \(--links\)$/m);
    assert.match(md, /^- `slow link: rank 3 \(n04\) -> rank 4 \(n05\), channel 2: /m);
    const row3 = md.split('\n').find((l) => l.startsWith('| 3 |'))!;
    assert.match(row3, /^\| 3 \|( {2}\|){4} \*\*[\d.]+\*\* \|( {2}\|){3}$/);
    const html = await renderRunHtml(doc);
    assert.match(html, /<figure data-chart="links" data-series="8">/);
    assert.match(html, /<code># slow link: rank 3 \(n04\) -&gt; rank 4 \(n05\), channel 2: /);
  });

  it('collbench report draws the matrix of each run that has one (Markdown and HTML)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-links2-report-'));
    try {
      writeFileSync(join(dir, 'slow.json'), JSON.stringify(await linksReport(ring('--slow', '3:2'))));
      writeFileSync(join(dir, 'healthy.json'), JSON.stringify(await linksReport(ring())));
      const io = { out: () => {}, err: () => {} };
      const code = await reportCommand(
        [join(dir, 'slow.json'), join(dir, 'healthy.json'), '--md', join(dir, 'r.md'), '--html', join(dir, 'r.html')],
        io,
      );
      assert.equal(code, 0);
      const md = readFileSync(join(dir, 'r.md'), 'utf8');
      assert.match(md, /^## Links: slow$/m);
      assert.match(md, /^## Links: healthy$/m);
      assert.match(md, /^- `slow link: none named \(64 links, 6 row-halves; /m);
      const html = readFileSync(join(dir, 'r.html'), 'utf8');
      assert.equal(html.match(/data-chart="links"/g)?.length, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('split communicators: rows of two communicators are not mixed', () => {
  it("the world's ring healthy, a split communicator's link slow: named in its communicator, not in the world's", () => {
    const run = ring('--split', '4', '--split-slow', '1', '--factor', '5');
    const comms = new Set(run.halves[0]!.read.ranks.map((r) => r.commId));
    assert.equal(comms.size, 2);
    const v = judgeLinks(gathered(run));
    assert.equal(v.links.length, 64 + 32);
    assert.deepEqual(
      v.named.map((n) => [n.comm, n.rank, n.peer, n.channels.length, n.others]),
      [['5b11700c0ffee', 1, 2, 8, 24]],
    );
    assert.match(
      slowLinkLines(v)[0]!,
      /^# slow link: rank 1 \(n02\) -> rank 2 \(n03\), channels 0,1,2,3,4,5,6,7: .* median of 24 other links \(communicator 5b11700c0ffee\)$/,
    );
    // The matrix is the world's communicator (8 ranks), nothing named in it.
    assert.equal(v.matrix.comm, 'c011b3e4c0ffee');
    assert.equal(v.matrix.ranks, 8);
    assert.deepEqual(v.matrix.named, []);
    // Mixed (the commId dropped), the split ring's links 0->1, 1->2, 2->3 land on the world's (72 links, not 96),
    // and the world's link 1 -> 2 would carry both rings' bytes.
    const mixed = judgeLinks(gathered(run).map((h) => ({ ranks: h.ranks.map(({ commId: _c, ...r }) => r) })));
    assert.equal(mixed.links.length, 72);
    const bytes = (x: typeof v, comm?: string) =>
      x.links.find((l) => l.rank === 1 && l.peer === 2 && l.channel === 0 && l.comm === comm)!.bytes;
    assert.equal(bytes(mixed), 2 * bytes(v, 'c011b3e4c0ffee'));
    // NCCL's choices per size: each communicator's calls counted apart (8 ranks × 8 iterations × 2 row-halves; 4 ranks).
    const algo = algoPerSize(gathered(run));
    assert.deepEqual(
      algo.filter((a) => a.bytes === 8 << 20).map((a) => [a.comm, a.calls]),
      [
        ['5b11700c0ffee', 64],
        ['c011b3e4c0ffee', 128],
      ],
    );
    assert.equal(
      algoLines(algo)[0],
      '# nccl algo: AllReduce 8388608 B RING/SIMPLE 8 channels (64 calls) (communicator 5b11700c0ffee)',
    );
  });

  it("a slow link of the world's ring is named beside a healthy split communicator, compared with its own links", () => {
    const v = judgeLinks(gathered(ring('--slow', '5:3', '--split', '4')));
    assert.deepEqual(
      v.named.map((n) => [n.comm, n.rank, n.peer, n.channels, n.others]),
      [['c011b3e4c0ffee', 5, 6, [3], 63]],
    );
    assert.deepEqual(v.matrix.named, [[5, 6]]);
  });
});
