// `collbench report a.json [b.json …] --html out.html [--md out.md] [--label NAME …] [--title TEXT]`:
// overlays saved runs (collbench reports, or nccl-tests -J files) in one self-contained HTML page of charts
// and/or a Markdown comparison. Reads only the report document (docs/architecture.md, "report/"); runs nothing.
import { basename } from 'node:path';
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import { EXIT, UsageError } from '../core/errors.js';
import { flag, helpFlag } from '../config/flags.js';
import {
  chartRunFromNcclTests,
  chartRunFromReport,
  isNcclTestsJson,
  meanBySeriesAndSize,
  renderHtml,
  type ChartRun,
} from '../report/exporters/html.js';
import { mdEscape, mdTable } from '../report/exporters/md.js';
import { adaptiveFloat } from '../report/format.js';
import { checkOutputPaths, writeOutputFile } from '../report/outputs.js';
import { REPORT_KIND, reportErrorLine, reportSchemaOf, type ReportDocument } from '../report/schema.js';
import { errorText, readDocument } from '../report/json-schemas.js';
import {
  REPLAY_KIND,
  renderReplayOverlay,
  ReplayOverlayError,
  type ReplayDocument,
} from '../report/replay-document.js';

const OPTIONS = 'Options';
const REPORT_FLAGS = [
  flag.output(
    undefined,
    'html',
    'html',
    OPTIONS,
    'self-contained HTML page: busbw vs size, time vs size (log2 size axis, one line ' +
      'per run and placement), and per run with -I 1 per-rank samples a rank × size heatmap of time / median rank',
  ),
  flag.output(undefined, 'md', 'md', OPTIONS, 'Markdown: the runs, and busbw and time per size side by side'),
  flag.repeated(
    'label',
    'label',
    OPTIONS,
    'name of the next run in the legend (repeat, in file order; default: the file name)',
    { value: '<name>' },
  ),
  flag.text(undefined, 'title', 'title', OPTIONS, 'page title', {
    value: '<text>',
    defaultText: 'collbench report: the labels',
  }),
  flag.force(OPTIONS, 'replace output files that already exist (without it they are refused)'),
  helpFlag(OPTIONS),
] as const;

export const REPORT_OPTIONS: CommandOptions<typeof REPORT_FLAGS> = {
  command: 'report',
  usage: 'collbench report FILE.json [FILE.json …] [--html OUT.html] [--md OUT.md] [--label NAME …] [--title TEXT]',
  about:
    '  Overlays saved runs: collbench reports (-J) and nccl-tests JSON files (-J of nccl-tests, or --json-format nccl-tests).\n' +
    '  Replays (collbench replay -J) of the same steps overlay step by step, in Markdown (--md).',
  groups: [OPTIONS],
  flags: REPORT_FLAGS,
  footer: '  At least one of --html and --md is needed; - writes it to stdout.',
};

export interface LoadedRun {
  file: string;
  run: ChartRun;
  doc: ReportDocument | null;
}

/** Reads one input file: a collbench report (validated against the schema) or an nccl-tests JSON file. */
export function loadRun(file: string, label: string): LoadedRun {
  const { doc, problem } = readDocument<ReportDocument>(file, (json) =>
    kindOf(json) === REPORT_KIND ? reportSchemaOf(json) : null,
  );
  if (doc) return { file, doc, run: chartRunFromReport(doc, label, file) };
  if (problem.stage === 'read') throw new UsageError(`report: cannot read ${file}: ${problem.code ?? problem.message}`);
  if (problem.stage === 'json') throw new UsageError(`report: ${file} is not JSON (${problem.message})`);
  if (problem.stage === 'schema') {
    const errors = problem.errors.map(reportErrorLine);
    throw new UsageError(
      `report: ${file} does not match the collbench report schema: ${errors.slice(0, 3).join('; ')}` +
        `${errors.length > 3 ? ` (+${errors.length - 3} more)` : ''}`,
    );
  }
  if (isNcclTestsJson(problem.json)) return { file, doc: null, run: chartRunFromNcclTests(problem.json, label, file) };
  throw new UsageError(
    `report: ${file} is neither a collbench report (kind "${REPORT_KIND}") nor nccl-tests JSON ("version": 3)`,
  );
}

/** A replay document (kind "collbench-replay", checked against its schema), or null for anything else. */
function replayOf(file: string): ReplayDocument | null {
  const { doc, problem } = readDocument<ReplayDocument>(file, (json) =>
    kindOf(json) === REPLAY_KIND ? 'collbench-replay.v1' : null,
  );
  if (problem?.stage === 'schema')
    throw new UsageError(
      `report: ${file} does not match the replay schema: ${problem.errors.slice(0, 3).map(errorText).join('; ')}`,
    );
  return doc; // null for anything else: loadRun says what is wrong with it
}

/** The `kind` a parsed document declares, if it is an object. */
const kindOf = (json: unknown): unknown =>
  typeof json === 'object' && json !== null ? (json as { kind?: unknown }).kind : undefined;

