// The stages of `collbench locate` in order, and the verdict: whole job, host groups, pairwise rounds, re-tests of
// each suspect beside a control, then healthy / suspect / inconclusive with the reason and what to run next. It
// measures only through a Measurer, so the same flow runs real jobs (commands/locate.ts) and simulated ones
// (scripts/locate-sim.ts).
import { EXIT } from '../core/errors.js';
import { isoLocal } from '../report/exporters/json.js';
import {
  analyzeStage, attributeHostGroups, attributePairs, formatP, goodHosts,
  type Attribution, type GroupResult, type GroupSamples, type StageAnalysis,
} from './decide.js';
import {
  LOCATE_KIND, LOCATE_SCHEMA_VERSION,
  type LinkSuspect, type LocateDocument, type LocateJob, type LocateStage, type Suspect, type Verdict,
} from './document.js';
import type { LocateOptions } from './options.js';
import { pairRounds } from './schedule.js';

/** A group of hosts measured together in one job. */
export interface GroupSpec { id: string; hosts: string[] }

/** Where the measurements come from. */
export interface Measurer {
  readonly opts: LocateOptions;
  readonly interrupted: boolean;
  progress(line: string): void;
  /** Runs `rounds` (the groups of a round at the same time) `repeats` times; per group its samples per size and repeat. */
  measure(rounds: GroupSpec[][], repeats: number): Promise<{ groups: GroupSamples[]; jobs: LocateJob[] }>;
}

function stageOf(name: LocateStage['name'], a: StageAnalysis, jobs: LocateJob[]): LocateStage {
  return { name, referenceNote: a.referenceNote, reference: a.reference, noise: a.noise, groups: a.groups, jobs };
}

const pairId = (a: string, b: string): string => `${a}+${b}`;
const ratioText = (g: GroupResult): string => (g.ratio === null ? `failed (${g.failed})` : `${(g.ratio * 100).toFixed(0)}% of the reference (p ${formatP(g.pValue)})`);

interface Retest { subject: GroupResult; control: GroupResult | null; stage: LocateStage }

/**
 * One suspect again: with a known-good partner (or the link itself), beside a control pair of two other hosts
 * measured at the same time (known-good ones first; any others when there are not enough), so that both see the
 * same load. `ranked` is every host, best first. A host found by the host-groups stage is re-tested alone (its
 * own K ranks) beside another host alone; `reference` stands in for a control when there is none.
 */
async function retest(s: Measurer, hostsUnder: string[], ranked: string[], reference: { stage: StageAnalysis; groups: GroupSamples[] },
  alone = false): Promise<Retest> {
  const partner = hostsUnder.length === 1 && !alone ? ranked.find((g) => !hostsUnder.includes(g)) : undefined;
  const subjectHosts = partner !== undefined ? [hostsUnder[0]!, partner] : hostsUnder;
  const others = ranked.filter((g) => !subjectHosts.includes(g));
  const subject = { id: `retest:${subjectHosts.join('+')}`, hosts: subjectHosts };
  const round: { id: string; hosts: string[] }[] = [subject];
  let controlId: string | null = null;
  const controlSize = alone ? 1 : 2;
  if (others.length >= controlSize) {
    controlId = `control:${others.slice(0, controlSize).join('+')}`;
    round.push({ id: controlId, hosts: others.slice(0, controlSize) });
  }
  // One repeat more than the stage that raised it: a suspect must be slow in every one of them.
  const { groups, jobs } = await s.measure([round], s.opts.repeats + 1);
  const subjectSamples = groups.find((g) => g.id === subject.id)!;
  // Without a control the pairs stage's reference groups stand in for it (measured earlier).
  const refIds = new Set(reference.stage.groups.filter((g) => g.state === 'ok').sort((a, b) => (b.ratio ?? 0) - (a.ratio ?? 0))
    .slice(0, Math.max(1, Math.ceil(reference.stage.groups.length / 3))).map((g) => g.id));
  const control = controlId ? groups.filter((g) => g.id === controlId) : reference.groups.filter((g) => refIds.has(g.id));
  const note = controlId ? undefined : `the pairs stage's best pairs (no two other hosts for a control)`;
  const a = analyzeStage([subjectSamples], s.opts.rule, control, note);
  if (controlId) {
    const c = analyzeStage(groups.filter((g) => g.id === controlId), s.opts.rule, control).groups[0]!;
    a.groups.push(c);
  }
  return { subject: a.groups[0]!, control: a.groups[1] ?? null, stage: stageOf('retest', a, jobs) };
}

