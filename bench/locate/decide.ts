// The decision rule of `collbench locate` (docs/locate.md), pure so that
// scripts/locate-sim.ts runs it on simulated noise: per stage, each group's busbw against a reference per size; slow
// when below 1 − margin in every repeat and a Mann-Whitney test agrees; host, link and degraded-host suspects.
import { mannWhitneyP, medianOf, quantileOf } from '../numbers/stats.js';
import type { ReportDocument } from '../report/schema.js';

/**
 * A group's busbw level: the 90th percentile of its per-iteration busbw. What a link can carry shows in its best
 * iterations; contention (other jobs, the CPU, the scheduler) only takes away, so the upper percentile moves much
 * less with load than the median, while a slow link or host caps every iteration.
 */
export const LEVEL_QUANTILE = 0.9;
export const level = (samples: readonly number[]): number => quantileOf(samples as number[], LEVEL_QUANTILE);

export interface DecisionRule {
  /** A group is slow only when its busbw level is below (1 − margin) × the reference (0.25 = 25 % slower). */
  margin: number;
  /** … and the rank test's one-sided p-value is below alpha. */
  alpha: number;
  /** Above this repeat-to-repeat variation of the same group's level (relative), the stage is too noisy. */
  maxNoise: number;
}

export const DEFAULT_RULE: DecisionRule = Object.freeze({ margin: 0.25, alpha: 0.01, maxNoise: 0.5 });

/** One group's measurements: per size, per repeat, the per-iteration busbw samples (GB/s). */
export interface GroupSamples {
  id: string;
  hosts: string[];
  /** sizeBytes → repeats → samples */
  bySize: Map<number, number[][]>;
  /** Why the group has no measurement (its job failed or timed out); null when it ran. */
  failed: string | null;
}

export type GroupState = 'ok' | 'slow' | 'uncertain' | 'failed';

export interface GroupResult {
  id: string;
  hosts: string[];
  state: GroupState;
  /** Level (90th percentile) of busbw / reference busbw of the sample's size, over all samples; null when failed. */
  ratio: number | null;
  /** One-sided Mann-Whitney p-value (samples smaller than the reference samples); null when failed. */
  pValue: number | null;
  samples: number;
  /** Relative spread of the per-repeat levels: (max − min) / max, the largest over sizes. */
  repeatSpread: number | null;
  /** Each repeat's level ratio (all sizes pooled). */
  repeatRatios: number[];
  bySize: { sizeBytes: number; busBwGBps: number; referenceGBps: number; ratio: number }[];
  failed: string | null;
}

export interface StageAnalysis {
  groups: GroupResult[];
  reference: { sizeBytes: number; busBwGBps: number }[];
  /** Median over the good groups of repeatSpread: how much a level moves when it is measured again. */
  noise: number | null;
  referenceNote: string;
}

const flat = (runs: number[][]): number[] => runs.flat();

/** One-sided Mann-Whitney U test, H1: x tends to be smaller than y (numbers/stats.ts: exact for small samples). */
export function mannWhitneyLess(x: readonly number[], y: readonly number[]): number {
  return mannWhitneyP(x, y, 'less');
}

/** The p-value as text (the normal approximation is not worth more than "< 1e-6" far out in the tail). */
export function formatP(p: number | null): string {
  if (p === null) return '-';
  return p < 1e-6 ? '<1e-6' : p < 0.001 ? p.toExponential(1) : p.toFixed(p < 0.1 ? 3 : 2);
}

/**
 * Analyse one stage. `control`, when given, is the reference (a control group measured at the same time);
 * otherwise the reference per size is the median of the best third of the groups' levels (at least one group),
 * so that a bad host, which is in 2/n of all pairs, does not pull the reference down.
 */
