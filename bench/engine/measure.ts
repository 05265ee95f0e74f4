// Measuring a sweep: its row-halves submitted to the native executor ahead of their turn (so that JavaScript works while
// nothing is timed), each awaited in its turn under the watchdog and timed (once, or doubled until --target-rsd is
// met), and one row's two halves turned into the record the reporters print (bandwidths, #wrong, who arrived last).
import type { LayoutContext } from '../collectives/descriptor.js';
import type { SweepCase } from '../config/cases.js';
import { ENV } from '../core/environment.js';
import type { HalfResult } from '../core/types.js';
import { COMBINE } from '../native/binding.js';
import { algBwGBps, busBwGBps } from '../numbers/bandwidth.js';
import { iterStats } from '../numbers/stats.js';
import type { RowHalfRecord, RowRecord } from '../report/reporter.js';
import { arrivalRecord, traceArrivals, type ArrivalContext } from './arrivals.js';
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

/** --target-rsd: each row-half may take at most this long in doubling its iterations (COLLBENCH_TARGET_RSD_BUDGET_S
 *  changes it, e.g. for a quick look or a test). */
export const TARGET_RSD_BUDGET_SEC = 10;
/** ... and at most this many iterations. */
export const TARGET_RSD_MAX_ITERS = 2 ** 20;

/**
 * One row-half, timed: once with -n iterations, or with --target-rsd again with twice the iterations until the relative
 * standard deviation of the mean time (the per-iteration samples' cv / sqrt(n)) is at most the target, or the budget is
 * spent. Rank 0 holds the
 * samples and decides; an allreduce (max of rank 0's decision and the others' 0) makes every rank run the same count.
 */
export async function measureHalf(
  run: RunContext,
  queued: QueuedHalf,
): Promise<{ result: HalfResult; precision: RowHalfRecord['precision'] }> {
  const { options, native } = run;
  const { h, label } = queued;
  const sizeBytes = h.layout.sizeBytes;
  const once = async (iters: number, submitted?: Promise<HalfResult>): Promise<HalfResult> => {
    const specs = Array.isArray(h.specs) ? h.specs.map((s) => ({ ...s, iters })) : { ...h.specs, iters };
    const ops = iters * options.aggIters + h.spec.checkRounds + 1; // timed, checked and the untimed op
    const result = await run.dog.watch(
      label,
      run.dog.expectedSec(ops, sizeBytes),
      submitted ?? native.runHalf(specs),
      iters,
    );
    run.dog.learn(sizeBytes, result.timeUs);
    // The counts are summed as doubles by the library's own allreduce: one that corrupts data (the fault tests' PMPI
    // interposer at index 0) leaves them a hair off a whole number. They are counts.
    result.wrong = Math.round(result.wrong);
    result.ranksWithWrong = Math.round(result.ranksWithWrong);
    return result;
  };
  const target = options.targetRsdPct;
  let iters = options.iters;
  const budgetSec = Number(run.env[ENV.TARGET_RSD_BUDGET_S]) || TARGET_RSD_BUDGET_SEC;
  const started = Date.now();
  let runStarted = started;
  let result = await once(iters, queued.result);
  if (target === null) return { result, precision: undefined };
  // The spread of single samples does not shrink with more of them; the precision of their mean (the reported time)
  // does: its relative standard deviation is cv / sqrt(samples).
  const samples = (r: HalfResult): number => (r.iterUs?.length ?? 0) - options.perIterSkip;
  const cv = (r: HalfResult): number => (samples(r) > 0 ? iterStats(r.iterUs!, options.perIterSkip).cvPct : Number.NaN);
  const rsd = (r: HalfResult): number => cv(r) / Math.sqrt(samples(r));
  for (;;) {
    const now = Date.now();
    // The next run takes about twice the last: stop when that would pass the budget.
    const roomy = (now - started + 2 * (now - runStarted)) / 1000 <= budgetSec && iters * 2 <= TARGET_RSD_MAX_ITERS;
    const mine = result.iterUs !== undefined && rsd(result) > target && roomy ? 1 : 0;
    const [again] = await run.dog.watch(
      `the --target-rsd decision of ${label}`,
      0,
      native.allreduceAsync([mine], COMBINE.max),
    );
    if (again !== 1) break;
    iters *= 2;
    runStarted = Date.now();
    result = await once(iters);
  }
  const achieved = rsd(result);
  return {
    result,
    precision: {
      targetRsdPct: target,
      rsdPct: achieved,
      sampleCvPct: cv(result),
      iterations: iters,
      met: achieved <= target,
    },
  };
}

/** Times both halves of one row (out-of-place, then in-place) and records them. */
export async function runRow(
  run: RunContext,
  queue: HalfQueue,
  c: SweepCase,
  cycle: number,
  index: number,
  totals: { outOfBounds: number; busBws: number[] },
  arrival: ArrivalContext | null,
): Promise<RowRecord> {
  const { options, desc, info } = run;
  const halves: RowHalfRecord[] = [];
  let layout = null;
  for (const inPlace of [false, true]) {
    const queued = queue.take({ cycle, index, inPlace });
    const h = queued.h;
    layout = h.layout;
    const { result, precision } = await measureHalf(run, queued);
    await run.links?.afterHalf();
    traceArrivals(run.env, layout.sizeBytes, inPlace, result);
    // As nccl-tests: bandwidth always from the completion time; -C only changes the printed time.
    const algBw = algBwGBps(layout.algBytes, result.timeUs);
    const busBw = busBwGBps(algBw, desc.busBwFactor(info.nranks));
    if (h.checked) totals.outOfBounds += result.ranksWithWrong;
    totals.busBws.push(busBw);
    halves.push({
      inPlace,
      timeUs: options.reportCpuTime ? result.cpuTimeUs : result.timeUs,
      algBw,
      busBw,
      wrong: h.checked ? result.wrong : null,
      result,
      ...arrivalRecord(arrival, result),
      ...(precision ? { precision } : {}),
    });
  }
  return {
    sweep: c,
    cycle,
    sizeBytes: layout!.sizeBytes,
    count: layout!.count,
    type: c.dtype,
    redop: desc.redopColumn(c.op),
    root: desc.rootColumn(c.root),
    halves: [halves[0]!, halves[1]!],
    time: new Date(),
  };
}
