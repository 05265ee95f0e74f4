// The order in which `collbench locate` measures: the stages (whole job, per-host groups, pairwise rounds,
// re-tests) and the round-robin schedule of host pairs, in which every round is a set of disjoint pairs that run at
// the same time as separate jobs. Pure: the plan for 1024 hosts is computed the same way as for 4 (`--plan`).
import { formatSeconds } from './document.js';

/** A pair of host indices, the lower first. */
export type Pair = readonly [number, number];

/**
 * All pairs of `n` hosts in rounds of disjoint pairs (the circle method of round-robin tournaments): n − 1 rounds
 * of n/2 pairs for even n, n rounds of (n − 1)/2 pairs for odd n (one host rests each round). Every pair occurs
 * exactly once.
 */
export function roundRobin(n: number): Pair[][] {
  if (n < 2) return [];
  const slots: (number | null)[] = Array.from({ length: n }, (_, i) => i);
  if (n % 2 === 1) slots.push(null); // the resting slot
  const m = slots.length;
  const rounds: Pair[][] = [];
  for (let r = 0; r < m - 1; r++) {
    const round: Pair[] = [];
    for (let i = 0; i < m / 2; i++) {
      const a = slots[i],
        b = slots[m - 1 - i];
      if (a !== null && a !== undefined && b !== null && b !== undefined) round.push(a < b ? [a, b] : [b, a]);
    }
    rounds.push(round);
    // keep slot 0, rotate the others one step
    slots.splice(1, 0, slots.pop()!);
  }
  return rounds;
}

/**
 * Neighbour pairs only (a "ring" screen for large host counts): the n pairs (i, i+1 mod n), each host with two
 * different partners, packed greedily into rounds of disjoint pairs (2 rounds for even n, 3 for odd n). n ≥ 3.
 */
export function ringRounds(n: number): Pair[][] {
  if (n < 3) return roundRobin(n);
  const rounds: { pairs: Pair[]; busy: Set<number> }[] = [];
  for (let i = 0; i < n; i++) {
    const j = (i + 1) % n;
    const pair: Pair = i < j ? [i, j] : [j, i];
    let round = rounds.find((r) => !r.busy.has(i) && !r.busy.has(j));
    if (!round) rounds.push((round = { pairs: [], busy: new Set() }));
    round.pairs.push(pair);
    round.busy.add(i).add(j);
  }
  return rounds.map((r) => r.pairs);
}

export type PairSchedule = 'all' | 'ring';
export const PAIR_SCHEDULES: readonly PairSchedule[] = ['all', 'ring'];

export function pairRounds(n: number, schedule: PairSchedule): Pair[][] {
  return schedule === 'ring' ? ringRounds(n) : roundRobin(n);
}

export interface PlannedStage {
  name: 'whole-job' | 'host-groups' | 'pairs' | 'retest';
  /** Rounds run one after the other; the jobs of a round run at the same time. */
  rounds: number;
  /** Jobs per round (the largest round). */
  jobsPerRound: number;
  /** Ranks per job. */
  ranksPerJob: number;
  /** Jobs in all. */
  jobs: number;
  note: string;
}

export interface LocatePlan {
  hosts: number;
  npPerHost: number;
  repeats: number;
  schedule: PairSchedule;
  stages: PlannedStage[];
  /** Rounds of all stages (re-tests counted for `retestSuspects` suspects). */
  totalRounds: number;
  /** totalRounds × the time one job takes (start-up included), in seconds. */
  wallSec: number;
  perJobSec: number;
}

/**
 * The stages for `hosts` hosts and their cost when every job takes `perJobSec` (its start-up, warm-up and timed
 * iterations). Re-tests are counted for `retestSuspects` suspects (repeats + 1 rounds each: suspect + known-good
 * partner, beside a control pair of two other known-good hosts).
 */