/** Default label: the file name without .json; made unique with #2, #3. */
export function labelsFor(files: readonly string[], given: readonly string[]): string[] {
  const out: string[] = [];
  files.forEach((f, i) => {
    const base = given[i] ?? basename(f).replace(/\.json$/i, '');
    let label = base;
    for (let n = 2; out.includes(label); n++) label = `${base} #${n}`;
    out.push(label);
  });
  return out;
}

/** The Markdown comparison: one section per run, then busbw and time per size, one column per series. */
export function renderComparisonMarkdown(runs: ChartRun[], title: string): string {
  const lines = [`# ${mdEscape(title)}`, ''];
  for (const r of runs) {
    lines.push(`## ${mdEscape(r.label)}${r.source ? ` (${mdEscape(r.source)})` : ''}`, '');
    for (const [k, v] of r.facts)
      lines.push(`- ${mdEscape(k)}: ${k === 'rerun' || k === 'command' ? `\`${v.replace(/`/g, "'")}\`` : mdEscape(v)}`);
    lines.push('');
  }
  const points = runs.flatMap((r) => meanBySeriesAndSize(r.points));
  const series = [...new Set(points.map((p) => p.series))];
  const sizes = [...new Set(points.map((p) => p.sizeBytes))].sort((a, b) => a - b);
  const at = new Map(points.map((p) => [`${p.series}\u0000${p.sizeBytes}`, p]));
  for (const [field, heading, unit, w] of [
    ['busBwGBps', 'Bus bandwidth', 'GB/s', 6],
    ['timeUs', 'Time', 'us', 7],
  ] as const) {
    lines.push(`## ${heading} (${unit})`, '');
    const rows = sizes.map((size) => [
      String(size),
      ...series.map((s) => {
        const v = at.get(`${s}\u0000${size}`)?.[field];
        return v === undefined || v === null ? '' : adaptiveFloat(v, w).trim();
      }),
    ]);
    lines.push(...mdTable(['size (B)', ...series.map(mdEscape)], rows), '');
  }
  return `${lines.join('\n')}\n`;
}

export async function reportCommand(
  args: string[],
  io: { out(line: string): void; err(line: string): void },
): Promise<number> {
  const parsed = parseOptions(args, REPORT_OPTIONS);
  if (parsed.stop === 'help') {
    io.out(commandHelp(REPORT_OPTIONS));
    return EXIT.OK;
  }
  const files = parsed.positionals;
  const values = parsed.values;
  if (files.length === 0)
    throw new UsageError('report: no input file; give one or more report JSON files (see --help)');
  const html = values.html,
    md = values.md;
  if (html === null && md === null) throw new UsageError('report: nothing to write; give --html FILE and/or --md FILE');
  const given = values.label;
  if (given.length > files.length)
    throw UsageError.forFlag('report: --label', `${given.length} labels for ${files.length} files`);
  const outputs = [
    ...(html !== null ? [{ flag: '--html', path: html }] : []),
    ...(md !== null ? [{ flag: '--md', path: md }] : []),
  ];
  checkOutputPaths(outputs, { force: values.force });

  const labels = labelsFor(files, given);
  const replays = files.map(replayOf);
  if (replays.some((r) => r !== null)) {
    // Replays (`collbench replay -J`) overlay step by step, in Markdown; they do not mix with runs.
    const odd = replays.findIndex((r) => r === null);
    if (odd >= 0)
      throw new UsageError(
        `report: ${files[odd]} is not a replay but ${files[replays.findIndex((r) => r !== null)]} is: overlay replays with replays`,
      );
    if (html !== null) throw UsageError.forFlag('report: --html', 'replays are overlaid in Markdown only (--md)');
    const title = values.title ?? `collbench report: ${labels.join(' vs ')}`;
    let text: string;
    try {
      text = renderReplayOverlay(
        replays.map((doc, i) => ({ label: labels[i]!, file: files[i]!, doc: doc! })),
        title,
      );
    } catch (e) {
      if (e instanceof ReplayOverlayError) throw new UsageError(`report: ${e.message}`);
      throw e;
    }
    if (md === '-') io.out(text.replace(/\n$/, ''));
    else {
      writeOutputFile('--md', md!, text);
      io.err(
        `report: wrote ${md} (Markdown, ${replays.length} replay${replays.length === 1 ? '' : 's'}: ${labels.join(', ')})`,
      );
    }
    return EXIT.OK;
  }
  const runs = files.map((f, i) => loadRun(f, labels[i]!).run);
  const title =
    values.title ??
    (runs.length === 1 ? `collbench report: ${runs[0]!.label}` : `collbench report: ${labels.join(' vs ')}`);
  const write = (flag: string, path: string, text: string): void => {
    if (path === '-') {
      io.out(text.replace(/\n$/, ''));
      return;
    }
    writeOutputFile(flag, path, text);
    // on stderr: a report on stdout (-) stays clean
    io.err(
      `report: wrote ${path} (${flag === '--html' ? 'HTML' : 'Markdown'}, ${runs.length} run${runs.length === 1 ? '' : 's'}: ` +
        `${labels.join(', ')})`,
    );
  };
  if (html !== null) write('--html', html, await renderHtml(runs, title));
  if (md !== null) write('--md', md, renderComparisonMarkdown(runs, title));
  return EXIT.OK;
}
