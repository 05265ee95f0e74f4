// `collbench report a.json b.json --html FILE` for replays (`collbench replay -J`): the page run reports get (inline
// CSS and SVG, no script), with what a replay holds: each step's median time per replay as grouped bars, the same
// numbers and their ratios to the first replay in a table, and the time per replayed iteration.
import type { TopLevelSpec } from 'vega-lite';
import { sameSteps, type OverlaidReplay } from '../replay-document.js';
import { htmlEscape, STYLE, toSvg } from './html.js';

const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : String(v));
const ratio = (v: number, base: number): string => (base > 0 && Number.isFinite(v) ? `${(v / base).toFixed(2)}x` : '');

/** Grouped bars: one group per step (or the iteration), one bar per replay, log time axis. */
function barSpec(values: { place: string; order: number; replay: string; us: number }[], title: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    background: 'white',
    width: { step: 14 * Math.max(1, new Set(values.map((v) => v.replay)).size) + 10 },
    height: 300,
    data: { values: values.filter((v) => v.us > 0) },
    mark: { type: 'bar' },
    encoding: {
      x: {
        field: 'place',
        type: 'ordinal',
        title: null,
        sort: { field: 'order' },
        axis: { labelAngle: -40, labelLimit: 220 },
      },
      xOffset: { field: 'replay', type: 'nominal' },
      y: { field: 'us', type: 'quantitative', title: 'median time (us, log)', scale: { type: 'log' } },
      color: { field: 'replay', type: 'nominal', title: 'replay', legend: { orient: 'bottom', labelLimit: 400 } },
    },
  } as TopLevelSpec;
}

function table(head: string[], rows: string[][], rightFrom: number): string {
  const cell = (tag: string, c: string, i: number): string =>
    `<${tag}${i >= rightFrom ? ' style="text-align:right"' : ''}>${htmlEscape(c)}</${tag}>`;
  return (
    '<table class="facts">' +
    `<tr>${head.map((h, i) => cell('th', h, i)).join('')}</tr>` +
    rows.map((r) => `<tr>${r.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('') +
    '</table>'
  );
}

/** The page; replays of different steps are refused (ReplayOverlayError), as in Markdown. */
export async function renderReplayOverlayHtml(runs: readonly OverlaidReplay[], title: string): Promise<string> {
  const [first, ...others] = sameSteps(runs);
  const all = [first, ...others];
  const body = [`<h1>${htmlEscape(title)}</h1>`];
  for (const r of all) {
    body.push(`<h2>${htmlEscape(r.label)} <small>(${htmlEscape(r.file)})</small></h2>`);
    const d = r.doc;
    body.push(
      table(
        ['', ''],
        [
          ['trace', `${d.format}: ${d.files.join(', ')}`],
          ['ranks', `${d.nranks} on ${d.hosts.join(', ') || '?'}`],
          ['backend', `${d.backend.name} ${d.backend.version}`],
          [
            'iterations',
            `${d.settings.iters} after ${d.settings.warmupIters} warm-up${d.settings.gaps ? ', --gaps' : ''}`,
          ],
          ['started', d.startTime],
          ['command', d.argv.join(' ')],
          ...d.notes.map((n) => ['note', n]),
        ],
        99,
      ),
    );
  }
  const place = (o: (typeof first.doc.ops)[number]): string => `${o.step} ${o.collective} ${o.bytes} B`;
  const bars = all.flatMap((r) =>
    r.doc.ops.map((o, i) => ({ place: place(first.doc.ops[i]!), order: i, replay: r.label, us: o.time.medianUs })),
  );
  const svg = await toSvg(barSpec(bars, 'Median time of each step, timed alone'));
  const caption =
    'Each step of the trace timed alone (median over the timed iterations, the slowest rank), one bar per replay.';
  body.push(
    '<h2>Per step</h2>',
    `<figure data-chart="replay-steps" data-series="${all.length}">${svg}<figcaption>${caption}</figcaption></figure>`,
  );
  const ratios = others.map((r) => `${r.label} / ${first.label}`);
  body.push(
    table(
      ['step', 'collective', 'size (B)', 'group', ...all.map((r) => `${r.label} median (us)`), ...ratios],
      first.doc.ops.map((o, i) => {
        const t = all.map((r) => r.doc.ops[i]!.time.medianUs);
        const g =
          o.group.ranks && o.group.ranks.length > 1 ? `${o.group.size}x${o.group.ranks.length}` : `${o.group.size}`;
        return [
          String(o.step),
          o.collective,
          String(o.bytes),
          g,
          ...t.map(f1),
          ...t.slice(1).map((v) => ratio(v, t[0]!)),
        ];
      }),
      2,
    ),
  );
  const it = all.map((r) => r.doc.iteration.time.medianUs);
  body.push(
    '<h2>Per replayed iteration</h2>',
    table(
      ['', ...all.map((r) => r.label), ...ratios],
      [
        ['median (us)', ...it.map(f1), ...it.slice(1).map((v) => ratio(v, it[0]!))],
        ['p99 (us)', ...all.map((r) => f1(r.doc.iteration.time.p99Us)), ...others.map(() => '')],
      ],
      1,
    ),
  );
  return (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>${htmlEscape(title)}</title>\n` +
    `<style>${STYLE}</style>\n</head>\n<body>\n${body.join('\n')}\n</body>\n</html>\n`
  );
}
