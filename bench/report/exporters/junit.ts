// `--junit FILE`: the run as JUnit XML for CI dashboards. One test case per row-half, failed when it saw
// wrong elements (#wrong > 0) or a threshold failed; one suite per (type, redop, root) sweep; the
// NCCL_TESTS_MIN_BW average check, when set, is a test case of its own. Mirrors the nccl-tests verdicts.
import { PLACEMENTS, type ReportDocument, type ReportHalf, type ReportRow } from '../schema.js';

// XML 1.0 has no way to carry most control characters: they are dropped.
// eslint-disable-next-line no-control-regex
const XML_FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g;

export function xmlEscape(s: string): string {
  return s
    .replace(XML_FORBIDDEN, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** Why one row-half fails (empty = passes). Later thresholds (acceptance profiles) add their reasons here. */
export function halfFailures(h: ReportHalf): string[] {
  const out: string[] = [];
  if (h.wrong !== null && h.wrong > 0) {
    const fw = h.firstWrong;
    out.push(
      `${h.wrong} wrong elements on ${h.ranksWithWrong} rank(s)` +
        (fw ? `; first: rank ${fw.rank} index ${fw.index} expected ${fw.expected} got ${fw.got}` : ''),
    );
  }
  return out;
}

interface Case {
  name: string;
  classname: string;
  timeSec: number;
  failures: string[];
  failureType?: string;
  skipped?: string;
  output: string;
}

const attr = (name: string, v: string | number): string => ` ${name}="${xmlEscape(String(v))}"`;

function suiteKey(r: ReportRow): string {
  return `${r.type} ${r.redop || 'none'} root ${r.root}`;
}

export function renderJunit(doc: ReportDocument): string {
  const suites = new Map<string, Case[]>();
  const iters = Number(doc.options.iters) * Number(doc.options.aggIters ?? 1);
  for (const r of doc.rows) {
    const key = suiteKey(r);
    const cases = suites.get(key) ?? [];
    suites.set(key, cases);
    for (const { key: k, label } of PLACEMENTS) {
      const h = r[k];
      cases.push({
        name: `${r.sizeBytes} B ${label}${r.cycle > 0 ? ` cycle ${r.cycle}` : ''}`,
        classname: `collbench.${doc.collective}.${r.type}.${r.redop || 'none'}.root${r.root}`,
        timeSec: h.timeUs === null ? 0 : (h.timeUs * iters) / 1e6,
        failures: halfFailures(h),
        output: `time ${h.timeUs} us, algbw ${h.algBwGBps} GB/s, busbw ${h.busBwGBps} GB/s, #wrong ${h.wrong ?? 'N/A'}`,
      });
    }
  }
  const s = doc.summary;
  const runCases: Case[] = [];
  if (s?.skipped) {
    runCases.push({
      name: 'collective',
      classname: `collbench.${doc.collective}`,
      timeSec: 0,
      failures: [],
      skipped: s.skipped,
      output: '',
    });
  }
  if (s?.minBwVerdict) {
    runCases.push({
      name: `Avg bus bandwidth >= 0.9 x NCCL_TESTS_MIN_BW (${s.minBwGBps} GB/s)`,
      classname: `collbench.${doc.collective}`,
      timeSec: 0,
      output: `avg busbw ${s.avgBusBwGBps} GB/s`,
      failureType: 'threshold',
      failures:
        s.minBwVerdict === 'FAILED'
          ? [`average bus bandwidth ${s.avgBusBwGBps} GB/s is below 0.9 x ${s.minBwGBps} GB/s`]
          : [],
    });
  }
  if (runCases.length) suites.set('run', runCases);

  const all = [...suites.values()].flat();
  const failures = all.filter((c) => c.failures.length > 0).length;
  const skipped = all.filter((c) => c.skipped !== undefined).length;
  const total = all.reduce((t, c) => t + c.timeSec, 0);
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(
    `<testsuites${attr('name', `collbench ${doc.program}`)}${attr('tests', all.length)}${attr('failures', failures)}` +
      `${attr('errors', 0)}${attr('skipped', skipped)}${attr('time', total.toFixed(6))}>`,
  );
  for (const [name, cases] of suites) {
    const f = cases.filter((c) => c.failures.length > 0).length;
    const sk = cases.filter((c) => c.skipped !== undefined).length;
    const t = cases.reduce((a, c) => a + c.timeSec, 0);
    out.push(
      `  <testsuite${attr('name', `${doc.program} ${name}`)}${attr('tests', cases.length)}${attr('failures', f)}` +
        `${attr('errors', 0)}${attr('skipped', sk)}${attr('time', t.toFixed(6))}${attr('timestamp', doc.startTime)}` +
        `${attr('hostname', doc.provenance.host.hostname)}>`,
    );
    if (name !== 'run') {
      out.push('    <properties>');
      out.push(`      <property${attr('name', 'backend')}${attr('value', doc.world.backend)}/>`);
      out.push(`      <property${attr('name', 'nranks')}${attr('value', doc.world.nranks)}/>`);
      out.push(`      <property${attr('name', 'rerun')}${attr('value', doc.rerun)}/>`);
      out.push('    </properties>');
    }
    for (const c of cases) {
      out.push(
        `    <testcase${attr('name', c.name)}${attr('classname', c.classname)}${attr('time', c.timeSec.toFixed(6))}>`,
      );
      if (c.skipped !== undefined) out.push(`      <skipped${attr('message', c.skipped)}/>`);
      for (const msg of c.failures)
        out.push(
          `      <failure${attr('message', msg)}${attr('type', c.failureType ?? 'wrong-results')}>${xmlEscape(msg)}</failure>`,
        );
      if (c.output) out.push(`      <system-out>${xmlEscape(c.output)}</system-out>`);
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
