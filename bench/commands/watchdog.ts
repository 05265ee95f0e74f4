// The run's watchdog: every wait of a run (start-up exchanges, barriers, warm-up, row-halves) must settle within a
// limit, or the job is aborted on every rank and the process exits 4. -T N sets the limit (0: none); without -T a
// default one guards against a hung peer: max(COLLBENCH_WATCHDOG_MIN_S, default 120 s, 10 × the wait's expected
// time), the expected time following from the size of the wait and the slowest bandwidth measured so far.
import { hostname } from 'node:os';
import { EXIT } from '../core/errors.js';
import { DEFAULT_MIN_SEC, watchdogFloorSec } from '../core/watchdog-floor.js';
import type { NativeBackend } from '../native/binding.js';

/** Bandwidth assumed before any row has been measured: a slow link (400 Mbit/s), so a first row is never cut short. */
export const ASSUMED_BYTES_PER_SEC = 50e6;
/** Per-operation latency allowance of the model (1 ms: a loaded host or a slow launcher, not a fast network). */
export const OP_OVERHEAD_SEC = 1e-3;
/** The default limit is this many times the expected time of the wait. */
export const DEFAULT_FACTOR = 10;
export { DEFAULT_MIN_SEC };

export interface WatchdogIO { err: (line: string) => void }

export class Watchdog {
  /** Slowest time per byte seen so far (rows of at least 64 KiB, where bandwidth rather than latency counts). */
  private secPerByte = 1 / ASSUMED_BYTES_PER_SEC;
  private measured = false;
  readonly minSec: number;

  /** `explicitSec`: -T as given (null: not given → the default watchdog; 0: none). */
  constructor(private readonly explicitSec: number | null, private readonly io: WatchdogIO,
    private readonly native: NativeBackend, private readonly onTimeout: (() => never) | undefined,
    env: NodeJS.ProcessEnv = process.env) {
    this.minSec = watchdogFloorSec(env);
  }

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

  /** The limit of a wait whose expected duration is `expectedSec`: -T, else the default; 0 = none. */
  limitSec(expectedSec: number): number {
    if (this.explicitSec !== null) return this.explicitSec;
    return Math.ceil(Math.max(this.minSec, DEFAULT_FACTOR * expectedSec));
  }

  /** The limit in words, for the run's preamble ("# Watchdog: …"). */
  describe(): string {
    if (this.explicitSec === 0) return 'off (-T 0)';
    if (this.explicitSec !== null) return `${this.explicitSec} s per wait (-T ${this.explicitSec})`;
    return `${this.minSec} s per wait (default; ${DEFAULT_FACTOR} x the expected time of a longer one; -T N sets it, -T 0 disables it)`;
  }

  /** `work` under the limit; on expiry the job is aborted (every rank, through the backend), then onTimeout. */
  async watch<T>(what: string, expectedSec: number, work: Promise<T>): Promise<T> {
    const seconds = this.limitSec(expectedSec);
    if (seconds <= 0) return work;
    const how = this.explicitSec === null ? `${seconds}s, default watchdog; -T sets it, -T 0 disables it` : `${seconds}s`;
    const timer = setTimeout(() => {
      this.io.err(`${hostname().split('.')[0]}: Test timeout (${how}) in ${what}`);
      this.native.abort(EXIT.TIMEOUT); // ends every rank of the job; what follows is for a backend without one
      if (this.onTimeout) this.onTimeout();
    }, seconds * 1000);
    try {
      return await work;
    } finally {
      clearTimeout(timer);
    }
  }
}