export function locatePlan(opts: {
  hosts: number;
  npPerHost: number;
  repeats: number;
  schedule: PairSchedule;
  perJobSec: number;
  retestSuspects?: number;
}): LocatePlan {
  const { hosts, npPerHost, repeats, schedule, perJobSec } = opts;
  const stages: PlannedStage[] = [];
  stages.push({
    name: 'whole-job',
    rounds: 1,
    jobsPerRound: 1,
    ranksPerJob: hosts * npPerHost,
    jobs: 1,
    note: 'all_reduce over every rank: the symptom, and the reference for the rest',
  });
  if (npPerHost > 1) {
    stages.push({
      name: 'host-groups',
      rounds: repeats,
      jobsPerRound: hosts,
      ranksPerJob: npPerHost,
      jobs: hosts * repeats,
      note: 'each host alone (its intra-host path), all hosts at once',
    });
  }
  const rounds = pairRounds(hosts, schedule);
  const pairs = rounds.reduce((s, r) => s + r.length, 0);
  stages.push({
    name: 'pairs',
    rounds: rounds.length * repeats,
    jobsPerRound: Math.max(0, ...rounds.map((r) => r.length)),
    ranksPerJob: 2 * npPerHost,
    jobs: pairs * repeats,
    note:
      schedule === 'all'
        ? `all ${pairs} pairs, ${rounds.length} rounds of disjoint pairs`
        : `neighbour pairs, ${rounds.length} rounds`,
  });
  const suspects = opts.retestSuspects ?? 1;
  stages.push({
    name: 'retest',
    rounds: suspects * (repeats + 1),
    jobsPerRound: hosts >= 4 ? 2 : 1,
    ranksPerJob: 2 * npPerHost,
    jobs: suspects * (repeats + 1) * (hosts >= 4 ? 2 : 1),
    note: 'each suspect with a known-good partner, beside a control pair',
  });
  const totalRounds = stages.reduce((s, st) => s + st.rounds, 0);
  return { hosts, npPerHost, repeats, schedule, stages, totalRounds, wallSec: totalRounds * perJobSec, perJobSec };
}

/**
 * The schedule shortened to fit `maxSec` at `perJobSec` per job (re-tests of one suspect counted), before anything
 * runs: first the fewest repeats (2), then neighbour pairs instead of all pairs. `note` says what was changed and
 * why (null when nothing was), or that even the shortest schedule may not fit (the run then ends partial).
 */
export function fitSchedule(opts: {
  hosts: number;
  npPerHost: number;
  repeats: number;
  schedule: PairSchedule;
  perJobSec: number;
  maxSec: number;
}): { repeats: number; schedule: PairSchedule; note: string | null } {
  const cost = (repeats: number, schedule: PairSchedule): number => locatePlan({ ...opts, repeats, schedule }).wallSec;
  const before = cost(opts.repeats, opts.schedule);
  if (before <= opts.maxSec) return { repeats: opts.repeats, schedule: opts.schedule, note: null };
  let { repeats, schedule } = opts;
  const changes: string[] = [];
  if (repeats > 2) {
    changes.push(`2 repeats instead of ${repeats}`);
    repeats = 2;
  }
  if (cost(repeats, schedule) > opts.maxSec && schedule === 'all' && opts.hosts > 3) {
    changes.push('neighbour (ring) pairs instead of all pairs');
    schedule = 'ring';
  }
  const after = cost(repeats, schedule);
  const t = formatSeconds;
  const fits = after <= opts.maxSec;
  return {
    repeats,
    schedule,
    note:
      `the schedule would take about ${t(before)} at ${opts.perJobSec} s per job (--job-seconds), more than --max-time ${t(opts.maxSec)}: ` +
      `${changes.length ? `shortened to ${changes.join(' and ')} (about ${t(after)})` : 'nothing left to shorten'}` +
      `${fits ? '' : '; it may still not fit, and then reports what it found by then (partial)'}`,
  };
}
