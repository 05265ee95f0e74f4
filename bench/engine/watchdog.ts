// The run's watchdog: every wait of a run must settle within a limit, or the job is aborted on every rank and the
// process exits 4. -T N sets the limit (0: none); without it, max(COLLBENCH_WATCHDOG_MIN_S or 120 s, 10 × the wait's
// expected time from its size and the slowest bandwidth measured so far) guards against a hung peer.
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXIT } from '../core/errors.js';
import type { IO } from '../core/io.js';
import { setLongTimeout } from '../launch/long-timeout.js';
import { notArrivedLine, type Answer } from '../launch/not-arrived.js';
import { DEFAULT_MIN_SEC } from '../config/watchdog-floor.js';
import { ask, survey, type BoardEntry, type ProgressBoard } from '../launch/progress-board.js';
import type { LibraryHangView } from '../backends/nccl-ras.js';
import type { NativeBackend } from '../native/binding.js';
import type { ReportTimeout } from '../report/schema.js';

/** Bandwidth assumed before any row has been measured: a slow link (400 Mbit/s), so a first row is never cut short. */
export const ASSUMED_BYTES_PER_SEC = 50e6;
/** Per-operation latency allowance of the model (1 ms: a loaded host or a slow launcher, not a fast network). */
export const OP_OVERHEAD_SEC = 1e-3;
/** The default limit is this many times the expected time of the wait. */
export const DEFAULT_FACTOR = 10;
export { DEFAULT_MIN_SEC };

/** How long the expiring rank waits for each peer's answer (they answer from their JS thread, at once unless stopped). */
export const SURVEY_MS = 1500;
/** A rank that leaves the saying to a lower rank waits this long before it aborts the job itself. */
export const GRACE_MS = 3000;
/** The longest a finished row-half's result waits in the native executor while later ones run (Watchdog.resultHoldMs):
 *  a sweep shorter than this runs with JavaScript asleep. 100 ms woke JavaScript during the last, longest halves of a
 *  2-rank sweep, on each rank's only core: 4 MiB at 1.07-1.45x the plain loop, against 0.98-1.0x with 1 s. */
export const RESULT_HOLD_MS = 1000;
/** A timer this late means the process was not running (stopped): it does not speak for the others. */
export const FROZEN_MS = 1000;

/** What the watchdog needs to say who did not arrive (run.ts sets it up once every process has a board). */
export interface HungReport {
  board: ProgressBoard;
  /** Every process's board and host, by process index. */
  peers: BoardEntry[];
  /** This process's index in `peers`. */
  self: number;
  token: string;
  /** A line added after the naming, e.g. how to ask NCCL's own RAS. */
  hint?: string;
}

export class Watchdog {
  /** Slowest time per byte seen so far (rows of at least 64 KiB, where bandwidth rather than latency counts). */
  private secPerByte = 1 / ASSUMED_BYTES_PER_SEC;
  private measured = false;
  private report: HungReport | null = null;

  /** `explicitSec`: -T as given (null: not given → the default watchdog; 0: none); `minSec`: the default watchdog's
   *  floor, COLLBENCH_WATCHDOG_MIN_S as the preflight checked it (engine/preflight.ts). */
  constructor(
    private readonly explicitSec: number | null,
    private readonly io: Pick<IO, 'err'>,
    private readonly native: NativeBackend,
    private readonly onTimeout: (() => never) | undefined,
    readonly minSec: number = DEFAULT_MIN_SEC,
  ) {}

  /** Expected seconds of `ops` operations of `bytes` each, from the slowest bandwidth measured (or assumed). */
  expectedSec(ops: number, bytes: number): number {
    return ops * (OP_OVERHEAD_SEC + bytes * this.secPerByte);
  }

  /** A finished row-half: `bytes` per op took `timeUs` µs per op. */
  learn(bytes: number, timeUs: number): void {
    if (bytes < 65536 || !(timeUs > 0)) return;
    const observed = (timeUs * 1e-6) / bytes;
    this.secPerByte = this.measured ? Math.max(this.secPerByte, observed) : observed;
    this.measured = true;
  }

  /** How long (ms) the native executor may hold a finished call's result while later calls run (results reach
   *  JavaScript in batches: native/src/addon/executor.h): RESULT_HOLD_MS, or a thirtieth of the shortest limit if
   *  less, so a wait whose work is done but held never expires, and a hung wait is timed out at most that much later
   *  than its limit (3.3 %: -T 3, 100 ms; a stopped Gloo rank's job already takes -T + 6.5 s to end here). */
  resultHoldMs(): number {
    const shortestSec = this.explicitSec === null ? this.minSec : this.explicitSec;
    if (shortestSec <= 0) return RESULT_HOLD_MS;
    return Math.max(1, Math.min(RESULT_HOLD_MS, Math.floor((shortestSec * 1000) / 30)));
  }