export function analyzeStage(
  groups: readonly GroupSamples[],
  rule: DecisionRule,
  control?: GroupSamples[],
  note?: string,
): StageAnalysis {
  const live = groups.filter((g) => g.failed === null && g.bySize.size > 0);
  const sizes = [...new Set(live.flatMap((g) => [...g.bySize.keys()]))].sort((a, b) => a - b);
  const refBySize = new Map<number, number>();
  const refGroupsBySize = new Map<number, GroupSamples[]>();
  let referenceNote: string;
  if (control && control.some((c) => c.failed === null)) {
    const ok = control.filter((c) => c.failed === null);
    referenceNote = note ?? `control ${ok.map((c) => c.hosts.join('-')).join(', ')}, measured at the same time`;
    for (const s of sizes) {
      const samples = ok.flatMap((c) => flat(c.bySize.get(s) ?? []));
      if (samples.length) {
        refBySize.set(s, level(samples));
        refGroupsBySize.set(s, ok);
      }
    }
  } else {
    referenceNote = 'median level of the best third of the groups';
    for (const s of sizes) {
      const withSize = live
        .filter((g) => flat(g.bySize.get(s) ?? []).length > 0)
        .map((g) => ({ g, m: level(flat(g.bySize.get(s)!)) }))
        .sort((a, b) => b.m - a.m);
      const k = Math.max(1, Math.ceil(withSize.length / 3));
      const best = withSize.slice(0, k);
      refBySize.set(s, medianOf(best.map((b) => b.m)));
      refGroupsBySize.set(
        s,
        best.map((b) => b.g),
      );
    }
  }
  // The reference samples as ratios, pooled over sizes: what a good group's ratios look like.
  const pool: number[] = [];
  for (const [s, refGroups] of refGroupsBySize) {
    const ref = refBySize.get(s)!;
    for (const g of refGroups) for (const v of flat(g.bySize.get(s) ?? [])) pool.push(v / ref);
  }

  const results: GroupResult[] = groups.map((g) => {
    if (g.failed !== null || g.bySize.size === 0) {
      return {
        id: g.id,
        hosts: g.hosts,
        state: 'failed',
        ratio: null,
        pValue: null,
        samples: 0,
        repeatSpread: null,
        repeatRatios: [],
        bySize: [],
        failed: g.failed ?? 'no samples',
      };
    }
    const ratios: number[] = [];
    const bySize: GroupResult['bySize'] = [];
    let spread = 0;
    const perRepeatRatios: number[][] = [];
    for (const s of sizes) {
      const runs = g.bySize.get(s);
      const ref = refBySize.get(s);
      if (!runs || ref === undefined || flat(runs).length === 0) continue;
      const all = flat(runs);
      for (const v of all) ratios.push(v / ref);
      runs.forEach((run, r) => {
        (perRepeatRatios[r] ??= []).push(...run.map((v) => v / ref));
      });
      const m = level(all);
      bySize.push({ sizeBytes: s, busBwGBps: m, referenceGBps: ref, ratio: m / ref });
      const perRepeat = runs.filter((r) => r.length > 0).map((r) => level(r));
      if (perRepeat.length > 1)
        spread = Math.max(spread, (Math.max(...perRepeat) - Math.min(...perRepeat)) / Math.max(...perRepeat));
    }
    const ratio = level(ratios);
    const pValue = mannWhitneyLess(ratios, pool);
    const repeatRatios = perRepeatRatios.filter((r) => r.length > 0).map((r) => level(r));
    const below = ratio < 1 - rule.margin;
    const everyRepeat = repeatRatios.every((r) => r < 1 - rule.margin);
    const state: GroupState = below && everyRepeat && pValue < rule.alpha ? 'slow' : below ? 'uncertain' : 'ok';
    return {
      id: g.id,
      hosts: g.hosts,
      state,
      ratio,
      pValue,
      samples: ratios.length,
      repeatSpread: spread,
      repeatRatios,
      bySize,
      failed: null,
    };
  });
  // Noise is judged on the groups that look fine: a throttled link may well be erratic, and that is its problem.
  const spreads = results.filter((r) => r.state === 'ok' && r.repeatSpread !== null).map((r) => r.repeatSpread!);
  return {
    groups: results,
    reference: sizes.filter((s) => refBySize.has(s)).map((s) => ({ sizeBytes: s, busBwGBps: refBySize.get(s)! })),
    noise: spreads.length ? medianOf(spreads) : null,
    referenceNote,
  };
}

export interface Attribution {
  /** Hosts every one of whose pairs (≥ 2) is slow or failed. */
  hostSuspects: { host: string; pairs: GroupResult[] }[];
  /** Slow or failed pairs between two hosts that are not host suspects. */
  linkSuspects: GroupResult[];
  /** Pairs below the margin without a significant test, not explained by a suspect. */
  uncertain: GroupResult[];
}

/** Slow, or failed (a job that failed or was stopped over its budget counts against the group). */
export const isBad = (g: GroupResult): boolean => g.state === 'slow' || g.state === 'failed';

