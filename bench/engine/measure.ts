// Measuring: one row-half timed (once, or doubled until --target-rsd is met), and one row's two halves turned into
// the record the reporters print (bandwidths, #wrong, who arrived last).
import type { SweepCase } from '../config/cases.js';
import { ENV } from '../core/environment.js';
import { algBwGBps, busBwGBps } from '../numbers/bandwidth.js';
import { iterStats } from '../numbers/stats.js';
import type { HalfResult } from '../core/types.js';
import { COMBINE } from '../native/binding.js';
import type { RowHalfRecord, RowRecord } from '../report/reporter.js';
import { arrivalRecord, traceArrivals, type ArrivalContext } from './arrivals.js';
import type { RunContext } from './context.js';
import type { HalfQueue, QueuedHalf } from './half-queue.js';

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
