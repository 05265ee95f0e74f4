// The stages of `collbench locate` and its verdict (healthy, suspect, degraded, inconclusive, with the reason and what
// to run next), every job within its budget and a run stopped early saying what it knows. Only through a Measurer,
// so the same flow runs real jobs (command.ts) and simulated ones (scripts/locate-sim.ts).
import { EXIT } from '../core/errors.js';
import { isoLocal } from '../report/exporters/json.js';
import { launchBackend, slowLinkSentence, type SlowLink } from '../backends/nccl-links.js';
import { shortHost } from '../core/ranks.js';
import type { ReportLinks } from '../report/schema.js';
import {
  analyzeStage,
  attributeHostGroups,
  attributePairs,
  bestOf,
  decideHostOrLink,
  degradedHosts,
  formatP,
  goodHosts,
  isBad,
  pairEvidence,
  suspectHostPairs,
  type Attribution,
  type DecisionRule,
  type GroupResult,
  type GroupSamples,
  type HostFinding,
  type PairEvidence,
  type StageAnalysis,
} from './decide.js';
import { medianOf } from '../numbers/stats.js';
import {
  EXIT_DEGRADED,
  LOCATE_KIND,
  LOCATE_SCHEMA_VERSION,
  type DegradedHost,
  type LinkSuspect,
  type LocateDocument,
  type LocateJob,
  type LocateStage,
  type Suspect,
  type Verdict,
} from './document.js';
import { DurationReference, iterationsFor, type JobBudget } from './budget.js';
import type { LocateOptions } from './options.js';
import { pairRounds } from './schedule.js';

/** A group of hosts measured together in one job; `iterations` (-n) when it differs from the run arguments'. */
export interface GroupSpec {
  id: string;
  hosts: string[];
  iterations?: number;
  /** Run with --links (nccl): the job's report says which link NCCL's own timings name (docs/links.md). */
  links?: boolean;
}

/** Which repeat a measurement starts at (numbering, and the rotation of its rounds) and how long its jobs may take. */
export interface MeasureStep {
  firstRepeat: number;
  budget: JobBudget;
}

/** Where the measurements come from. */
export interface Measurer {
  readonly opts: LocateOptions;
  /** True once the run is stopped early (a signal, or --max-time); `stopReason` then says which. */
  readonly interrupted: boolean;
  readonly stopReason?: string | null;
  progress(line: string): void;
  /**
   * Runs `rounds` (the groups of a round at the same time) `repeats` times; per group its samples per size and
   * repeat. A job stopped at its budget keeps the sizes it finished (`capped`); a job never run because the run was
   * stopped leaves its group without samples and without a failure.
   */
  measure(
    rounds: GroupSpec[][],
    repeats: number,
    step?: MeasureStep,
  ): Promise<{ groups: GroupSamples[]; jobs: LocateJob[]; links?: Map<string, ReportLinks> }>;
}

/** The samples of two measurements of the same groups, repeats appended. */
function merge(into: Map<string, GroupSamples>, more: readonly GroupSamples[]): void {
  for (const g of more) {
    const cur = into.get(g.id);
    if (!cur) {
      into.set(g.id, { ...g, bySize: new Map([...g.bySize].map(([k, v]) => [k, [...v]])) });
      continue;
    }
    cur.failed ??= g.failed;
    for (const [size, runs] of g.bySize) cur.bySize.set(size, [...(cur.bySize.get(size) ?? []), ...runs]);
  }
}

/** Groups that were measured (or failed): a run stopped early leaves some without either. */
const measured = (groups: Iterable<GroupSamples>): GroupSamples[] =>
  [...groups].filter((g) => g.failed !== null || g.bySize.size > 0);

function stageOf(name: LocateStage['name'], a: StageAnalysis, jobs: LocateJob[]): LocateStage {
  return { name, referenceNote: a.referenceNote, reference: a.reference, noise: a.noise, groups: a.groups, jobs };
}

const pairId = (a: string, b: string): string => `${a}+${b}`;
const ratioText = (g: GroupResult): string =>
  g.ratio === null
    ? `failed (${g.failed})`
    : `${(g.ratio * 100).toFixed(0)}% of the reference (p ${formatP(g.pValue)})`;

interface Retest {
  subjects: (GroupResult | null)[];
  controls: (GroupResult | null)[];
  stage: LocateStage;
}
/** What to re-test: its hosts, and its ratio where it was found (its iterations by time). */
interface RetestSubject {
  hosts: string[];
  foundRatio: number | null;
}

/**
 * Suspects or uncertain groups again, each with a known-good partner (or the link itself), beside a control pair of
 * two other hosts measured at the same time (known-good ones first; any others when there are not enough), so that
 * both see the same load. `ranked` is every host, best first. Several subjects are re-tested together: packed into
 * rounds of disjoint hosts, each round with its own control, so that the re-tests of many groups take a few rounds,
 * not one per group. A host found by the host-groups stage is re-tested alone (its own K ranks) beside another host
 * alone; `reference` stands in for a control when there is none. Up to one repeat more than the stage that raised
 * it, one at a time: after two, a subject clearly slow (every repeat below half the reference's good level,
 * 1 − margin, and significant) or clearly fine (every repeat within half the margin) is decided and leaves the
 * rounds; the rest runs every repeat. Judged by the run's rule, as the stage that raised it: at half the margin a
 * host just beyond the margin would have one of its pairs confirmed as a link (scripts/locate-sim.ts: 40 % of the
 * busy runs with a host 1.33× slower named a link, against none at the full margin).
 */
