// The outputs of `collbench compare`, all rendered from the one CompareDocument: the terminal table (nccl-tests
// style), JSON, CSV, Markdown, JUnit, and the report exporter's HTML page with one busbw line per combination.
import { stringify } from 'csv-stringify/sync';
import { formatSize } from '../config/sizes.js';
import { SIGNIFICANCE_LEVEL, smallestRankP } from '../numbers/stats.js';
import { adaptiveFloat } from '../report/format.js';
import { mdEscape, mdTable } from '../report/exporters/md.js';
import { xmlEscape } from '../report/exporters/junit.js';
import type { ChartRun } from '../report/exporters/html.js';
import { choiceCell } from './tuning-log.js';
import type {
  CombinationAtSize,
  CompareCase,
  CompareCombination,
  CompareDocument,
  SizeVerdict,
  Spread,
} from './document.js';

/** A cell's number: nccl-tests' 2 decimals, but 3 significant digits below 0.1 (Gloo's busbw at small sizes printed
 *  0.00 [0.00-0.00] beside a gain of +12%). */
const num = (x: number): string =>
  x !== 0 && Math.abs(x) < 0.1 ? String(Number(x.toPrecision(3))) : adaptiveFloat(x, 6).trim();

export function spreadCell(s: Spread | null, n: number): string {
  if (s === null) return '';
  return n > 1 ? `${num(s.median)} [${num(s.min)}-${num(s.max)}]` : num(s.median);
}

const pct = (x: number | null): string => (x === null ? '' : `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`);

const onTime = (doc: CompareDocument): boolean => doc.judgedOn.metric === 'time';

/** The judged value of one combination at one size: busbw, or time where busbw's factor is 0. */
function resultCell(doc: CompareDocument, r: CombinationAtSize, c: CompareCombination): string {
  const v = onTime(doc) ? r.timeUs : r.busBwGBps;
  if (v === null) return c.status === 'ok' || c.status === 'pending' ? '-' : c.status;
  return spreadCell(v, r.n) + (r.wrong !== null && r.wrong > 0 ? ' !' : '');
}

/** What the cells are and how the best is chosen (header lines of every rendering). */
function metricLines(doc: CompareDocument): string[] {
  if (!onTime(doc)) {
    return [
      `busbw: ${doc.placement} bus bandwidth (GB/s), median over runs [min-max]; ! = wrong results at that size`,
      'best: highest median among combinations whose every run completed with #wrong 0; gain: best over C0 (default)',
    ];
  }
  const cells = doc.program.collective === 'replay' ? "each replay's median (us)" : `${doc.placement} time (us)`;
  return [
    `judged on time: ${doc.judgedOn.why}; cells: ${cells}, median over runs [min-max], ` +
      'lower is better; ! = wrong results at that size',
    "best: lowest median time among combinations whose every run completed with #wrong 0; gain: best's speed over C0 " +
      "(C0's time over the best's, = the algbw ratio)",
  ];
}

const marginCell = (s: SizeVerdict): string => (s.clear === null ? '' : s.clear ? 'clear' : 'overlap');

/** The gain with its interval: `+12.0% [+3.1%, +20.2%]`. */
const gainCell = (s: SizeVerdict): string =>
  pct(s.gainPct) + (s.gainInterval ? ` [${pct(s.gainInterval.lo)}, ${pct(s.gainInterval.hi)}]` : '');
const significanceCell = (s: SizeVerdict): string => s.significance ?? '';

/**
 * Where a size says 'too few runs', what would do: the repeats at which runs that do not overlap pass the rank test,
 * Holm-corrected over the most sizes a case tested (two-sided, n against n: smallest p 2/C(2n, n), 0.1 for 3).
 */
