// Time budgets of `collbench locate`'s jobs, so that a slow link makes the verdict no slower: a job may take only a
// multiple of a healthy job's duration and keeps the sizes it finished; in a round the others stop at a multiple of
// the first to finish; a group measured slow runs fewer iterations next time. Pure.
import { quantileOf } from '../numbers/stats.js';

/** A job may take this multiple of the reference (healthy) job duration of its width. */
export const BUDGET_SLACK = 1.5;
/** Once one job of a round has finished, the others may take this multiple of its duration. */
export const ROUND_SLACK = 1.25;
/** Fewest timed iterations a group measured slow runs (its samples still decide: 2 per iteration and size). */
export const MIN_ITERATIONS = 4;

/** How long the jobs of one measurement may take. */
export interface JobBudget {
  /** Each job is stopped after this many seconds (null: no budget yet, only --timeout). */
  capSec: number | null;
  /** When the first job of a round has finished, the others are stopped at this multiple of its duration (null: off). */
  afterFirst: number | null;
}

/** Healthy job durations seen so far, by hosts per job: the reference a budget is derived from. */
export class DurationReference {
  private readonly byWidth = new Map<number, number[]>();

  /** Jobs that ran to their end (not stopped at a budget), of groups the analysis found fine. */
  note(
    jobs: readonly { id: string; hosts: string[]; status: string; capped: boolean; durationSec: number }[],
    fine: (id: string) => boolean,
  ): void {
    for (const j of jobs) {
      if (j.status !== 'ok' || j.capped || !fine(j.id)) continue;
      const list = this.byWidth.get(j.hosts.length) ?? [];
      list.push(j.durationSec);
      this.byWidth.set(j.hosts.length, list);
    }
  }

  /** The lower quartile of the healthy durations of jobs `width` hosts wide; null before there is one. */
  seconds(width: number): number | null {
    const list = this.byWidth.get(width);
    return list?.length ? quantileOf(list, 0.25) : null;
  }

  /**
   * The budget of a job `width` hosts wide: BUDGET_SLACK × the reference of its width, or, before there is one, twice
   * the pairs' reference scaled by the all_reduce bus factor 2(N − 1)/N of its rank count (a wider ring moves more
   * bytes per rank and starts more daemons); no fixed cap before any job has finished fine (the round's first finisher
   * then sets it).
   */
  budget(width: number, ranksPerHost: number): JobBudget {
    const own = this.seconds(width);
    const pairs = this.seconds(2);
    const bus = (hosts: number): number => {
      const n = hosts * ranksPerHost;
      return n > 1 ? (2 * (n - 1)) / n : 1;
    };
    // a wider job also takes longer to start (more daemons): twice the pairs' scaled time until it has its own
    const ref = own ?? (pairs !== null ? (2 * pairs * bus(width)) / bus(2) : null);
    return { capSec: ref === null ? null : BUDGET_SLACK * ref, afterFirst: ROUND_SLACK };
  }
}

/**
 * Timed iterations for a group whose busbw was `ratio` of the reference: as many as a healthy job's `base` take the
 * same time (so its job fits the budget), at least MIN_ITERATIONS; `base` when it was not slow.
 */
export function iterationsFor(base: number, ratio: number | null): number | undefined {
  if (ratio === null || ratio >= 1) return undefined;
  return Math.max(Math.min(base, MIN_ITERATIONS), Math.min(base, Math.floor(base * ratio)));
}