async function retest(
  s: Measurer,
  subjects: readonly RetestSubject[],
  ranked: string[],
  reference: { stage: StageAnalysis; groups: GroupSamples[] },
  budget: () => JobBudget,
  alone: boolean,
): Promise<Retest> {
  const controlSize = alone ? 1 : 2;
  interface Round {
    used: Set<string>;
    subjects: number[];
    specs: GroupSpec[];
    controlId: string | null;
  }
  const rounds: Round[] = [];
  const specs: GroupSpec[] = [];
  const roundOf: number[] = [];
  subjects.forEach(({ hosts: hostsUnder, foundRatio }) => {
    const fits = (r: Round): boolean =>
      hostsUnder.every((h) => !r.used.has(h)) &&
      (hostsUnder.length > 1 || alone || ranked.some((g) => !r.used.has(g) && !hostsUnder.includes(g)));
    let k = rounds.findIndex(fits);
    if (k < 0) {
      rounds.push({ used: new Set(), subjects: [], specs: [], controlId: null });
      k = rounds.length - 1;
    }
    const round = rounds[k]!;
    const partner =
      hostsUnder.length === 1 && !alone ? ranked.find((g) => !hostsUnder.includes(g) && !round.used.has(g)) : undefined;
    const subjectHosts = partner !== undefined ? [hostsUnder[0]!, partner] : hostsUnder;
    const spec: GroupSpec = {
      id: `retest:${subjectHosts.join('+')}`,
      hosts: subjectHosts,
      iterations: iterationsFor(s.opts.iterations, foundRatio),
    };
    for (const h of subjectHosts) round.used.add(h);
    round.subjects.push(specs.length);
    round.specs.push(spec);
    specs.push(spec);
    roundOf.push(k);
  });
  rounds.forEach((round, k) => {
    const others = ranked.filter((g) => !round.used.has(g)).slice(0, controlSize);
    if (others.length < controlSize) return;
    round.controlId = `control${k ? k + 1 : ''}:${others.join('+')}`;
    round.specs.push({ id: round.controlId, hosts: others });
  });
  // Without a control the pairs stage's reference groups stand in for it (measured earlier).
  const refIds = new Set(
    reference.stage.groups
      .filter((g) => g.state === 'ok')
      .sort((a, b) => (b.ratio ?? 0) - (a.ratio ?? 0))
      .slice(0, Math.max(1, Math.ceil(reference.stage.groups.length / 3)))
      .map((g) => g.id),
  );
  const note = `the pairs stage's best pairs (no two other hosts for a control)`;
  const all = new Map<string, GroupSamples>();
  const jobs: LocateJob[] = [];
  const results: (StageAnalysis | null)[] = specs.map(() => null);
  const controls: (GroupResult | null)[] = rounds.map(() => null);
  const decided = new Set<number>();
  const { rule } = s.opts;
  for (let r = 1; r <= s.opts.repeats + 1 && !s.interrupted; r++) {
    const active = rounds
      .filter((round) => round.subjects.some((i) => !decided.has(i)))
      .map((round) => round.specs.filter((g) => g.id === round.controlId || !decided.has(specs.indexOf(g))));
    if (!active.length) break;
    const m = await s.measure(active, 1, { firstRepeat: r, budget: budget() });
    merge(all, m.groups);
    jobs.push(...m.jobs);
    const groups = measured(all.values());
    rounds.forEach((round, k) => {
      const control = round.controlId
        ? groups.filter((g) => g.id === round.controlId)
        : reference.groups.filter((g) => refIds.has(g.id));
      if (round.controlId && control.length) controls[k] = analyzeStage(control, rule, control).groups[0]!;
      const controlFine = round.controlId === null || controls[k]?.state === 'ok';
      for (const i of round.subjects) {
        if (decided.has(i)) continue;
        const subjectSamples = groups.find((g) => g.id === specs[i]!.id);
        if (!subjectSamples) continue;
        const a = analyzeStage([subjectSamples], rule, control, round.controlId ? undefined : note);
        results[i] = a;
        const sub = a.groups[0]!;
        if (r >= 2 && r < s.opts.repeats + 1) {
          const clearlySlow =
            (sub.state === 'slow' && sub.repeatRatios.every((x) => x < (1 - rule.margin) / 2)) ||
            (sub.state === 'failed' && controlFine && overBudget(specs[i]!.id, jobs));
          const clearlyFine = sub.state === 'ok' && sub.repeatRatios.every((x) => x >= 1 - rule.margin / 2);
          if (clearlySlow || clearlyFine) decided.add(i);
        }
      }
    });
  }
  const first = results.find((a) => a !== null) ?? analyzeStage([], rule);
  const stage = stageOf(
    'retest',
    {
      ...first,
      groups: [...results.flatMap((a) => (a ? [a.groups[0]!] : [])), ...controls.filter((c) => c !== null)],
    },
    jobs,
  );
  return {
    subjects: results.map((a) => a?.groups[0] ?? null),
    controls: roundOf.map((k) => controls[k] ?? null),
    stage,
  };
}

/**
 * A host suspect found in the pairs stage that needs no re-test: ≥ 3 pairs, each slow with p < alpha², every
 * repeat of each below half of (1 − margin); and pairs without it measured fine (round-robin puts some beside each
 * of its pairs in every round, ≥ 4 hosts). A healthy host's jobs would all have to fall below ~0.37 of the reference.
 */