function tooFewRunsNote(doc: CompareDocument): string {
  const short = doc.cases.filter((cs) => cs.sizes.some((s) => s.significance === 'too few runs'));
  if (!short.length) return '';
  const tested = Math.max(...short.map((cs) => cs.sizes.filter((s) => s.significance !== null).length));
  let repeats = 2;
  while (smallestRankP(repeats, repeats) > SIGNIFICANCE_LEVEL / tested) repeats++;
  const n = doc.runsPerCombination;
  return (
    `; too few runs: ${n} run${n === 1 ? '' : 's'} against ${n} cannot pass it over ${tested} size${tested === 1 ? '' : 's'} ` +
    `tested (smallest p ${smallestRankP(n, n).toPrecision(2)}): use --repeats ${repeats} or more`
  );
}

export function caseTitle(cs: CompareCase): string {
  return cs.title ?? `${cs.type} ${cs.redop || 'none'} root ${cs.root}`;
}

/** The first column: a size, or a replay's step (its index, collective and size; the whole iteration). */
export const placeCell = (s: SizeVerdict): string =>
  !s.step
    ? String(s.sizeBytes)
    : s.step.index < 0
      ? `iteration (${s.sizeBytes} B)`
      : `${s.step.index} ${s.step.collective} ${s.sizeBytes} B`;
const isStepCase = (cs: CompareCase): boolean => cs.sizes.some((s) => s.step);
/** Its heading: size (B), or step for a replay's case. */
const placeHead = (cs: CompareCase): string => (isStepCase(cs) ? 'step' : 'size (B)');

function runsCell(c: CompareCombination): string {
  const done = c.runs.filter((r) => r.status === 'ok' || r.status === 'wrong').length;
  return `${done}/${c.runs.length}`;
}

const wrongTotal = (c: CompareCombination): string => (c.wrong === null ? 'N/A' : String(c.wrong));

