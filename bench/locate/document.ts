// The verdict document of `collbench locate` (what -J writes; published as schema/collbench-locate.v2.schema.json)
// and its text report: each stage's busbw per group against the reference, so a person can follow the reasoning.
import { formatSize } from '../config/sizes.js';
import { schemaErrors } from '../report/json-schemas.js';
import { BUDGET_SLACK } from './budget.js';
import { formatP, type DecisionRule, type GroupResult } from './decide.js';

export const LOCATE_KIND = 'collbench-locate';
export const LOCATE_SCHEMA_VERSION = 2;
export type Verdict = 'healthy' | 'suspect' | 'degraded' | 'inconclusive';
/** Exit status of a `degraded` verdict: a host slower within the margin (its own code: neither healthy nor a named fault). */
export const EXIT_DEGRADED = 8;

/** v2: a host every pair of which is slower than every pair without it, though each stays within the margin. */
export interface DegradedHost {
  host: string;
  /** 1 − its host-level p-value corrected over hosts (Bonferroni). */
  confidence: number;
  /** Median level of its pairs / median level of the pairs without it. */
  ratio: number;
  evidence: string;
}

export interface LocateJob {
  id: string;
  hosts: string[];
  repeat: number;
  status: 'ok' | 'failed' | 'timeout' | 'interrupted';
  error: string | null;
  durationSec: number;
  /** v2: seconds it was allowed (null: only --timeout). */
  budgetSec: number | null;
  /** v2: stopped at its budget; its samples are the sizes it finished (none: status failed, far slower than the others). */
  capped: boolean;
  /** v2: timed iterations (-n) when fewer than the run arguments' (a group measured slow before), else null. */
  iterations: number | null;
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

/**
 * v2: how a suspect was confirmed: by its re-test beside a control; in the pairs stage itself (a host clearly slow:
 * every one of its ≥ 3 pairs below half the slow level in every repeat, each round beside pairs measured fine at the
 * same time, so a re-test would add nothing); or not at all (null: a run stopped early names it from its first stage).
 */
export type Confirmation = 'retest' | 'pairs' | null;

export interface Suspect {
  host: string;
  /** 1 − the larger p-value of its two tests (the stage that found it and its re-test). */
  confidence: number;
  evidence: string;
  ratio: number | null;
  stage: 'host-groups' | 'pairs';
  /** v2: how it was confirmed (see Confirmation). */
  confirmedBy: Confirmation;
}

export interface LinkSuspect {
  hosts: [string, string];
  confidence: number;
  evidence: string;
  ratio: number | null;
  confirmedBy: Confirmation;
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
  /** v2: --max-time in seconds. */
  maxTimeSec: number;
  /** v2: how the schedule was shortened to fit --max-time before anything ran, or null. */
  scheduleNote: string | null;
  /** v2: stopped early (a signal, --max-time): the verdict rests on the stages in `notRun`'s complement. */
  partial: boolean;
  notRun: string[];
  suspects: Suspect[];
  links: LinkSuspect[];
  degraded: DegradedHost[];
  /** Hosts or pairs slow (or nearly) in the pairs stage whose re-test found them fine: not named. */
  cleared: { hosts: string[]; evidence: string }[];
  stages: LocateStage[];
}

/** Validation errors of a verdict document against the published schema; [] if valid. */
export function locateErrors(doc: unknown): string[] {
  return schemaErrors(`collbench-locate.v${LOCATE_SCHEMA_VERSION}`, doc).map(
    (e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`,
  );
}

/** Seconds as text: 90 s, 12 min, 1.5 h. */
export const formatSeconds = (sec: number): string =>
  sec >= 3600 ? `${+(sec / 3600).toFixed(1)} h` : sec >= 120 ? `${+(sec / 60).toFixed(1)} min` : `${+sec.toFixed(1)} s`;

const gb = (v: number | null): string => (v === null ? '-' : v >= 10 ? v.toFixed(1) : v.toFixed(3));
const pct = (v: number | null): string => (v === null ? '-' : `${(v * 100).toFixed(0)}%`);

/** The text report: per stage, each group's busbw level per size against the reference, then the verdict. */
export function renderLocateText(doc: LocateDocument): string[] {
  const out: string[] = [];
  out.push(
    `# collbench locate: ${doc.hosts.length} hosts (${doc.hosts.join(' ')}), ${doc.npPerHost} rank(s) per host, ` +
      `${doc.repeats} repeats; busbw = 90th percentile of the iterations; slow = below ${(100 - doc.rule.margin * 100).toFixed(0)}% of the reference and rank test p < ${doc.rule.alpha}; ` +
      `max time ${formatSeconds(doc.maxTimeSec)}, each job at most ${BUDGET_SLACK} × a healthy one`,
  );
  if (doc.scheduleNote) out.push(`# schedule: ${doc.scheduleNote}`);
  for (const st of doc.stages) {
    const failed = st.jobs.filter((j) => j.status !== 'ok').length;
    const capped = st.jobs.filter((j) => j.capped).length;
    out.push('#');
    out.push(
      `# stage ${st.name}: ${st.jobs.length} job(s)${failed ? `, ${failed} failed` : ''}${capped ? `, ${capped} stopped at their time budget` : ''}; reference: ${st.referenceNote}` +
        `${st.noise !== null ? `; repeat-to-repeat noise ${pct(st.noise)}` : ''}`,
    );
    const sizes = st.reference.map((r) => r.sizeBytes);
    if (sizes.length) {
      out.push(
        `#   ${'reference busbw (GB/s)'.padEnd(32)} ${st.reference.map((r) => `${formatSize(r.sizeBytes)}=${gb(r.busBwGBps)}`).join('  ')}`,
      );
    }
    for (const g of st.groups) {
      const name = g.hosts.join(' - ').padEnd(32);
      if (g.state === 'failed') {
        out.push(`#   ${name} FAILED: ${g.failed ?? ''}`);
        continue;
      }
      const cells = g.bySize.map((b) => `${formatSize(b.sizeBytes)}=${gb(b.busBwGBps)}`).join('  ');
      const verdict =
        st.name === 'whole-job' ? '(not judged)' : g.state === 'ok' ? 'ok' : g.state === 'slow' ? 'SLOW' : 'uncertain';
      const repeats = g.repeatRatios.length > 1 ? ` [${g.repeatRatios.map((r) => r.toFixed(2)).join(' ')}]` : '';
      out.push(`#   ${name} ${cells}  ratio ${g.ratio!.toFixed(2)}${repeats}  p ${formatP(g.pValue)}  ${verdict}`);
    }
  }
  out.push('#');
  for (const s of doc.suspects)
    out.push(`# suspect host ${s.host} (confidence ${s.confidence.toFixed(4)}): ${s.evidence}`);
  for (const d of doc.degraded)
    out.push(
      `# degraded host ${d.host} (confidence ${d.confidence.toFixed(4)}, its pairs at ${(d.ratio * 100).toFixed(0)}% of the others'): ${d.evidence}`,
    );
  for (const l of doc.links)
    out.push(`# suspect link ${l.hosts[0]} - ${l.hosts[1]} (confidence ${l.confidence.toFixed(4)}): ${l.evidence}`);
  for (const c of doc.cleared) out.push(`# cleared ${c.hosts.join(' - ')}: ${c.evidence}`);
  if (doc.partial) out.push(`# partial: not run: ${doc.notRun.join(', ')}`);
  out.push(`# verdict: ${doc.verdict}: ${doc.reason}`);
  if (doc.advice) out.push(`# next: ${doc.advice}`);
  return out;
}