function clearlySlowHost(
  found: readonly GroupResult[],
  pairs: readonly GroupResult[],
  rule: DecisionRule,
  jobs: readonly LocateJob[],
): boolean {
  const hosts = new Set(found.flatMap((g) => g.hosts));
  const host = [...hosts].find((h) => found.every((g) => g.hosts.includes(h)));
  const clearly = (g: GroupResult): boolean =>
    (g.state === 'slow' &&
      (g.pValue ?? 1) < rule.alpha ** 2 &&
      g.repeatRatios.length >= 2 &&
      g.repeatRatios.every((x) => x < (1 - rule.margin) / 2)) ||
    overBudget(g.id, jobs);
  return (
    found.length >= 3 &&
    found.every(clearly) &&
    pairs.some((p) => host !== undefined && !p.hosts.includes(host) && p.state === 'ok')
  );
}

/** Every job (≥ 2) of the group stopped at its time budget before its first size finished: far slower than the others. */
const overBudget = (id: string, jobs: readonly LocateJob[]): boolean => {
  const mine = jobs.filter((j) => j.id === id);
  return mine.length >= 2 && mine.every((j) => j.capped && j.status === 'failed');
};

/** A pair's evidence in a sentence: the pairs stage, then its re-test where it had one (and its control). */
function pairText(e: PairEvidence, control: GroupResult | null): string {
  const state = (g: GroupResult): string =>
    g.state === 'slow'
      ? 'slow'
      : g.state === 'uncertain'
        ? 'below the margin, not consistently'
        : g.state === 'ok'
          ? 'fine'
          : 'failed';
  const first = e.pairs ? `${ratioText(e.pairs)} in the pairs stage (${state(e.pairs)})` : 'not in the pairs stage';
  const again = e.retest
    ? `, ${ratioText(e.retest)} in its re-test (${state(e.retest)}${control ? `, beside control ${control.hosts.join('-')}` : ''})`
    : '';
  return `${e.hosts.join('-')} ${first}${again}`;
}

/** Why a host is named and not its pairs as links, as decideHostOrLink found it. */
function hostReasonText(f: HostFinding, rule: DecisionRule): string {
  const slow = f.pairs.filter((e) => isBad(bestOf(e))).length;
  if (f.reason === 'every pair slow') return `every pair with it is slow (each pair's re-test where it had one)`;
  if (f.reason === 'most pairs slow') {
    return (
      `most pairs with it are slow again in their re-tests (${f.pairs.filter((e) => e.retest !== null && isBad(e.retest)).length} of its ${f.pairs.length}): ` +
      'one slow host, not that many slow links that share it'
    );
  }
  const range = (r: number[]): string => `${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)}`;
  if (f.reason === 'no pair fine') {
    return (
      `no pair with it is fine: ${slow} of its ${f.pairs.length} pairs slow, the others below the ${pct(rule.margin)} margin but not consistently` +
      (f.separated
        ? `; in the pairs stage its pairs at ${range(f.separated.mine)} of the reference, every pair without it above (${range(f.separated.others)})`
        : '')
    );
  }
  const d = f.degraded;
  if (d) {
    return (
      `every pair with it slower than every pair without it, in every repeat of the pairs stage (its ${d.mine.length} pairs at ` +
      `${range(d.mine.map((g) => g.ratio!))} of the reference, the other ${d.others.length} at ${range(d.others.map((g) => g.ratio!))}; ` +
      `rank test p ${formatP(d.pValue)}, ${formatP(d.corrected)} corrected over the hosts tested), ${slow} of them slow`
    );
  }
  const { mine, others } = f.separated!;
  return (
    `every pair with it slower than every pair without it in the pairs stage (its ${mine.length} pairs at ${range(mine)} of the reference, ` +
    `the other ${others.length} at ${range(others)}), ${slow} of them slow again in a re-test: one slow host, not ${slow} slow links`
  );
}

function confidenceOf(first: (number | null)[], second: number | null): number {
  const ps = [...first, second].map((p) => p ?? 1);
  return Math.max(0, 1 - Math.max(...ps));
}

/** The stage names in the order they run, for `notRun` of a run stopped early. */
type StageName = LocateStage['name'];

