// The verdict document of `collbench locate` (what -J writes; published as schema/collbench-locate.v1.schema.json)
// and its text report: each stage's busbw per group against the reference, so a person can follow the reasoning.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv2020 as Ajv2020Class, ValidateFunction } from 'ajv/dist/2020.js';
import { formatSize } from '../config/sizes.js';
import { formatP, type DecisionRule, type GroupResult } from './decide.js';

export const LOCATE_KIND = 'collbench-locate';
export const LOCATE_SCHEMA_VERSION = 1;
export type Verdict = 'healthy' | 'suspect' | 'inconclusive';

export interface LocateJob {
  id: string;
  hosts: string[];
  repeat: number;
  status: 'ok' | 'failed' | 'timeout' | 'interrupted';
  error: string | null;
  durationSec: number;
}

export interface LocateStage {
  name: 'whole-job' | 'host-groups' | 'pairs' | 'retest';
  /** What the ratios are relative to. */
  referenceNote: string;
  reference: { sizeBytes: number; busBwGBps: number }[];
  noise: number | null;
  groups: GroupResult[];
  jobs: LocateJob[];
}

export interface Suspect {
  host: string;
  /** 1 − the larger p-value of its two tests (the stage that found it and its re-test). */
  confidence: number;
  evidence: string;
  ratio: number | null;
  stage: 'host-groups' | 'pairs';
}

export interface LinkSuspect {
  hosts: [string, string];
  confidence: number;
  evidence: string;
  ratio: number | null;
}

export interface LocateDocument {
  kind: typeof LOCATE_KIND;
  schemaVersion: typeof LOCATE_SCHEMA_VERSION;
  verdict: Verdict;
  exitCode: number;
  /** Why this verdict, in a sentence. */
  reason: string;
  /** What to run next (inconclusive), or null. */
  advice: string | null;
  startTime: string;
  endTime: string;
  argv: string[];
  hosts: string[];
  npPerHost: number;
  repeats: number;
  runArgs: string[];
  rule: DecisionRule & { reference: string; test: string };
  suspects: Suspect[];
  links: LinkSuspect[];
  /** Hosts or pairs slow (or nearly) in the pairs stage whose re-test found them fine: not named. */
  cleared: { hosts: string[]; evidence: string }[];
  stages: LocateStage[];
}

export const LOCATE_SCHEMA_PATH = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'schema',
  `collbench-locate.v${LOCATE_SCHEMA_VERSION}.schema.json`);

let validator: ValidateFunction | null = null;

/** Validation errors of a verdict document against the published schema; [] if valid. */
export function locateErrors(doc: unknown): string[] {
  if (!validator) {
    const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020Class };
    validator = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true })
      .compile(JSON.parse(readFileSync(LOCATE_SCHEMA_PATH, 'utf8')) as Record<string, unknown>);
  }
  if (validator(doc)) return [];
  return (validator.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`);
}

const gb = (v: number | null): string => (v === null ? '-' : v >= 10 ? v.toFixed(1) : v.toFixed(3));
const pct = (v: number | null): string => (v === null ? '-' : `${(v * 100).toFixed(0)}%`);

/** The text report: per stage, each group's busbw level per size against the reference, then the verdict. */
export function renderLocateText(doc: LocateDocument): string[] {
  const out: string[] = [];
  out.push(`# collbench locate: ${doc.hosts.length} hosts (${doc.hosts.join(' ')}), ${doc.npPerHost} rank(s) per host, ` +
    `${doc.repeats} repeats; busbw = 90th percentile of the iterations; slow = below ${(100 - doc.rule.margin * 100).toFixed(0)}% of the reference and rank test p < ${doc.rule.alpha}`);
  for (const st of doc.stages) {
    const failed = st.jobs.filter((j) => j.status !== 'ok').length;
    out.push('#');
    out.push(`# stage ${st.name}: ${st.jobs.length} job(s)${failed ? `, ${failed} failed` : ''}; reference: ${st.referenceNote}` +
      `${st.noise !== null ? `; repeat-to-repeat noise ${pct(st.noise)}` : ''}`);
    const sizes = st.reference.map((r) => r.sizeBytes);
    if (sizes.length) {
      out.push(`#   ${'reference busbw (GB/s)'.padEnd(32)} ${st.reference.map((r) => `${formatSize(r.sizeBytes)}=${gb(r.busBwGBps)}`).join('  ')}`);
    }
    for (const g of st.groups) {
      const name = g.hosts.join(' - ').padEnd(32);
      if (g.state === 'failed') { out.push(`#   ${name} FAILED: ${g.failed ?? ''}`); continue; }
      const cells = g.bySize.map((b) => `${formatSize(b.sizeBytes)}=${gb(b.busBwGBps)}`).join('  ');
      const verdict = st.name === 'whole-job' ? '(not judged)' : g.state === 'ok' ? 'ok' : g.state === 'slow' ? 'SLOW' : 'uncertain';
      const repeats = g.repeatRatios.length > 1 ? ` [${g.repeatRatios.map((r) => r.toFixed(2)).join(' ')}]` : '';
      out.push(`#   ${name} ${cells}  ratio ${g.ratio!.toFixed(2)}${repeats}  p ${formatP(g.pValue)}  ${verdict}`);
    }
  }
  out.push('#');
  for (const s of doc.suspects) out.push(`# suspect host ${s.host} (confidence ${s.confidence.toFixed(4)}): ${s.evidence}`);
  for (const l of doc.links) out.push(`# suspect link ${l.hosts[0]} - ${l.hosts[1]} (confidence ${l.confidence.toFixed(4)}): ${l.evidence}`);
  for (const c of doc.cleared) out.push(`# cleared ${c.hosts.join(' - ')}: ${c.evidence}`);
  out.push(`# verdict: ${doc.verdict}: ${doc.reason}`);
  if (doc.advice) out.push(`# next: ${doc.advice}`);
  return out;
}