/** Hosts and links from the pairwise stage. */
export function attributePairs(hosts: readonly string[], pairs: readonly GroupResult[]): Attribution {
  const hostSuspects: Attribution['hostSuspects'] = [];
  for (const h of hosts) {
    const mine = pairs.filter((p) => p.hosts.includes(h));
    if (mine.length >= 2 && mine.every(isBad)) hostSuspects.push({ host: h, pairs: mine });
  }
  const named = new Set(hostSuspects.map((s) => s.host));
  const explained = (p: GroupResult): boolean => p.hosts.some((h) => named.has(h));
  return {
    hostSuspects,
    linkSuspects: pairs.filter((p) => isBad(p) && !explained(p)),
    uncertain: pairs.filter((p) => p.state === 'uncertain' && !explained(p)),
  };
}

/** Host groups (several ranks per host): a slow group is its host's own problem. */
export function attributeHostGroups(groups: readonly GroupResult[]): Attribution {
  return {
    hostSuspects: groups.filter(isBad).map((g) => ({ host: g.hosts[0]!, pairs: [g] })),
    linkSuspects: [],
    uncertain: groups.filter((g) => g.state === 'uncertain'),
  };
}

/**
 * A known-good partner for a suspect: the host with the best median ratio over its pairs among those in no bad or
 * uncertain pair; failing that, the best host that is not a suspect.
 */
export function goodHosts(
  hosts: readonly string[],
  pairs: readonly GroupResult[],
  exclude: ReadonlySet<string>,
): string[] {
  const score = (h: string): number => {
    const r = pairs.filter((p) => p.hosts.includes(h) && p.ratio !== null).map((p) => p.ratio!);
    return r.length ? medianOf(r) : 0;
  };
  const clean = (h: string): boolean => pairs.filter((p) => p.hosts.includes(h)).every((p) => p.state === 'ok');
  return hosts
    .filter((h) => !exclude.has(h))
    .sort((a, b) => Number(clean(b)) - Number(clean(a)) || score(b) - score(a));
}

/** A degraded host's pairs must be at least this much slower than the others' (median level against median level). */
export const DEGRADED_MIN_SLOWDOWN = 0.1;

export interface DegradedFinding {
  host: string;
  pValue: number;
  corrected: number;
  ratio: number;
  mine: GroupResult[];
  others: GroupResult[];
}

/**
 * Hosts slower than the rest by a pattern rather than by any one pair: every pair with the host is slower than
 * every pair without it, in every repeat, by at least DEGRADED_MIN_SLOWDOWN (median against median), and a
 * one-sided Mann-Whitney test of its pairs' per-job levels against the others' (one value per pair and repeat: a
 * job's iterations share its conditions, so the job is the unit) gives p below alpha after a Bonferroni correction
 * over the hosts tested. Needs ≥ 4 hosts (3 pairs without the host). A pair can stay within the margin and still
 * be part of such a pattern (a host throttled to 3/4 of the others).
 */
export function degradedHosts(
  hosts: readonly string[],
  pairs: readonly GroupResult[],
  rule: DecisionRule,
): DegradedFinding[] {
  const live = pairs.filter((p) => p.state !== 'failed' && p.repeatRatios.length > 0 && p.hosts.length === 2);
  const tested = hosts.filter(
    (h) => live.filter((p) => p.hosts.includes(h)).length >= 2 && live.filter((p) => !p.hosts.includes(h)).length >= 3,
  );
  const out: DegradedFinding[] = [];
  for (const h of tested) {
    const mine = live.filter((p) => p.hosts.includes(h));
    const others = live.filter((p) => !p.hosts.includes(h));
    const repeats = Math.min(...live.map((p) => p.repeatRatios.length));
    let separated = true;
    for (let r = 0; r < repeats && separated; r++) {
      separated = Math.max(...mine.map((p) => p.repeatRatios[r]!)) < Math.min(...others.map((p) => p.repeatRatios[r]!));
    }
    if (!separated) continue;
    const ratio = medianOf(mine.map((p) => p.ratio!)) / medianOf(others.map((p) => p.ratio!));
    if (!(ratio <= 1 - DEGRADED_MIN_SLOWDOWN)) continue;
    const pValue = mannWhitneyLess(
      mine.flatMap((p) => p.repeatRatios),
      others.flatMap((p) => p.repeatRatios),
    );
    const corrected = Math.min(1, pValue * tested.length);
    if (corrected < rule.alpha) out.push({ host: h, pValue, corrected, ratio, mine, others });
  }
  return out;
}

/** Per size, every per-iteration busbw (GB/s) of both halves: the row's busbw scaled by its mean time / the sample. */
export function samplesOf(doc: ReportDocument): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const row of doc.rows) {
    for (const half of [row.outOfPlace, row.inPlace]) {
      if (!half.perIter || half.busBwGBps === null || half.timeUs === null) continue;
      const list = out.get(row.sizeBytes) ?? [];
      for (const s of half.perIter.samplesUs) if (s > 0) list.push((half.busBwGBps * half.timeUs) / s);
      out.set(row.sizeBytes, list);
    }
  }
  return out;
}