export async function runLocate(s: Measurer, argv: string[]): Promise<LocateDocument> {
  const { opts } = s;
  const hosts = opts.hosts;
  const startTime = new Date();
  const stages: LocateStage[] = [];
  const suspects: Suspect[] = [];
  const links: LinkSuspect[] = [];
  const cleared: LocateDocument['cleared'] = [];
  const notRun: string[] = [];
  let verdict = 'healthy' as Verdict;
  let reason = '';
  let advice: string | null = null;
  const inconclusive = (why: string, next: string): void => {
    if (verdict !== 'suspect') verdict = 'inconclusive';
    reason = reason ? `${reason}; ${why}` : why;
    advice ??= next;
  };
  const rerun = `collbench locate --hosts ${hosts.join(',')}${opts.npPerHost > 1 ? ` --np-per-host ${opts.npPerHost}` : ''}`;
  const durations = new DurationReference();
  const skipped = (name: StageName, detail = ''): void => {
    notRun.push(`${name}${detail}`);
  };

  // Read by conclude(), which stage 0 may call before stages 1 and 2 run.
  let pairsStage = analyzeStage([], opts.rule);
  let hostStage: StageAnalysis | null = null;

  // 0. With the nccl backend, the whole job first, with --links: a link NCCL's own timings name in one run needs no
  //    pairwise stage. Named: reported, and the other stages are not run; none named, or no links (the plugin not
  //    loaded, another profiler set): the stages go on as without it, and this job stands for the last stage's.
  let firstWholeJob: { groups: GroupSamples[]; jobs: LocateJob[] } | null = null;
  if (launchBackend(opts.runArgs) === 'nccl' && !s.interrupted) {
    s.progress(`stage whole-job (--links): ${hosts.length} hosts × ${opts.npPerHost}, NCCL's own link timings first`);
    const m = await s.measure([[{ id: 'whole-job', hosts, links: true }]], 1, {
      firstRepeat: 1,
      budget: durations.budget(hosts.length, opts.npPerHost),
    });
    if (m.groups.some((g) => g.failed === null && g.bySize.size > 0)) firstWholeJob = m;
    const found = m.links?.get('whole-job') ?? null;
    const named = found?.loaded ? found.named : [];
    if (found?.loaded && named.length > 0) {
      for (const n of named) links.push(linkFromWholeJob(n, found, hosts));
      verdict = 'suspect';
      stages.push(stageOf('whole-job', analyzeStage(measured(m.groups), opts.rule), m.jobs));
      s.progress(
        `whole-job: --links named ${named.length === 1 ? 'a link' : `${named.length} links`}: ` +
          'the host-groups, pairs and re-test stages are not needed',
      );
      return conclude(
        `${links.map((l) => `link ${l.hosts.join(' - ')}`).join(', ')} named by NCCL's own timings in one run of the ` +
          'whole job (--links); the pairwise stage was skipped',
      );
    }
    s.progress(
      found === null
        ? 'whole-job: no links in its report (the job failed, or the run could not give them): going on with the stages'
        : !found.loaded
          ? "whole-job: NCCL did not load collbench's profiler plugin: no links; going on with the stages"
          : 'whole-job: --links named no link: going on with the stages',
    );
  }

  // 1. Each host alone (K ranks), all at once.
  let hostAttr: Attribution | null = null;
  let hostMeasured: GroupSamples[] | null = null;
  if (opts.npPerHost > 1) {
    if (s.interrupted) skipped('host-groups');
    else {
      s.progress(`stage host-groups: ${hosts.length} hosts at once, ${opts.repeats} repeats`);
      const m = await s.measure([hosts.map((h) => ({ id: h, hosts: [h] }))], opts.repeats, {
        firstRepeat: 1,
        budget: durations.budget(1, opts.npPerHost),
      });
      hostMeasured = measured(m.groups);
      hostStage = analyzeStage(hostMeasured, opts.rule);
      hostAttr = attributeHostGroups(hostStage.groups);
      stages.push(stageOf('host-groups', hostStage, m.jobs));
    }
  }

  // 2. Pairs, round-robin, disjoint pairs at once; one repeat at a time, so that a pair measured slow runs fewer
  //    iterations in the next (its job then takes about as long as a healthy one).
  const rounds = pairRounds(hosts.length, opts.schedule).map((round) =>
    round.map(([a, b]): GroupSpec => ({ id: pairId(hosts[a]!, hosts[b]!), hosts: [hosts[a]!, hosts[b]!] })),
  );
  s.progress(`stage pairs: ${rounds.length} rounds × ${opts.repeats} repeats`);
  const pairSamples = new Map<string, GroupSamples>();
  const pairJobs: LocateJob[] = [];
  let repeatsDone = 0;
  for (let r = 1; r <= opts.repeats && !s.interrupted; r++) {
    const ratioOf = new Map(pairsStage.groups.map((g) => [g.id, g.state === 'slow' ? g.ratio : null]));
    const step = rounds.map((round) =>
      round.map((g) => ({ ...g, iterations: iterationsFor(opts.iterations, ratioOf.get(g.id) ?? null) })),
    );
    const m = await s.measure(step, 1, { firstRepeat: r, budget: durations.budget(2, opts.npPerHost) });
    merge(pairSamples, m.groups);
    pairJobs.push(...m.jobs);
    pairsStage = analyzeStage(measured(pairSamples.values()), opts.rule);
    const fine = new Set(pairsStage.groups.filter((g) => g.state === 'ok').map((g) => g.id));
    durations.note(m.jobs, (id) => fine.has(id));
    if (m.jobs.length === step.flat().length && m.jobs.every((j) => j.status !== 'interrupted')) repeatsDone = r;
  }
  if (repeatsDone < opts.repeats) skipped('pairs', ` (${repeatsDone} of ${opts.repeats} repeats finished)`);
  const pm = { groups: measured(pairSamples.values()), jobs: pairJobs };
  stages.push(stageOf('pairs', pairsStage, pm.jobs));
  const pairAttr = attributePairs(hosts, pairsStage.groups);
  const pairBudget = (): JobBudget => durations.budget(2, opts.npPerHost);

  const bad = [
    ...(hostAttr?.hostSuspects ?? []).map((h) => ({
      kind: 'host' as const,
      stage: 'host-groups' as const,
      hosts: [h.host],
      found: h.pairs,
    })),
    ...pairAttr.hostSuspects
      .filter((h) => !(hostAttr?.hostSuspects ?? []).some((x) => x.host === h.host))
      .map((h) => ({ kind: 'host' as const, stage: 'pairs' as const, hosts: [h.host], found: h.pairs })),
    ...pairAttr.linkSuspects.map((p) => ({
      kind: 'link' as const,
      stage: 'pairs' as const,
      hosts: p.hosts,
      found: [p],
    })),
  ];
  /** A suspect the run had no time to re-test: named from its first stage alone when slow there significantly. */
  const unconfirmed = (b: (typeof bad)[number]): void => {
    // slow with p < alpha, or stopped at its budget before its first size (far slower than the others)
    const capped = (g: GroupResult): boolean => pm.jobs.some((j) => j.id === g.id && j.capped && j.status === 'failed');
    const slow = b.found.filter((g) => g.state === 'slow' || capped(g));
    if (slow.length !== b.found.length) return;
    const found = b.found.map((g) => `${g.hosts.join('-')} ${ratioText(g)}`).join(', ');
    const confidence = confidenceOf(
      slow.map((g) => g.pValue ?? 0),
      0,
    );
    const ratios = slow.filter((g) => g.ratio !== null).map((g) => g.ratio!);
    const ratio = ratios.length ? medianOf(ratios) : null;
    const evidence = `${b.kind === 'host' ? 'every pair measured with it is slow' : 'only this pair is slow'}: ${found}; not re-tested (partial run)`;
    if (b.kind === 'host')
      suspects.push({ host: b.hosts[0]!, confidence, ratio, stage: b.stage, evidence, confirmedBy: null });
    else links.push({ hosts: [b.hosts[0]!, b.hosts[1]!], confidence, ratio, evidence, confirmedBy: null });
    verdict = 'suspect';
  };

  if (s.interrupted) {
    for (const b of bad) unconfirmed(b);
    inconclusive(`${s.stopReason ?? 'interrupted'} before the stages finished`, `run it again: ${rerun}`);
    skipped('retest');
  } else if (
    pm.groups.length &&
    pairsStage.groups.filter((g) => g.state === 'failed').length * 2 > pairsStage.groups.length
  ) {
    const first = pairsStage.groups.find((g) => g.state === 'failed')!;
    inconclusive(
      `most pair jobs failed (${first.id}: ${first.failed})`,
      'check that a plain all_reduce_perf --np 2 --hosts runs between two of these hosts',
    );
  } else if (hosts.length === 2 && opts.npPerHost === 1) {
    inconclusive(
      '2 hosts make one pair: there is no second pair to compare it with',
      `add a third host known to be good: ${rerun},<good host>`,
    );
  } else {
    const suspectHosts = new Set(bad.flatMap((b) => (b.kind === 'host' ? b.hosts : [])));
    if (suspectHosts.size * 2 > hosts.length) {
      inconclusive(
        `${suspectHosts.size} of ${hosts.length} hosts look slow: with most hosts slow there is no good reference`,
        'run locate on a subset of hosts that includes some known to be good',
      );
    } else {
      const suspected = new Set(bad.flatMap((b) => b.hosts));
      const good = goodHosts(hosts, pairsStage.groups, suspected);
      // every host, known-good ones first: partners come from the good ones, controls may take the rest
      const ranked = [...good, ...goodHosts(hosts, pairsStage.groups, new Set(good))];
      // Every suspect not already clearly slow and every group below the margin but not consistently, re-tested
      // together: packed into rounds of disjoint hosts, each beside its own control, so that the re-tests take a few
      // rounds whatever their number.
      // 'other': a suspect host's pair that looked fine in the pairs stage (suspectHostPairs), re-tested with its slow ones.
      type Item = { subject: RetestSubject; alone: boolean } & (
        { kind: 'suspect'; b: (typeof bad)[number] } | { kind: 'uncertain' | 'other'; u: GroupResult }
      );
      const items: Item[] = [];
      for (const b of bad) {
        if (s.interrupted) {
          unconfirmed(b);
          continue;
        }
        if (b.kind === 'host' && good.length === 0) {
          inconclusive(`no known-good partner to re-test ${b.hosts[0]} with`, 'add hosts known to be good');
          continue;
        }
        if (
          b.kind === 'host' &&
          b.stage === 'pairs' &&
          clearlySlowHost(b.found, pairsStage.groups, opts.rule, pm.jobs)
        ) {
          // Sequential decision: the pairs stage already measured it beside fine pairs, in every repeat, far below.
          const found = b.found
            .map(
              (g) =>
                `${g.hosts.join('-')} ${ratioText(g)}${g.repeatRatios.length ? ` [${g.repeatRatios.map((x) => x.toFixed(2)).join(' ')}]` : ''}`,
            )
            .join(', ');
          const ratios = b.found.filter((g) => g.ratio !== null).map((g) => g.ratio!);
          suspects.push({
            host: b.hosts[0]!,
            confidence: confidenceOf(
              b.found.map((g) => g.pValue ?? 0),
              0,
            ),
            ratio: ratios.length ? medianOf(ratios) : null,
            stage: 'pairs',
            confirmedBy: 'pairs',
            evidence: `every pair with it is clearly slow, in every repeat, beside pairs measured fine at the same time: ${found}; not re-tested (nothing to add)`,
          });
          verdict = 'suspect';
          continue;
        }
        const foundRatio = Math.min(...b.found.map((g) => g.ratio ?? 1));
        items.push({
          kind: 'suspect',
          b,
          alone: b.stage === 'host-groups' && hostStage !== null,
          subject: { hosts: b.hosts, foundRatio },
        });
      }
      // Below the margin but not in every repeat or not significantly: measured again beside a control; cleared
      // when fine there (at the full margin: nothing measured it beyond), else the verdict cannot be healthy.
      const uncertain = [...pairAttr.uncertain, ...(hostAttr?.uncertain ?? [])].filter(
        (g) => !g.hosts.some((h) => suspects.some((x) => x.host === h)),
      );
      const limit = maxUncertain(pairsStage.groups.length + (hostStage?.groups.length ?? 0));
      if (uncertain.length > limit) {
        inconclusive(
          `${uncertain.length} groups below the margin but not consistently (more than ${limit}: ${uncertain.map((g) => g.hosts.join('-')).join(', ')}): noise`,
          `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`,
        );
      } else if (!s.interrupted) {
        for (const u of uncertain)
          items.push({
            kind: 'uncertain',
            u,
            alone: u.hosts.length === 1 && hostStage !== null,
            subject: { hosts: u.hosts, foundRatio: null },
          });
        const hostSuspects = new Set([
          ...suspects.map((x) => x.host),
          ...bad.filter((b) => b.kind === 'host').flatMap((b) => b.hosts),
        ]);
        for (const u of suspectHostPairs(pairsStage.groups, hostSuspects))
          items.push({ kind: 'other', u, alone: false, subject: { hosts: u.hosts, foundRatio: null } });
      }
      /**
       * The pairs' re-tests judged on all the evidence (decideHostOrLink): a host, a link, or neither, each sentence
       * true of the pairs and re-tests; then what was not named is cleared (fine in its re-test) or inconclusive.
       */
      const judgePairs = (batch: Item[], r: Retest): void => {
        const evidence = pairEvidence(pairsStage.groups, r.subjects);
        const controlOf = (g: GroupResult | null): GroupResult | null =>
          g === null ? null : (r.controls[r.subjects.indexOf(g)] ?? null);
        const before = new Set(suspects.map((x) => x.host));
        const decision = decideHostOrLink(evidence, degradedHosts(hosts, pairsStage.groups, opts.rule), before);
        if ((before.size + decision.hosts.length) * 2 > hosts.length) {
          inconclusive(
            `${before.size + decision.hosts.length} of ${hosts.length} hosts slow in their re-tests: with most hosts slow there is no good reference`,
            'run locate on a subset of hosts that includes some known to be good',
          );
          decision.hosts = [];
          decision.links = [];
        }
        for (const f of decision.hosts) {
          const slow = f.pairs.filter((e) => isBad(bestOf(e)));
          const ratios = slow.map((e) => bestOf(e).ratio).filter((x): x is number => x !== null);
          suspects.push({
            host: f.host,
            confidence: confidenceOf(
              [...slow.map((e) => bestOf(e).pValue ?? 0), ...(f.degraded ? [f.degraded.corrected] : [])],
              0,
            ),
            ratio: ratios.length ? medianOf(ratios) : null,
            stage: 'pairs',
            confirmedBy: 'retest',
            evidence: `${hostReasonText(f, opts.rule)}: ${f.pairs.map((e) => pairText(e, controlOf(e.retest))).join('; ')}`,
          });
          verdict = 'suspect';
        }
        for (const l of decision.links) {
          const e = l.pair;
          links.push({
            hosts: e.hosts,
            confidence: confidenceOf([e.pairs!.pValue ?? 0], e.retest!.pValue ?? 0),
            ratio: e.retest!.ratio,
            confirmedBy: 'retest',
            evidence:
              `slow in the pairs stage and again in its re-test: ${pairText(e, controlOf(e.retest))}; both hosts are fine with others: ` +
              e.hosts.map((h, i) => `${h} with ${l.fineWith[i]!.join(', ')}`).join('; '),
          });
          verdict = 'suspect';
        }
        const namedHosts = new Set(suspects.map((x) => x.host));
        const namedLinks = new Set(links.map((l) => [...l.hosts].sort().join('+')));
        const explained = (hs: string[]): boolean =>
          hs.some((h) => namedHosts.has(h)) || namedLinks.has([...hs].sort().join('+'));
        batch.forEach((x, i) => {
          const subject = r.subjects[i] ?? null;
          const control = r.controls[i] ?? null;
          if (x.kind === 'suspect') {
            const b = x.b;
            if (explained(b.hosts)) return;
            if (subject === null) {
              unconfirmed(b);
              return;
            }
            const found = b.found.map((g) => `${g.hosts.join('-')} ${ratioText(g)}`).join(', ');
            const again = `re-test ${subject.hosts.join('-')}: ${ratioText(subject)}${control ? ` beside control ${control.hosts.join('-')}` : ''}`;
            const lonely = decision.undecided.find((u) => u.pair.retest === subject);
            if (subject.state === 'ok') {
              // The re-test (a control beside it, one repeat more) is the closer look: it clears a burst of load.
              cleared.push({
                hosts: b.hosts,
                evidence: `slow in the pairs stage (${found}), fine in its re-test (${again}): transient load, or an intermittent fault`,
              });
            } else if (lonely) {
              inconclusive(
                `${subject.hosts.join('-')} slow in the pairs stage and again in its re-test (${ratioText(subject)}), but ${lonely.host} was measured fine with no other host ` +
                  'and not every pair with it is slow: a slow host or a slow link cannot be told apart',
                `run it again, with more repeats: ${rerun} --repeats ${opts.repeats + 2}`,
              );
            } else {
              inconclusive(
                `${b.hosts.join(' - ')} was slow (${found}) but not consistently in its re-test (${ratioText(subject)}): intermittent, or noise`,
                `run it again, with more repeats: ${rerun} --repeats ${opts.repeats + 2}`,
              );
            }
            return;
          }
          const u = x.u;
          if (subject === null) return;
          if (subject.state === 'ok') {
            if (x.kind === 'uncertain')
              cleared.push({
                hosts: u.hosts,
                evidence: `below the margin in the pairs stage (${ratioText(u)}), fine in its re-test (${ratioText(subject)})`,
              });
          } else if (!explained(u.hosts)) {
            const first =
              x.kind === 'uncertain'
                ? `below the margin in the pairs stage (${ratioText(u)}, repeats ${u.repeatRatios.map((v) => v.toFixed(2)).join(' ')})`
                : `fine in the pairs stage (${ratioText(u)}) but its host's other pairs slow, re-tested:`;
            inconclusive(
              `${u.hosts.join('-')} ${first} and below the margin in its re-test (${ratioText(subject)}), not consistently enough to name it`,
              `more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`,
            );
          }
        });
      };
      for (const alone of [true, false]) {
        const batch = items.filter((x) => x.alone === alone);
        if (!batch.length) continue;
        if (s.interrupted) {
          for (const x of batch) if (x.kind === 'suspect') unconfirmed(x.b);
          continue;
        }
        s.progress(
          `stage retest: ${batch.map((x) => `${x.subject.hosts.join(' - ')}${x.kind === 'suspect' ? '' : ` (${x.kind})`}`).join(', ')}`,
        );
        const r = alone
          ? await retest(
              s,
              batch.map((x) => x.subject),
              ranked,
              { stage: hostStage!, groups: hostMeasured! },
              () => durations.budget(1, opts.npPerHost),
              true,
            )
          : await retest(
              s,
              batch.map((x) => x.subject),
              ranked,
              { stage: pairsStage, groups: pm.groups },
              pairBudget,
              false,
            );
        stages.push(r.stage);
        if (alone) {
          batch.forEach((x, i) => {
            const subject = r.subjects[i] ?? null;
            const control = r.controls[i] ?? null;
            if (x.kind === 'suspect') {
              const b = x.b;
              if (subject === null) {
                unconfirmed(b);
                return;
              }
              const found = b.found.map((g) => `${g.hosts.join('-')} ${ratioText(g)}`).join(', ');
              const again = `re-test ${subject.hosts.join('-')}: ${ratioText(subject)}${control ? ` beside control ${control.hosts.join('-')}` : ''}`;
              if (subject.state === 'slow' || subject.state === 'failed') {
                const confidence = confidenceOf(
                  b.found.map((g) => g.pValue ?? 0),
                  subject.pValue ?? 0,
                );
                // re-tested alone: only host-groups suspects (a host whose own ranks are slow together)
                suspects.push({
                  host: b.hosts[0]!,
                  confidence,
                  ratio: subject.ratio,
                  stage: b.stage,
                  evidence: `its own ranks are slow together: ${found}; ${again}`,
                  confirmedBy: 'retest',
                });
                verdict = 'suspect';
              } else if (subject.state === 'ok') {
                // The re-test (a control beside it, one repeat more) is the closer look: it clears a burst of load.
                cleared.push({
                  hosts: b.hosts,
                  evidence: `slow in the pairs stage (${found}), fine in its re-test (${again}): transient load, or an intermittent fault`,
                });
              } else {
                inconclusive(
                  `${b.hosts.join(' - ')} was slow (${found}) but not consistently in its re-test (${ratioText(subject)}): intermittent, or noise`,
                  `run it again, with more repeats: ${rerun} --repeats ${opts.repeats + 2}`,
                );
              }
              return;
            }
            const u = x.u;
            if (subject === null) return;
            if (subject.state === 'ok') {
              cleared.push({
                hosts: u.hosts,
                evidence: `below the margin in the pairs stage (${ratioText(u)}), fine in its re-test (${ratioText(subject)})`,
              });
            } else if (!u.hosts.some((h) => suspects.some((y) => y.host === h))) {
              // not explained by a host named in this batch
              inconclusive(
                `${u.hosts.join('-')} below the margin in the pairs stage (${ratioText(u)}, repeats ${u.repeatRatios.map((v) => v.toFixed(2)).join(' ')}) and again in its re-test (${ratioText(subject)}), not consistently enough to name it`,
                `more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`,
              );
            }
          });
          continue;
        }
        judgePairs(batch, r);
      }
      if (s.interrupted) {
        skipped('retest', ' (some)');
        inconclusive(`${s.stopReason ?? 'interrupted'} before the re-tests finished`, `run it again: ${rerun}`);
      }
    }
  }

  // 3. The whole job: the symptom (reported against the pairs' reference; not used to decide), last, within a
  //    budget from the healthy pairs' durations.
  if (s.interrupted) skipped('whole-job');
  else {
    s.progress(`stage whole-job: ${hosts.length} hosts × ${opts.npPerHost}`);
    // a named host or link caps the whole job: iterations by time, as for a slow pair
    const namedRatios = [...suspects, ...links].map((x) => x.ratio).filter((r): r is number => r !== null);
    const iterations = iterationsFor(opts.iterations, namedRatios.length ? Math.min(...namedRatios) : null);
    // The first whole job (--links, nothing named) is this stage's measurement: not run twice.
    const whole =
      firstWholeJob ??
      (await s.measure([[{ id: 'whole-job', hosts, iterations }]], 1, {
        firstRepeat: 1,
        budget: durations.budget(hosts.length, opts.npPerHost),
      }));
    const okPairs = pm.groups.filter((g) => pairsStage.groups.find((r) => r.id === g.id)?.state === 'ok');
    stages.unshift(
      stageOf(
        'whole-job',
        analyzeStage(measured(whole.groups), opts.rule, okPairs, 'the pairs that were fine in the pairs stage'),
        whole.jobs,
      ),
    );
    if (s.interrupted) skipped('whole-job', ' (stopped)');
  }

  return conclude(null);

  /** The verdict and the document, from what the stages found (`linksReason`: the whole job's --links named). */
  function conclude(linksReason: string | null): LocateDocument {
    // A suspect confirmed beside a control stands whatever the noise; "healthy" needs measurements that repeat.
    if (verdict !== 'suspect' && pairsStage.noise !== null && pairsStage.noise > opts.rule.maxNoise) {
      inconclusive(
        `noise too high: the same pair's busbw moved by ${pct(pairsStage.noise)} between repeats (limit ${pct(opts.rule.maxNoise)}), ` +
          'so a slowdown of that size could hide in it',
        `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`,
      );
    }
    // A host every pair of which is slower than every pair without it, within the margin: a pattern, not noise.
    const degraded: DegradedHost[] = [];
    if (verdict === 'healthy' && opts.npPerHost === 1) {
      for (const d of degradedHosts(hosts, pairsStage.groups, opts.rule)) {
        const range = (gs: GroupResult[]): string => {
          const r = gs.map((g) => g.ratio!).sort((a, b) => a - b);
          return `${r[0]!.toFixed(2)}-${r.at(-1)!.toFixed(2)}`;
        };
        degraded.push({
          host: d.host,
          confidence: Math.max(0, 1 - d.corrected),
          ratio: d.ratio,
          evidence:
            `every pair with it slower than every pair without it, in every repeat: its ${d.mine.length} pairs at ${range(d.mine)} of the reference, ` +
            `the other ${d.others.length} at ${range(d.others)}; rank test of its pairs' jobs against the others' p ${formatP(d.pValue)} ` +
            `(${formatP(d.corrected)} corrected over the hosts tested); each pair alone within the ${pct(opts.rule.margin)} margin or cleared`,
        });
      }
      if (degraded.length) verdict = 'degraded';
    }
    const partial = notRun.length > 0;
    if (verdict === 'degraded') {
      reason =
        `${degraded.map((d) => `host ${d.host} (its pairs at ${pct(d.ratio)} of the others', confidence ${d.confidence.toFixed(4)})`).join(', ')} ` +
        `slower than the rest, less than the ${pct(opts.rule.margin)} margin that names a suspect${cleared.length ? `; cleared: ${cleared.map((c) => c.hosts.join('-')).join(', ')}` : ''}`;
    } else if (verdict === 'healthy') {
      const worst = [...pairsStage.groups, ...(hostStage?.groups ?? [])]
        .filter((g) => g.ratio !== null)
        .sort((a, b) => a.ratio! - b.ratio!)[0];
      reason = cleared.length
        ? `nothing slow in its re-test; cleared: ${cleared.map((c) => c.hosts.join('-')).join(', ')}`
        : `no group slower than ${pct(1 - opts.rule.margin)} of the reference${worst ? ` (slowest ${worst.hosts.join('-')}: ${ratioText(worst)})` : ''}`;
    } else if (verdict === 'suspect' && linksReason !== null) {
      reason = linksReason;
    } else if (verdict === 'suspect') {
      const named = [...suspects.map((x) => `host ${x.host}`), ...links.map((l) => `link ${l.hosts.join(' - ')}`)];
      const all = [...suspects, ...links];
      const how = all.some((x) => x.confirmedBy === null)
        ? 'slow in the pairwise stage (not every one re-tested: partial)'
        : all.every((x) => x.confirmedBy === 'pairs')
          ? 'clearly slow in every repeat of the pairwise stage'
          : 'slow in the pairwise stage and again in the re-test (or clearly slow there)';
      reason = `${named.join(', ')} ${how}${reason ? `; also: ${reason}` : ''}`;
    }
    if (partial) reason = `partial (not run: ${notRun.join(', ')}): ${reason}`;
    return {
      kind: LOCATE_KIND,
      schemaVersion: LOCATE_SCHEMA_VERSION,
      verdict,
      exitCode:
        verdict === 'healthy'
          ? EXIT.OK
          : verdict === 'suspect'
            ? EXIT.WRONG_RESULTS
            : verdict === 'degraded'
              ? EXIT_DEGRADED
              : EXIT.INCONCLUSIVE,
      reason,
      advice: verdict === 'inconclusive' || partial ? advice : null,
      startTime: isoLocal(startTime),
      endTime: isoLocal(new Date()),
      argv: ['collbench', 'locate', ...argv],
      hosts,
      npPerHost: opts.npPerHost,
      repeats: opts.repeats,
      runArgs: opts.runArgs,
      rule: {
        ...opts.rule,
        reference: 'median of the best third of the groups per size, or a control pair measured at the same time',
        test: 'one-sided Mann-Whitney U (normal approximation, tie-corrected) of the per-iteration busbw ratios',
      },
      maxTimeSec: opts.maxTimeSec,
      scheduleNote: opts.scheduleNote,
      partial,
      notRun,
      suspects,
      links,
      degraded,
      cleared,
      stages,
    };
  }
}

/** A link named by --links in the whole job, as locate names links: its hosts as locate knows them (the report has
 *  each process's host name), the ratio of its rate to the other links' median, and as confidence the share of
 *  row-halves in which each of its channels was slow (the judge's repeats). */
function linkFromWholeJob(n: SlowLink, report: ReportLinks, hosts: readonly string[]): LinkSuspect {
  const ours = (h: string): string =>
    hosts.find((x) => x === h) ?? hosts.find((x) => shortHost(x) === shortHost(h)) ?? h;
  const channels = report.links.filter((l) => l.rank === n.rank && l.peer === n.peer && n.channels.includes(l.channel));
  const confidence = Math.min(1, ...channels.map((l) => (l.countedHalves ? l.slowHalves / l.countedHalves : 0)));
  return {
    hosts: [ours(n.host), ours(n.peerHost)],
    confidence,
    ratio: n.othersGbps > 0 ? n.gbps / n.othersGbps : null,
    evidence: `NCCL's own timings in one run of the whole job (--links): ${slowLinkSentence(n)}`,
    confirmedBy: 'links',
  };
}

const pct = (v: number): string => `${(v * 100).toFixed(0)}%`;
/**
 * How many groups below the margin but not consistently are re-tested (all together, in a few rounds) before the
 * stage is called noise: a fixed share of the groups, at least 3. Noise puts each healthy group below the margin
 * with some small probability, so their expected number grows with the groups (at 1024 hosts a handful is
 * normal); more than UNCERTAIN_SHARE of them means the noise is the size of the margin itself.
 */
export const UNCERTAIN_SHARE = 0.05;
const maxUncertain = (groups: number): number => Math.max(3, Math.ceil(UNCERTAIN_SHARE * groups));