function confidenceOf(first: (number | null)[], second: number | null): number {
  const ps = [...first, second].map((p) => p ?? 1);
  return Math.max(0, 1 - Math.max(...ps));
}

export async function runLocate(s: Measurer, argv: string[]): Promise<LocateDocument> {
  const { opts } = s;
  const hosts = opts.hosts;
  const startTime = new Date();
  const stages: LocateStage[] = [];
  const suspects: Suspect[] = [];
  const links: LinkSuspect[] = [];
  const cleared: LocateDocument['cleared'] = [];
  let verdict = 'healthy' as Verdict;
  let reason = '';
  let advice: string | null = null;
  const inconclusive = (why: string, next: string): void => {
    if (verdict !== 'suspect') verdict = 'inconclusive';
    reason = reason ? `${reason}; ${why}` : why;
    advice ??= next;
  };
  const rerun = `collbench locate --hosts ${hosts.join(',')}${opts.npPerHost > 1 ? ` --np-per-host ${opts.npPerHost}` : ''}`;

  // 1. The whole job: the symptom (reported against the pairs' reference; not used to decide).
  s.progress(`stage whole-job: ${hosts.length} hosts × ${opts.npPerHost}`);
  const whole = await s.measure([[{ id: 'whole-job', hosts }]], 1);

  // 2. Each host alone (K ranks), all at once.
  let hostAttr: Attribution | null = null;
  let hostStage: StageAnalysis | null = null;
  let hostMeasured: GroupSamples[] | null = null;
  if (opts.npPerHost > 1 && !s.interrupted) {
    s.progress(`stage host-groups: ${hosts.length} hosts at once, ${opts.repeats} repeats`);
    const m = await s.measure([hosts.map((h) => ({ id: h, hosts: [h] }))], opts.repeats);
    hostStage = analyzeStage(m.groups, opts.rule);
    hostMeasured = m.groups;
    hostAttr = attributeHostGroups(hostStage.groups);
    stages.push(stageOf('host-groups', hostStage, m.jobs));
  }

  // 3. Pairs, round-robin, disjoint pairs at once.
  const rounds = pairRounds(hosts.length, opts.schedule).map((round) => round.map(([a, b]) => ({ id: pairId(hosts[a]!, hosts[b]!), hosts: [hosts[a]!, hosts[b]!] })));
  s.progress(`stage pairs: ${rounds.length} rounds × ${opts.repeats} repeats`);
  const pm = s.interrupted ? { groups: [], jobs: [] } : await s.measure(rounds, opts.repeats);
  const pairsStage = analyzeStage(pm.groups, opts.rule);
  const wholeStage = analyzeStage(whole.groups, opts.rule, pm.groups.filter((g) => pairsStage.groups.find((r) => r.id === g.id)?.state === 'ok'),
    'the pairs that were fine in the pairs stage');
  stages.unshift(stageOf('whole-job', wholeStage, whole.jobs));
  stages.push(stageOf('pairs', pairsStage, pm.jobs));
  const pairAttr = attributePairs(hosts, pairsStage.groups);

  if (s.interrupted) {
    inconclusive('interrupted before the stages finished', `run it again: ${rerun}`);
  } else if (pm.groups.length && pairsStage.groups.filter((g) => g.state === 'failed').length * 2 > pairsStage.groups.length) {
    const first = pairsStage.groups.find((g) => g.state === 'failed')!;
    inconclusive(`most pair jobs failed (${first.id}: ${first.failed})`, 'check that a plain all_reduce_perf --np 2 --hosts runs between two of these hosts');
  } else if (hosts.length === 2 && opts.npPerHost === 1) {
    inconclusive('2 hosts make one pair: there is no second pair to compare it with', `add a third host known to be good: ${rerun},<good host>`);
  } else {
    const bad = [...(hostAttr?.hostSuspects ?? []).map((h) => ({ kind: 'host' as const, stage: 'host-groups' as const, hosts: [h.host], found: h.pairs })),
      ...pairAttr.hostSuspects.filter((h) => !(hostAttr?.hostSuspects ?? []).some((x) => x.host === h.host))
        .map((h) => ({ kind: 'host' as const, stage: 'pairs' as const, hosts: [h.host], found: h.pairs })),
      ...pairAttr.linkSuspects.map((p) => ({ kind: 'link' as const, stage: 'pairs' as const, hosts: p.hosts, found: [p] }))];
    const suspectHosts = new Set(bad.flatMap((b) => (b.kind === 'host' ? b.hosts : [])));
    if (suspectHosts.size * 2 > hosts.length) {
      inconclusive(`${suspectHosts.size} of ${hosts.length} hosts look slow: with most hosts slow there is no good reference`,
        'run locate on a subset of hosts that includes some known to be good');
    } else {
      const suspected = new Set(bad.flatMap((b) => b.hosts));
      const good = goodHosts(hosts, pairsStage.groups, suspected);
      // every host, known-good ones first: partners come from the good ones, controls may take the rest
      const ranked = [...good, ...goodHosts(hosts, pairsStage.groups, new Set(good))];
      for (const b of bad) {
        if (s.interrupted) break;
        if (b.kind === 'host' && good.length === 0) { inconclusive(`no known-good partner to re-test ${b.hosts[0]} with`, 'add hosts known to be good'); continue; }
        s.progress(`stage retest: ${b.hosts.join(' - ')}`);
        const r = b.stage === 'host-groups' && hostStage && hostMeasured
          ? await retest(s, b.hosts, ranked, { stage: hostStage, groups: hostMeasured }, true)
          : await retest(s, b.hosts, ranked, { stage: pairsStage, groups: pm.groups });
        stages.push(r.stage);
        const found = b.found.map((g) => `${g.hosts.join('-')} ${ratioText(g)}`).join(', ');
        const again = `re-test ${r.subject.hosts.join('-')}: ${ratioText(r.subject)}${r.control ? ` beside control ${r.control.hosts.join('-')}` : ''}`;
        if (r.subject.state === 'slow' || r.subject.state === 'failed') {
          const confidence = confidenceOf(b.found.map((g) => g.pValue ?? 0), r.subject.pValue ?? 0);
          const what = b.stage === 'host-groups' ? 'its own ranks are slow together' : `every pair with it is slow`;
          if (b.kind === 'host') suspects.push({ host: b.hosts[0]!, confidence, ratio: r.subject.ratio, stage: b.stage, evidence: `${what}: ${found}; ${again}` });
          else links.push({ hosts: [b.hosts[0]!, b.hosts[1]!], confidence, ratio: r.subject.ratio, evidence: `only this pair is slow: ${found}; both hosts are fine with others; ${again}` });
          verdict = 'suspect';
        } else if (r.subject.state === 'ok') {
          // The re-test (a control beside it, one repeat more) is the closer look: it clears a burst of load.
          cleared.push({ hosts: b.hosts, evidence: `slow in the pairs stage (${found}), fine in its re-test (${again}): transient load, or an intermittent fault` });
        } else {
          inconclusive(`${b.hosts.join(' - ')} was slow (${found}) but not consistently in its re-test (${ratioText(r.subject)}): intermittent, or noise`,
            `run it again, with more repeats: ${rerun} --repeats ${opts.repeats + 2}`);
        }
      }
      // Below the margin but not in every repeat or not significantly: measured again beside a control; cleared
      // when fine there, else the verdict cannot be healthy.
      const uncertain = [...pairAttr.uncertain, ...(hostAttr?.uncertain ?? [])]
        .filter((g) => !g.hosts.some((h) => suspects.some((x) => x.host === h)));
      if (uncertain.length > MAX_UNCERTAIN_RETESTS) {
        inconclusive(`${uncertain.length} groups below the margin but not consistently (${uncertain.map((g) => g.hosts.join('-')).join(', ')}): noise`,
          `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
      } else {
        for (const u of uncertain) {
          if (s.interrupted) break;
          s.progress(`stage retest (uncertain): ${u.hosts.join(' - ')}`);
          const r = u.hosts.length === 1 && hostStage && hostMeasured
            ? await retest(s, u.hosts, ranked, { stage: hostStage, groups: hostMeasured }, true)
            : await retest(s, u.hosts, ranked, { stage: pairsStage, groups: pm.groups });
          stages.push(r.stage);
          if (r.subject.state === 'ok') {
            cleared.push({ hosts: u.hosts, evidence: `below the margin in the pairs stage (${ratioText(u)}), fine in its re-test (${ratioText(r.subject)})` });
          } else {
            inconclusive(`${u.hosts.join('-')} below the margin in the pairs stage (${ratioText(u)}, repeats ${u.repeatRatios.map((x) => x.toFixed(2)).join(' ')}) and again in its re-test (${ratioText(r.subject)}), not consistently enough to name it`,
              `more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
          }
        }
      }
    }
  }
  // A suspect confirmed beside a control stands whatever the noise; "healthy" needs measurements that repeat.
  if (verdict !== 'suspect' && pairsStage.noise !== null && pairsStage.noise > opts.rule.maxNoise) {
    inconclusive(`noise too high: the same pair's busbw moved by ${pct(pairsStage.noise)} between repeats (limit ${pct(opts.rule.maxNoise)}), ` +
      'so a slowdown of that size could hide in it',
    `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
  }
  if (verdict === 'healthy') {
    const worst = [...pairsStage.groups, ...(hostStage?.groups ?? [])].filter((g) => g.ratio !== null).sort((a, b) => a.ratio! - b.ratio!)[0];
    reason = cleared.length
      ? `nothing slow in its re-test; cleared: ${cleared.map((c) => c.hosts.join('-')).join(', ')}`
      : `no group slower than ${pct(1 - opts.rule.margin)} of the reference${worst ? ` (slowest ${worst.hosts.join('-')}: ${ratioText(worst)})` : ''}`;
  } else if (verdict === 'suspect') {
    const named = [...suspects.map((x) => `host ${x.host}`), ...links.map((l) => `link ${l.hosts.join(' - ')}`)];
    reason = `${named.join(', ')} slow in the pairwise stage and again in the re-test${reason ? `; also: ${reason}` : ''}`;
  }
  return {
    kind: LOCATE_KIND, schemaVersion: LOCATE_SCHEMA_VERSION, verdict,
    exitCode: verdict === 'healthy' ? EXIT.OK : verdict === 'suspect' ? EXIT.WRONG_RESULTS : EXIT.INCONCLUSIVE,
    reason, advice: verdict === 'inconclusive' ? advice : null,
    startTime: isoLocal(startTime), endTime: isoLocal(new Date()), argv: ['collbench', 'locate', ...argv],
    hosts, npPerHost: opts.npPerHost, repeats: opts.repeats, runArgs: opts.runArgs,
    rule: { ...opts.rule, reference: 'median of the best third of the groups per size, or a control pair measured at the same time',
      test: 'one-sided Mann-Whitney U (normal approximation, tie-corrected) of the per-iteration busbw ratios' },
    suspects, links, cleared, stages,
  };
}

const pct = (v: number): string => `${(v * 100).toFixed(0)}%`;
/** More groups than this below the margin but not consistently: the stage is noise, not worth re-testing each. */
const MAX_UNCERTAIN_RETESTS = 3;