/**
 * One pair's evidence over the stages: its pairs-stage result and, when it was re-tested (as a suspect, as a group
 * below the margin, as a suspect host's other pair, or as a host suspect with its partner), that re-test's result.
 */
export interface PairEvidence {
  hosts: [string, string];
  pairs: GroupResult | null;
  retest: GroupResult | null;
}

/** A pair's best-supported result: its re-test (beside a control, one repeat more) when it had one, else the pairs stage. */
export const bestOf = (e: PairEvidence): GroupResult => (e.retest ?? e.pairs)!;
const pairKey = (a: string, b: string): string => [a, b].sort().join('\0');
/** Slow again in a re-test: the confirmation a name needs. */
const confirmed = (e: PairEvidence): boolean => e.retest !== null && isBad(e.retest);

/** Why a host is named rather than its pairs as links. */
export type HostReason = 'every pair slow' | 'no pair fine' | 'most pairs slow' | 'slower than the rest';
/**
 * `degraded`: the significant pattern of degradedHosts, when that is what named it; `separated`: the pairs stage's
 * levels of its pairs and of the pairs without it, when every one of its pairs is below every pair without it.
 */
export interface HostFinding {
  host: string;
  reason: HostReason;
  pairs: PairEvidence[];
  degraded: DegradedFinding | null;
  separated: { mine: number[]; others: number[] } | null;
}
/** A link: its pair, and each host's partners it was measured fine with (best-supported state ok). */
export interface LinkFinding {
  pair: PairEvidence;
  fineWith: [string[], string[]];
}
export interface HostOrLink {
  hosts: HostFinding[];
  links: LinkFinding[];
  /** Confirmed slow pairs that are neither: one of its hosts has no pair measured fine with another host. */
  undecided: { pair: PairEvidence; host: string }[];
}

/**
 * Every pair's evidence: the pairs stage's groups, each with its re-test where there was one (a re-test of a host
 * suspect with a partner is that pair's re-test), and re-tested pairs the pairs stage did not measure (--pairs ring).
 */
export function pairEvidence(pairs: readonly GroupResult[], retests: readonly (GroupResult | null)[]): PairEvidence[] {
  const byKey = new Map<string, PairEvidence>();
  for (const p of pairs)
    if (p.hosts.length === 2)
      byKey.set(pairKey(p.hosts[0]!, p.hosts[1]!), { hosts: [p.hosts[0]!, p.hosts[1]!], pairs: p, retest: null });
  for (const r of retests) {
    if (r === null || r.hosts.length !== 2) continue;
    const key = pairKey(r.hosts[0]!, r.hosts[1]!);
    const e = byKey.get(key) ?? { hosts: [r.hosts[0]!, r.hosts[1]!] as [string, string], pairs: null, retest: null };
    e.retest = r;
    byKey.set(key, e);
  }
  return [...byKey.values()];
}

/**
 * Host or link, on all the evidence (each pair's best-supported state: its re-test where it had one), so that a
 * host is not reported as a set of links because one of its pairs happened to look better in the pairs stage:
 *  - a host with ≥ 2 pairs, one of them slow again in a re-test, is named when every pair with it is slow; or when
 *    none is fine and at least half are slow, or none is fine and every one is below every pair without it in the
 *    pairs stage (the others below the margin, not consistently); or when most of its
 *    pairs, at least MOST_PAIRS_MIN, are slow again in their re-tests (one slow host, not that many slow links that
 *    share it: the rest looked fine by luck or load, as in scripts/locate-sim.ts --unlucky); or when every pair
 *    with it is slower than every pair without it: significantly so (degradedHosts), or, with ≥ 2 of its pairs slow
 *    again in a re-test, by the pairs stage's levels (≥ 2 pairs without it): one slow host explains that, two
 *    independent slow links that share a host (and a third pair just below the rest by chance) hardly;
 *  - a link is a pair slow in the pairs stage and again in its re-test, neither host named, each of its hosts
 *    measured fine (best state ok) with at least one other host — the partners are kept so the report can say so;
 *  - a confirmed slow pair with a host that is fine with nobody and is not named is undecided (neither can be said).
 * Pairs with a host already named (`named`, or found here: the hosts with most slow pairs first) are explained by
 * it and say nothing about their other host.
 */
