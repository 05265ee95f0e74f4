// The row-halves of one sweep, submitted to the native executor ahead of their turn so that JavaScript works while
// nothing is timed; each is still awaited in its turn under the watchdog (suite.ts, measure.ts).
import type { LayoutContext } from '../collectives/descriptor.js';
import type { SweepCase } from '../config/cases.js';
import type { HalfResult } from '../core/types.js';
import type { RunContext } from './context.js';
import { localSpecs } from './half-spec.js';

/** Row-halves queued ahead of the one being awaited, at most (the whole of a usual sweep: 20 sizes x 2 halves). */
export const LOOKAHEAD_HALVES = 64;

/** Where a row-half is in its sweep: cycle, index of its size, placement. */
export interface HalfAt {
  cycle: number;
  index: number;
  inPlace: boolean;
}

/** A row-half submitted to the native executor (one thread per module, first in first out), not yet awaited. */
export interface QueuedHalf {
  at: HalfAt;
  h: ReturnType<typeof localSpecs>;
  label: string;
  result: Promise<HalfResult>;
}

/**
 * The row-halves of one sweep in the order they run, submitted ahead of their turn: the native thread runs them back
 * to back, as a C benchmark runs its rows, and hands their results over in batches (native/src/addon/executor.h), so
 * that JavaScript formats and exports rows while nothing is timed, or beside a long half, never in a gap before one
 * (docs/performance.md, "Batched results: the sweep runs back to back").
 * How far ahead depends on what is decided between halves: --target-rsd decides each half's repeats (nothing ahead:
 * the decision's allreduce must come between the half and the next, in the same order on every rank); --duration
 * decides after each row whether to go on (the row's in-place half only). Each half is still awaited, under the
 * watchdog, from when the one before it was done, so the limit and the hung-rank report are those of the half the
 * rank is in; a half that fails cancels those queued behind it (natively, CORE_CANCELLED).
 */
export class HalfQueue {
  private readonly queued: QueuedHalf[] = [];
  private next: HalfAt | null = { cycle: 0, index: 0, inPlace: false };
  private readonly depth: 'none' | 'row' | number;
  /** The sweep repeats until stopped (-N 0, or --duration). */
  private readonly endless: boolean;

  constructor(
    private readonly run: RunContext,
    private readonly ctx: LayoutContext,
    private readonly c: SweepCase,
    private readonly sizes: number[],
    private readonly nextSeed: () => number,
    soak: boolean,
  ) {
    const { options } = run;
    this.depth = options.targetRsdPct !== null ? 'none' : soak ? 'row' : LOOKAHEAD_HALVES;
    this.endless = soak || options.runCycles === 0;
  }

  /** Queues the first halves before the sweep's warm-up has been awaited, so that they follow the warm-up at once. */
  prime(): void {
    this.fill(null);
  }

  /** The half at `at`, submitted now unless it was queued already; the halves after it are queued behind it. */
  take(at: HalfAt): QueuedHalf {
    if (this.queued.length === 0) this.submitNext();
    const q = this.queued.shift()!;
    if (q.at.cycle !== at.cycle || q.at.index !== at.index || q.at.inPlace !== at.inPlace)
      throw new Error(
        `internal: row-half queue out of order (queued ${JSON.stringify(q.at)}, wanted ${JSON.stringify(at)})`,
      );
    this.fill(at);
    return q;
  }

  /** When the run stops early (an error): cancels what has not started, waits (under the watchdog) for what runs. */
  async settle(): Promise<void> {
    if (this.queued.length === 0) return;
    this.run.native.cancelPending();
    const all = Promise.allSettled(this.queued.map((q) => q.result));
    this.queued.length = 0;
    await this.run.dog.watch('the row-halves queued ahead when the run stopped', 0, all);
  }

  private fill(current: HalfAt | null): void {
    const d = this.depth;
    if (d === 'none') return;
    if (d === 'row') {
      while (this.next && current !== null && this.next.cycle === current.cycle && this.next.index === current.index)
        this.submitNext();
      return;
    }
    while (this.next && this.queued.length < d) this.submitNext();
  }

  private submitNext(): void {
    const at = this.next;
    if (!at) throw new Error('internal: the run loop asked for a row-half past the end of the sweep');
    const { options, desc, info } = this.run;
    const sizeBytes = this.sizes[at.index]!;
    const h = localSpecs(options, desc, info, this.ctx, this.c, sizeBytes, at.inPlace, options.check, this.nextSeed());
    const label = `${options.collective} ${this.c.dtype} ${h.layout.sizeBytes} B ${at.inPlace ? 'in-place' : 'out-of-place'}`;
    const result = this.run.native.runHalf(h.specs);
    // Awaited in its turn; one abandoned after an earlier failure must not surface as an unhandled rejection.
    result.catch(() => undefined);
    this.queued.push({ at, h, label, result });
    if (!at.inPlace) this.next = { ...at, inPlace: true };
    else if (at.index + 1 < this.sizes.length) this.next = { cycle: at.cycle, index: at.index + 1, inPlace: false };
    else if (this.endless || at.cycle + 1 < options.runCycles)
      this.next = { cycle: at.cycle + 1, index: 0, inPlace: false };
    else this.next = null;
  }
}