/** Errors can be long (a library's search path): the table shows their start, the JSON all of it. */
export const shorten = (s: string, max = 140): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/** Rows of text columns, padded; `left` = indexes of left-aligned columns (the others align right). */
function aligned(rows: string[][], left: readonly number[], prefix: string[]): string[] {
  const widths: number[] = [];
  for (const r of rows)
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  return rows.map(
    (r, ri) =>
      (prefix[ri] ?? '') +
      r
        .map((c, i) => (left.includes(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
  );
}

function hasNccl(doc: CompareDocument): boolean {
  return (doc.probe !== null && doc.probe.ran) || pluginChose(doc);
}

/** Some setting's runs carried NCCL's collective events (collbench's profiler plugin, --links). */
function pluginChose(doc: CompareDocument): boolean {
  return doc.cases.some((cs) => cs.sizes.some((s) => s.results.some((r) => r.ncclChose !== undefined)));
}

const PLUGIN_LINE =
  "NCCL chose, per setting: from NCCL's own collective events (collbench's profiler plugin, --links) in each " +
  "setting's runs; algorithm/protocol and channels, '?' where a setting's runs had none";

/** Per size, what NCCL ran under each setting (the plugin's events): header and rows, one column per combination. */
function pluginChoiceRows(doc: CompareDocument, cs: CompareDocument['cases'][number]): string[][] {
  return [
    ['size (B)', ...doc.combinations.map((c) => c.id)],
    ...cs.sizes.map((s) => [
      String(s.sizeBytes),
      ...s.results.map((r) => (r.ncclChose ? choiceCell(r.ncclChose) || '?' : '?')),
    ]),
  ];
}

function correctnessClean(doc: CompareDocument): boolean {
  return doc.cases.every((cs) => cs.sizes.every((s) => s.results.every((r) => r.n === 0 || r.wrong === 0)));
}

/** The extra NCCL_DEBUG run: how it went (its numbers are not in the tables, its #wrong would be here). */
function probeLine(doc: CompareDocument): string {
  const p = doc.probe!;
  return (
    `NCCL choice: one extra default run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING (timings unused): ${p.status}` +
    `${p.error ? ` (${shorten(p.error)})` : ''}, ${p.events} per-call lines`
  );
}

/** The terminal table. */
export function renderText(doc: CompareDocument): string[] {
  const out: string[] = [];
  const nCombos = doc.combinations.length;
  out.push(`# collbench compare: ${doc.program.words.join(' ')}`);
  out.push(
    `# ${doc.backend ?? 'backend unknown'}, ${doc.nranks ?? '?'} ranks on ${doc.nodes ?? '?'} node(s); ` +
      `${nCombos} combinations x ${doc.runsPerCombination} run(s), interleaved${doc.status !== 'complete' ? ` [${doc.status}]` : ''}`,
  );
  out.push(...metricLines(doc).map((l) => `# ${l}`));
  out.push(
    `# margin: clear = best's ${onTime(doc) ? "max below the runner-up's min" : "min above the runner-up's max"}, overlap = within the spread of runs;`,
  );
  out.push(
    '# [lo, hi]: 95% bootstrap interval of the gain over the runs; vs C0: Mann-Whitney test of the runs, Holm-corrected',
  );
  out.push(`# over the sizes at ${SIGNIFICANCE_LEVEL}${tooFewRunsNote(doc)}`);
  out.push('#');
  const combRows = [
    ['id', 'combination', 'status', '#wrong', 'runs', 'error'],
    ...doc.combinations.map((c) => [c.id, c.label, c.status, wrongTotal(c), runsCell(c), shorten(c.error ?? '')]),
  ];
  out.push(
    ...aligned(
      combRows,
      [0, 1, 2, 5],
      combRows.map(() => '#  '),
    ),
  );
  for (const cs of doc.cases) {
    out.push('#', `# ${caseTitle(cs)}`);
    const head = [
      placeHead(cs),
      ...doc.combinations.map((c) => c.id),
      'best',
      'gain',
      'vs C0',
      'margin',
      ...(hasNccl(doc) ? ['NCCL chose (C0)'] : []),
    ];
    const rows = cs.sizes.map((s) => [
      placeCell(s),
      ...s.results.map((r, i) => resultCell(doc, r, doc.combinations[i]!)),
      s.best ?? 'none',
      gainCell(s),
      significanceCell(s),
      marginCell(s),
      ...(hasNccl(doc) ? [choiceCell(s.ncclChoice ?? []) || '?'] : []),
    ]);
    const lines = aligned([head, ...rows], [], ['# ', ...rows.map(() => '  ')]);
    out.push(...lines);
    // A replay's steps are no sweep: the best per step is the verdict, there is nothing to cross over.
    if (!isStepCase(cs))
      out.push(
        cs.crossovers.length
          ? `# crossovers: ${cs.crossovers.map((x) => `${formatSize(x.sizeBytes)} ${x.from} -> ${x.to}`).join(', ')}`
          : `# no crossover${cs.sizes.some((s) => s.best) ? `: ${cs.sizes.find((s) => s.best)!.best} wins at every size with a winner` : ''}`,
      );
  }
  out.push('#');
  if (correctnessClean(doc)) {
    out.push('# correctness: #wrong 0 for every combination at every size (both placements, every run)');
  } else {
    out.push('# correctness: #wrong per size (both placements, all runs); N/A = not checked (-c 0)');
    for (const cs of doc.cases) {
      const head = [placeHead(cs), ...doc.combinations.map((c) => c.id)];
      const rows = cs.sizes.map((s) => [
        placeCell(s),
        ...s.results.map((r) => (r.n === 0 ? '-' : r.wrong === null ? 'N/A' : String(r.wrong))),
      ]);
      if (doc.cases.length > 1) out.push(`# ${caseTitle(cs)}`);
      out.push(...aligned([head, ...rows], [], ['# ', ...rows.map(() => '  ')]));
    }
  }
  if (pluginChose(doc)) {
    out.push(`# ${PLUGIN_LINE}`);
    for (const cs of doc.cases) {
      if (doc.cases.length > 1) out.push(`# ${caseTitle(cs)}`);
      const [head, ...rows] = pluginChoiceRows(doc, cs);
      out.push(...aligned([head!, ...rows], [], ['# ', ...rows.map(() => '  ')]));
    }
  }
  if (doc.probe?.ran) out.push(`# ${probeLine(doc)}`);
  out.push(`# winners: ${doc.winners.length ? `${doc.winners.join(', ')} (${doc.winners.length} distinct)` : 'none'}`);
  return out;
}

// ---------------------------------------------------------------------------------------------------

export function renderCompareJson(doc: CompareDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export const COMPARE_CSV_COLUMNS = [
  'type',
  'redop',
  'root',
  'size_bytes',
  'count',
  'combination',
  'label',
  'status',
  'samples',
  'busbw_median_gbps',
  'busbw_min_gbps',
  'busbw_max_gbps',
  'time_median_us',
  'wrong',
  'vs_default_pct',
  'is_best',
  'best',
  'gain_pct',
  'margin',
  'nccl_choice_default',
  'gain_lo_pct',
  'gain_hi_pct',
  'gain_p',
  'significance',
  'judged_on',
  'step',
] as const;

/** One CSV line per sweep × size × combination. */
export function renderCompareCsv(doc: CompareDocument): string {
  const records: (string | number | null)[][] = [];
  for (const cs of doc.cases) {
    for (const s of cs.sizes) {
      s.results.forEach((r, i) => {
        const c = doc.combinations[i]!;
        records.push([
          cs.type,
          cs.redop,
          cs.root,
          s.sizeBytes,
          s.count,
          c.id,
          c.label,
          c.status,
          r.n,
          r.busBwGBps?.median ?? null,
          r.busBwGBps?.min ?? null,
          r.busBwGBps?.max ?? null,
          r.timeUs?.median ?? null,
          r.wrong,
          r.vsDefaultPct,
          s.best === c.id ? 1 : 0,
          s.best,
          s.gainPct,
          marginCell(s),
          s.ncclChoice ? choiceCell(s.ncclChoice) : null,
          s.gainInterval?.lo ?? null,
          s.gainInterval?.hi ?? null,
          s.gainP,
          s.significance,
          doc.judgedOn.metric,
          s.step ? (s.step.index < 0 ? 'iteration' : s.step.index) : null,
        ]);
      });
    }
  }
  return stringify(records, { header: true, columns: [...COMPARE_CSV_COLUMNS], cast: { number: (n) => String(n) } });
}

export function renderCompareMarkdown(doc: CompareDocument): string {
  const lines = [`# collbench compare: ${mdEscape(doc.program.words.join(' '))}`, ''];
  lines.push(
    `- ${mdEscape(doc.backend ?? 'backend unknown')}, ${doc.nranks ?? '?'} ranks on ${doc.nodes ?? '?'} node(s)`,
  );
  lines.push(
    `- ${doc.combinations.length} combinations × ${doc.runsPerCombination} run(s), interleaved; status: ${doc.status}`,
  );
  lines.push(...metricLines(doc).map((l) => `- ${mdEscape(l)}`));
  lines.push(`- started ${doc.startTime}${doc.endTime ? `, ended ${doc.endTime}` : ''}`, '');
  lines.push('```sh', doc.argv.join(' '), '```', '', '## Combinations', '');
  lines.push(
    ...mdTable(
      ['id', 'combination', 'status', '#wrong', 'runs', 'error'],
      doc.combinations.map((c) => [
        c.id,
        mdEscape(c.label),
        c.status,
        wrongTotal(c),
        runsCell(c),
        mdEscape(c.error ?? ''),
      ]),
      6,
    ),
    '',
  );
  for (const cs of doc.cases) {
    lines.push(`## ${onTime(doc) ? 'Time' : 'Bus bandwidth'}: ${mdEscape(caseTitle(cs))}`, '');
    const head = [
      placeHead(cs),
      ...doc.combinations.map((c) => c.id),
      'best',
      'gain',
      'vs C0',
      'margin',
      ...(hasNccl(doc) ? ['NCCL chose (C0)'] : []),
    ];
    lines.push(
      ...mdTable(
        head,
        cs.sizes.map((s) => [
          placeCell(s),
          ...s.results.map((r, i) => mdEscape(resultCell(doc, r, doc.combinations[i]!))),
          s.best ?? 'none',
          gainCell(s),
          significanceCell(s),
          marginCell(s),
          ...(hasNccl(doc) ? [mdEscape(choiceCell(s.ncclChoice ?? []))] : []),
        ]),
        1,
      ),
      '',
    );
    if (!isStepCase(cs))
      lines.push(
        cs.crossovers.length
          ? `Crossovers: ${cs.crossovers.map((x) => `${formatSize(x.sizeBytes)}: ${x.from} → ${x.to}`).join(', ')}`
          : 'No crossover.',
        '',
      );
    lines.push(`### #wrong: ${mdEscape(caseTitle(cs))}`, '');
    lines.push(
      ...mdTable(
        [placeHead(cs), ...doc.combinations.map((c) => c.id)],
        cs.sizes.map((s) => [
          placeCell(s),
          ...s.results.map((r) => (r.n === 0 ? '-' : r.wrong === null ? 'N/A' : String(r.wrong))),
        ]),
        1,
      ),
      '',
    );
  }
  if (pluginChose(doc)) {
    for (const cs of doc.cases) {
      lines.push(`## NCCL chose, per setting: ${mdEscape(caseTitle(cs))}`, '', mdEscape(PLUGIN_LINE), '');
      const [head, ...rows] = pluginChoiceRows(doc, cs);
      lines.push(
        ...mdTable(
          head!.map(mdEscape),
          rows.map((r) => r.map(mdEscape)),
          1,
        ),
        '',
      );
    }
  }
  if (doc.probe?.ran) lines.push(mdEscape(probeLine(doc)), '');
  lines.push(`Winners: ${doc.winners.join(', ') || 'none'}`);
  return `${lines.join('\n')}\n`;
}

/** JUnit: one test case per combination, failed when it failed, was rejected, timed out or corrupted data. */
export function renderCompareJunit(doc: CompareDocument): string {
  const a = (k: string, v: string | number): string => ` ${k}="${xmlEscape(String(v))}"`;
  const failed = doc.combinations.filter((c) => c.status !== 'ok' && c.status !== 'pending');
  const time = doc.combinations.reduce((t, c) => t + c.runs.reduce((u, r) => u + (r.durationSec ?? 0), 0), 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${a('name', `collbench compare ${doc.program.name}`)}${a('tests', doc.combinations.length)}${a('failures', failed.length)}` +
      `${a('errors', 0)}${a('time', time.toFixed(3))}>`,
    `  <testsuite${a('name', `compare ${doc.program.words.join(' ')}`)}${a('tests', doc.combinations.length)}${a('failures', failed.length)}` +
      `${a('errors', 0)}${a('time', time.toFixed(3))}${a('timestamp', doc.startTime)}>`,
  ];
  for (const c of doc.combinations) {
    const t = c.runs.reduce((u, r) => u + (r.durationSec ?? 0), 0);
    out.push(
      `    <testcase${a('name', `${c.id} ${c.label}`)}${a('classname', `collbench.compare.${doc.program.collective}`)}${a('time', t.toFixed(3))}>`,
    );
    if (c.status !== 'ok' && c.status !== 'pending') {
      const msg = c.error ?? c.status;
      out.push(
        `      <failure${a('message', msg)}${a('type', c.status === 'wrong' ? 'wrong-results' : c.status)}>${xmlEscape(msg)}</failure>`,
      );
    }
    out.push(
      `      <system-out>${xmlEscape(`runs ${runsCell(c)}, #wrong ${wrongTotal(c)}`)}</system-out>`,
      '    </testcase>',
    );
  }
  out.push('  </testsuite>', '</testsuites>');
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------
// HTML: the report exporter's page (charts of every combination overlaid) with the verdict in front.

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

type HtmlCell = string | { text: string; strong: boolean };

function htmlTable(head: string[], rows: HtmlCell[][], attrs = ''): string {
  const td = (c: HtmlCell): string =>
    typeof c === 'string'
      ? `<td>${esc(c)}</td>`
      : c.strong
        ? `<td class="best"><strong>${esc(c.text)}</strong></td>`
        : `<td>${esc(c.text)}</td>`;
  return (
    `<table class="facts"${attrs}><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>\n` +
    rows.map((r) => `<tr>${r.map(td).join('')}</tr>`).join('\n') +
    '</table>'
  );
}

/** One chart run per combination: its median busbw and time per size (series = id and label). */
export function chartRuns(doc: CompareDocument): ChartRun[] {
  return doc.combinations.map((c, i) => ({
    label: `${c.id} ${c.label}`,
    source: '',
    facts: [
      ['status', c.status],
      ['runs', runsCell(c)],
      ['#wrong', wrongTotal(c)],
      ...(c.error ? [['error', c.error] as [string, string]] : []),
    ],
    heat: [],
    heatCase: null,
    points: doc.cases
      .flatMap((cs) =>
        // A replay's steps are not a sweep of sizes: its verdict tables, no busbw line.
        cs.sizes
          .filter((s) => !s.step)
          .map((s) => ({
            series: `${c.id} ${c.label}${doc.cases.length > 1 ? ` [${caseTitle(cs)}]` : ''}`,
            placement: doc.placement,
            sizeBytes: s.sizeBytes,
            busBwGBps: s.results[i]!.busBwGBps?.median ?? null,
            timeUs: s.results[i]!.timeUs?.median ?? null,
          })),
      )
      .filter((p) => p.busBwGBps !== null),
  }));
}

export async function renderCompareHtml(doc: CompareDocument): Promise<string> {
  const { renderHtml } = await import('../report/exporters/html.js');
  const title = `collbench compare: ${doc.program.words.join(' ')}`;
  const page = await renderHtml(chartRuns(doc), title);
  const parts: string[] = [
    '<section id="compare-verdict">',
    '<style>#compare-verdict td { white-space: nowrap; } #compare-verdict td.best { background: #e6f4e6; }</style>',
  ];
  parts.push(
    `<p>${esc(
      `${doc.backend ?? 'backend unknown'}, ${doc.nranks ?? '?'} ranks on ${doc.nodes ?? '?'} node(s); ` +
        `${doc.combinations.length} combinations × ${doc.runsPerCombination} run(s), interleaved; ${metricLines(doc).join('; ')}.`,
    )}</p>`,
  );
  parts.push(
    '<h2>Combinations</h2>',
    htmlTable(
      ['id', 'combination', 'status', '#wrong', 'runs', 'error'],
      doc.combinations.map((c) => [c.id, c.label, c.status, wrongTotal(c), runsCell(c), c.error ?? '']),
    ),
  );
  for (const cs of doc.cases) {
    parts.push(`<h2>Verdict per size: ${esc(caseTitle(cs))}</h2>`);
    parts.push(
      htmlTable(
        [
          placeHead(cs),
          ...doc.combinations.map((c) => c.id),
          'best',
          'gain',
          'margin',
          ...(hasNccl(doc) ? ['NCCL chose (C0)'] : []),
        ],
        cs.sizes.map((s) => [
          placeCell(s),
          ...s.results.map((r, i) => ({ text: resultCell(doc, r, doc.combinations[i]!), strong: r.id === s.best })),
          s.best ?? 'none',
          pct(s.gainPct),
          marginCell(s),
          ...(hasNccl(doc) ? [choiceCell(s.ncclChoice ?? [])] : []),
        ]),
        ' data-table="verdict"',
      ),
    );
    parts.push(
      isStepCase(cs)
        ? ''
        : `<p>${esc(cs.crossovers.length ? `Crossovers: ${cs.crossovers.map((x) => `${formatSize(x.sizeBytes)}: ${x.from} → ${x.to}`).join(', ')}` : 'No crossover.')}</p>`,
    );
    parts.push(`<h2>#wrong per size: ${esc(caseTitle(cs))}</h2>`);
    parts.push(
      htmlTable(
        [placeHead(cs), ...doc.combinations.map((c) => c.id)],
        cs.sizes.map((s) => [
          placeCell(s),
          ...s.results.map((r) => (r.n === 0 ? '-' : r.wrong === null ? 'N/A' : String(r.wrong))),
        ]),
        ' data-table="correctness"',
      ),
    );
  }
  parts.push('</section>');
  const at = page.indexOf('</h1>');
  return at < 0 ? page : `${page.slice(0, at + 5)}\n${parts.join('\n')}${page.slice(at + 5)}`;
}