export function decideHostOrLink(
  evidence: readonly PairEvidence[],
  degraded: readonly DegradedFinding[],
  named: ReadonlySet<string>,
): HostOrLink {
  const explained = new Set(named);
  const live = (e: PairEvidence): boolean => !e.hosts.some((h) => explained.has(h));
  const slowCount = (h: string): number => evidence.filter((e) => e.hosts.includes(h) && isBad(bestOf(e))).length;
  const candidates = [...new Set(evidence.flatMap((e) => e.hosts))]
    .filter((h) => !named.has(h))
    .sort((a, b) => slowCount(b) - slowCount(a));
  const hosts: HostFinding[] = [];
  for (const h of candidates) {
    const mine = evidence.filter((e) => e.hosts.includes(h) && !e.hosts.some((x) => x !== h && explained.has(x)));
    if (mine.length < 2 || !mine.some(confirmed)) continue;
    const states = mine.map((e) => bestOf(e).state);
    const slow = states.filter((s) => s === 'slow' || s === 'failed').length;
    const d = degraded.find((x) => x.host === h) ?? null;
    const separated = separation(evidence, h, explained);
    const pattern = d !== null || (separated !== null && mine.filter(confirmed).length >= 2);
    const again = mine.filter(confirmed).length;
    const reason: HostReason | null =
      slow === mine.length
        ? 'every pair slow'
        : !states.includes('ok') && (slow * 2 >= mine.length || separated !== null)
          ? 'no pair fine'
          : again >= MOST_PAIRS_MIN && again * 2 > mine.length
            ? 'most pairs slow'
            : pattern
              ? 'slower than the rest'
              : null;
    if (reason === null) continue;
    hosts.push({ host: h, reason, pairs: mine, degraded: d, separated });
    explained.add(h);
  }
  const links: LinkFinding[] = [];
  const undecided: HostOrLink['undecided'] = [];
  const fineWith = (h: string, pair: PairEvidence): string[] =>
    evidence
      .filter((e) => e !== pair && e.hosts.includes(h) && live(e) && bestOf(e).state === 'ok')
      .map((e) => e.hosts.find((x) => x !== h)!)
      .sort();
  for (const e of evidence) {
    if (!live(e) || !confirmed(e) || e.pairs === null || !isBad(e.pairs)) continue;
    const fine: [string[], string[]] = [fineWith(e.hosts[0], e), fineWith(e.hosts[1], e)];
    const lonely = e.hosts.find((_, i) => fine[i]!.length === 0);
    if (lonely === undefined) links.push({ pair: e, fineWith: fine });
    else undecided.push({ pair: e, host: lonely });
  }
  return { hosts, links, undecided };
}

/** Confirmed slow pairs (more than half of a host's) that make it the host rather than so many links. */
export const MOST_PAIRS_MIN = 3;

/** The pairs stage's levels of h's pairs and of the pairs without it, when each of its is below each of theirs (≥ 2 each). */
function separation(
  evidence: readonly PairEvidence[],
  h: string,
  explained: ReadonlySet<string>,
): HostFinding['separated'] {
  const levels = (mine: boolean): number[] =>
    evidence
      .filter(
        (e) =>
          e.hosts.includes(h) === mine &&
          e.pairs !== null &&
          e.pairs.ratio !== null &&
          !e.hosts.some((x) => x !== h && explained.has(x)),
      )
      .map((e) => e.pairs!.ratio!)
      .sort((a, b) => a - b);
  const mine = levels(true);
  const others = levels(false);
  return mine.length >= 2 && others.length >= 2 && mine.at(-1)! < others[0]! ? { mine, others } : null;
}

/**
 * The other pairs of a suspect host, re-tested in the same rounds as its slow pairs: a host at least half of whose
 * pairs (≥ 2) are below the margin in the pairs stage (slow, failed or uncertain), one of them slow or failed. So
 * the host-or-link decision sees each of its pairs in a re-test, whichever one looked fine by luck in the pairs
 * stage. `skip`: hosts already named or re-tested as host suspects.
 */
export function suspectHostPairs(pairs: readonly GroupResult[], skip: ReadonlySet<string>): GroupResult[] {
  const out = new Set<GroupResult>();
  for (const h of new Set(pairs.flatMap((p) => p.hosts))) {
    if (skip.has(h)) continue;
    const mine = pairs.filter((p) => p.hosts.length === 2 && p.hosts.includes(h));
    const below = mine.filter((p) => p.state !== 'ok');
    if (mine.length < 2 || below.length === mine.length || below.length * 2 < mine.length || !below.some(isBad))
      continue;
    for (const p of mine) if (p.state === 'ok' && !p.hosts.some((x) => skip.has(x))) out.add(p);
  }
  return [...out];
}
