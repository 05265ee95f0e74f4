// `--md FILE`: the run as a Markdown document: what ran where (provenance), the nccl-tests table as a
// Markdown table (same columns and units, one line per row), and the footer. Readable on any forge.
import { algoLines, formatGbps, slowLinkLines } from '../../backends/nccl-links.js';
import { adaptiveFloat } from '../format.js';
import type { ReportDocument, ReportHalf, ReportLinks } from '../schema.js';

/** Escapes text for a Markdown table cell or inline text. */
export function mdEscape(s: string): string {
  return s
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/([*_`[\]<>])/g, '\\$1')
    .replace(/\n/g, ' ');
}

const cell = (x: number | null, width: number): string => (x === null ? 'n/a' : adaptiveFloat(x, width).trim());
const wrongCell = (h: ReportHalf): string => (h.wrong === null ? 'N/A' : String(h.wrong));

function halfCells(h: ReportHalf, perIter: boolean): string[] {
  const cells = [cell(h.timeUs, 7), cell(h.algBwGBps, 6), cell(h.busBwGBps, 6), wrongCell(h)];
  if (perIter) {
    const s = h.perIter?.stats;
    cells.push(...(s ? [s.min, s.max, s.p99, s.cvPct].map((v) => cell(v, 7)) : ['', '', '', '']));
  }
  return cells;
}

export function mdTable(header: string[], rows: string[][], rightAlignFrom = 0): string[] {
  const align = header.map((_, i) => (i >= rightAlignFrom ? '---:' : ':---'));
  return [`| ${header.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

/** Up to this many ranks the Markdown gets the link matrix as a table (wider is unreadable: the HTML draws it). */
export const MD_MATRIX_MAX_RANKS = 64;

/** --links in Markdown: the verdict's sentence, NCCL's choice per size, and the rank × peer matrix (GB/s in SendWait,
 *  sender row, receiver column, a named link in bold). */
export function linksMarkdown(links: ReportLinks, heading = '## Links (--links)'): string[] {
  const out = [heading, ''];
  if (!links.loaded) return [...out, "NCCL did not load collbench's profiler plugin: no link judged.", ''];
  const code = (line: string) => `- \`${line.replace(/^#\s*/, '').replace(/`/g, "'")}\``;
  for (const line of [...slowLinkLines(links), ...algoLines(links.algo)]) out.push(code(line));
  out.push('');
  const m = links.matrix;
  if (!m || !m.gbps.some((row) => row.some((v) => v !== null))) return out;
  if (m.ranks > MD_MATRIX_MAX_RANKS) {
    out.push(`Link matrix: ${m.ranks} ranks, too wide for a table (links.matrix in the JSON; the HTML draws it).`, '');
    return out;
  }
  const named = new Set(m.named.map(([s, r]) => `${s}>${r}`));
  out.push(
    `Send links, GB/s in SendWait (sender rank down, receiver across; bold: named slow)` +
      `${m.comm ? `, communicator ${mdEscape(m.comm)}` : ''}:`,
    '',
  );
  const rows = m.gbps.map((row, s) => [
    String(s),
    ...row.map((v, r) => (v === null ? '' : named.has(`${s}>${r}`) ? `**${formatGbps(v)}**` : formatGbps(v))),
  ]);
  out.push(...mdTable(['sender / receiver', ...m.gbps.map((_, r) => String(r))], rows, 1), '');
  return out;
}

export function renderMarkdown(doc: ReportDocument): string {
  const perIter = doc.options.perIterTiming === true;
  const timeLabel = doc.options.reportCpuTime === true ? 'cputime' : 'time';
  const p = doc.provenance;
  const hosts = [...new Set(doc.ranks.map((r) => r.host))];
  const lines: string[] = [
    `# ${mdEscape(doc.program)}: ${doc.world.nranks} rank${doc.world.nranks === 1 ? '' : 's'}, ${mdEscape(doc.world.backend)}`,
    '',
    `- status: ${doc.status}${doc.status === 'incomplete' ? ' (the run had not finished when this file was written)' : ''}`,
    `- started: ${doc.startTime}${doc.endTime ? `, ended: ${doc.endTime}` : ''}`,
    `- collbench ${mdEscape(p.collbench.version)}, Node ${mdEscape(p.node.version)}, ${mdEscape(p.backend.libraryVersion)}`,
    `- hosts: ${hosts.map(mdEscape).join(', ') || 'n/a'} (${mdEscape(p.host.distro ?? p.host.platform)}, ${mdEscape(p.host.cpuModel)})`,
    '',
    'Rerun:',
    '',
    '```sh',
    doc.rerun,
    '```',
    '',
  ];
  for (const w of doc.warnings) lines.push(`> ${mdEscape(w.replace(/^#\s*/, ''))}`, '');
  const iterHead = (p: string) =>
    perIter ? [`${p} i_min (us)`, `${p} i_max (us)`, `${p} i_p99 (us)`, `${p} i_cv (%)`] : [];
  const header = [
    'size (B)',
    'count (elements)',
    'type',
    'redop',
    'root',
    `oop ${timeLabel} (us)`,
    'oop algbw (GB/s)',
    'oop busbw (GB/s)',
    'oop #wrong',
    ...iterHead('oop'),
    `ip ${timeLabel} (us)`,
    'ip algbw (GB/s)',
    'ip busbw (GB/s)',
    'ip #wrong',
    ...iterHead('ip'),
  ];
  const rows = doc.rows.map((r) => {
    const reported = (h: ReportHalf): ReportHalf => (timeLabel === 'cputime' ? { ...h, timeUs: h.cpuTimeUs } : h);
    return [
      String(r.sizeBytes),
      String(r.count),
      mdEscape(r.type),
      mdEscape(r.redop),
      String(r.root),
      ...halfCells(reported(r.outOfPlace), perIter),
      ...halfCells(reported(r.inPlace), perIter),
    ];
  });
  lines.push(...mdTable(header, rows, 0), '');
  const s = doc.summary;
  if (s) {
    if (s.skipped) lines.push(`Skipped: ${mdEscape(s.skipped)}`, '');
    lines.push(`- Out of bounds values: ${s.outOfBounds} ${s.outOfBounds === 0 ? 'OK' : 'FAILED'}`);
    lines.push(
      `- Avg bus bandwidth: ${s.avgBusBwGBps === null ? 'n/a' : `${s.avgBusBwGBps} GB/s`}` +
        `${s.minBwVerdict ? ` ${s.minBwVerdict} (minimum ${s.minBwGBps} GB/s × 0.9)` : ''}`,
    );
    lines.push(`- Exit status: ${s.exitCode}`);
  } else {
    lines.push(`- ${doc.rows.length} rows so far`);
  }
  if (doc.links) lines.push('', ...linksMarkdown(doc.links));
  return `${lines.join('\n')}\n`;
}