  /** The limit of a wait whose expected duration is `expectedSec`: -T, else the default; 0 = none. */
  limitSec(expectedSec: number): number {
    if (this.explicitSec !== null) return this.explicitSec;
    return Math.ceil(Math.max(this.minSec, DEFAULT_FACTOR * expectedSec));
  }

  /** Runs when a wait has expired, before the job is aborted: the run's exporters write the rows they hold back. */
  beforeAbort: (() => Promise<void>) | null = null;

  /** The library's own view of a hang (the backend record's hangView: NCCL RAS), asked after collbench's verdict. */
  hangView: (() => Promise<LibraryHangView>) | null = null;
  /** Where the expiry is recorded (run.ts: the report's `timeout`). */
  recordTimeout: ((t: ReportTimeout) => Promise<void>) | null = null;

  /** From now on, an expired wait first asks every rank where it is and names those that did not arrive. */
  attach(report: HungReport): void {
    this.report = report;
  }

  /** The limit in words, for the run's preamble ("# Watchdog: …"). */
  describe(): string {
    if (this.explicitSec === 0) return 'off (-T 0)';
    if (this.explicitSec !== null) return `${this.explicitSec} s per wait (-T ${this.explicitSec})`;
    return `${this.minSec} s per wait (default; ${DEFAULT_FACTOR} x the expected time of a longer one; -T N sets it, -T 0 disables it)`;
  }

  /** `work` under the limit; on expiry the job is aborted (every rank, through the backend), then onTimeout.
   *  `loopIters`: the wait is a native timed loop or warm-up of that many iterations, whose current one the report gives. */
  async watch<T>(what: string, expectedSec: number, work: Promise<T>, loopIters: number | null = null): Promise<T> {
    this.report?.board.enter(what, loopIters);
    const seconds = this.limitSec(expectedSec);
    if (seconds <= 0) return work;
    const how =
      this.explicitSec === null ? `${seconds}s, default watchdog; -T sets it, -T 0 disables it` : `${seconds}s`;
    const due = Date.now() + seconds * 1000;
    const timer = setLongTimeout(() => {
      void this.expire(what, how, Date.now() - due);
    }, seconds * 1000);
    try {
      return await work;
    } finally {
      timer.clear();
    }
  }

  /** The limit of `what` expired: say so, say who did not arrive (the lowest rank that answers says it), abort.
   *  `lateMs`: how long after its due time the timer fired; seconds mean this process itself was not running
   *  (SIGSTOP, then SIGCONT from a launcher ending the job): it is the one the others waited for, not a witness. */
  private async expire(what: string, how: string, lateMs: number): Promise<void> {
    const host = hostname().split('.')[0];
    this.io.err(`${host}: Test timeout (${how}) in ${what}`);
    try {
      await this.beforeAbort?.();
    } catch {
      /* the timeout is what is reported */
    }
    const r = this.report;
    let verdict: string | null = null;
    if (r && lateMs > FROZEN_MS) {
      verdict = `${host}: rank ${r.self} itself did not run for ${(lateMs / 1000).toFixed(1)} s (stopped or starved)`;
      this.io.err(verdict);
    } else if (r) {
      const answers = await survey(r.peers, r.self, r.token, SURVEY_MS);
      if (await this.lowerRankSaysIt(r, answers)) return this.end();
      verdict = notArrivedLine(r.board.position(), answers, (k) => r.peers[k]?.host ?? `rank ${k}`);
      this.io.err(verdict);
      if (r.hint) this.io.err(r.hint);
    }
    await this.besideVerdict(what, verdict);
    this.end();
  }

  /** A lower rank that answered says it (once per job), and its abort ends this process too. After the grace period
   *  this process is still here: with a job-wide abort the lower rank's limit is longer (it says nothing yet); without
   *  one (Gloo) the lower rank has said it and ended only itself, so its board is gone. */
  private async lowerRankSaysIt(r: HungReport, answers: Answer[]): Promise<boolean> {
    const lower = answers.filter((a) => a.rank < r.self && a.state === 'answered').map((a) => a.rank);
    if (lower.length === 0) return false;
    await sleep(GRACE_MS);
    const again = await Promise.all(lower.map((k) => ask(k, r.peers[k]!, r.token, SURVEY_MS)));
    return again.some((a) => a.state === 'gone');
  }

  /** The library's view printed beside the verdict, and both recorded; neither may keep the job from ending. */
  private async besideVerdict(what: string, verdict: string | null): Promise<void> {
    try {
      const library = this.hangView ? await this.hangView() : null;
      for (const line of library?.lines ?? []) this.io.err(line);
      await this.recordTimeout?.({ what, verdict, library });
    } catch {
      /* the timeout is what is reported */
    }
  }

  private end(): void {
    this.native.abort(EXIT.TIMEOUT); // ends every rank of the job; what follows is for a backend without one
    if (this.onTimeout) this.onTimeout();
  }
}
