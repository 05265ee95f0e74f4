// Who did not arrive, when a wait expired: from where every rank said it was (launch/progress-board.ts asks them
// outside the stuck library), one line naming the ranks and hosts the others were waiting for. Pure: no I/O.

/** Where one rank is: the wait's label (as the watchdog names it) and, in a native loop, its iteration (-1: the
 *  untimed first op; `iters`: completing and checking after the last), else null. */
export interface Position {
  rank: number;
  host: string;
  at: string;
  iteration: number | null;
  /** The loop's iteration count, when in a loop. */
  iterations?: number;
}

/** How a rank answered the survey. */
export type Answer =
  | { rank: number; state: 'answered'; position: Position }
  | { rank: number; state: 'silent' } // no answer in time: stopped (SIGSTOP), or its process is hung
  | { rank: number; state: 'gone' }; // connection refused or reset: its process has ended

const list = (xs: readonly (string | number)[]): string => xs.join(', ');

function where(p: Position): string {
  if (p.iteration === null) return p.at;
  if (p.iteration < 0) return `${p.at}, before its first timed iteration`;
  if (p.iterations !== undefined && p.iteration >= p.iterations) return `${p.at}, after its last timed iteration`;
  return `${p.at}, iteration ${p.iteration}`;
}

const before = (a: Position, b: Position): boolean => a.at !== b.at || (a.iteration ?? -2) < (b.iteration ?? -2);

/**
 * `timeout: rank 2 (host h3) did not arrive at all_reduce float 524288 B out-of-place, iteration 17: it does not answer
 * (stopped, or hung outside collbench)`. `self` is the rank whose limit expired; `hostOf` names any rank's host.
 * Ranks that do not answer or are gone are the culprits; ranks that answer from an earlier point are named as the
 * culprits only when nobody is silent (otherwise they are behind because they wait on the silent ones, as the
 * neighbours of a stopped rank in a ring are), and listed after them.
 */
export function notArrivedLine(self: Position, answers: readonly Answer[], hostOf: (rank: number) => string): string {
  const absent: { rank: number; why: string }[] = [];
  const behind: { rank: number; why: string }[] = [];
  for (const a of [...answers].sort((x, y) => x.rank - y.rank)) {
    if (a.state === 'silent')
      absent.push({ rank: a.rank, why: 'does not answer (stopped, or hung outside collbench)' });
    else if (a.state === 'gone') absent.push({ rank: a.rank, why: 'is gone (its process ended)' });
    else if (before(a.position, self)) behind.push({ rank: a.rank, why: `is still in ${where(a.position)}` });
  }
  const culprits = absent.length > 0 ? absent : behind;
  if (culprits.length === 0) {
    return (
      `timeout: every rank reached ${where(self)}; none is missing, so the collective itself did not complete ` +
      '(the library or the network hangs)'
    );
  }
  const ranks = culprits.map((m) => m.rank);
  const hosts = [...new Set(ranks.map(hostOf))];
  const also =
    absent.length > 0 && behind.length > 0
      ? `; waiting on ${ranks.length === 1 ? 'it' : 'them'}: ${behind.map((m) => `rank ${m.rank} ${m.why}`).join('; ')}`
      : '';
  return (
    `timeout: ${ranks.length === 1 ? 'rank' : 'ranks'} ${list(ranks)} (${hosts.length === 1 ? 'host' : 'hosts'} ` +
    `${list(hosts)}) did not arrive at ${where(self)}: ${culprits.map((m) => `rank ${m.rank} ${m.why}`).join('; ')}${also}`
  );
}
