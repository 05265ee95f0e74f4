// runSuite(): one benchmark run — the programmatic entry the CLI, compare and the tests share
// (docs/architecture.md, "The flow of one run"). Loads a backend, plans the sweeps, drives the native timed loop row-half by
// row-half and hands every row to the reporters (rank 0 only). Every rank runs the same plan, so
// decisions never need to be negotiated between ranks.
import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import type { Adjusted, BackendDriver } from '../backends/driver.js';
import { findBackendRecord, selectBackend } from '../backends/registry.js';
import type { CollectiveDescriptor, LayoutContext } from '../collectives/descriptor.js';
import { getCollective } from '../collectives/index.js';
import { UsageError } from '../core/errors.js';
import { cycleBelowWarnBusBw, minBwVerdict, runExitCode } from '../core/verdict.js';
import { sweepSizes, warmupSizes } from '../config/sizes.js';
import { algBwGBps, averageBusBw, busBwGBps } from '../core/metrics.js';
import { planCases, probedPairs, refusalLines, type CasePair, type CollectiveShape, type Refusal, type SweepCase } from '../core/plan.js';
import { findRefusals } from '../backends/refusals.js';
import { COLL_ID, DTYPE_BYTES, DTYPE_ID, OP_ID, type HalfResult, type HalfSpec } from '../core/types.js';
import { iterStats } from '../core/iter-stats.js';
import { loopCpuPlan, PIN_LOOP_ENV } from '../core/loop-cpu.js';
import type { ResolvedOptions } from '../core/flags.js';
import { shortHost, type RankLineInfo } from '../core/ranks.js';
import { alignClocks, arrivalEvidence, type ClockAlignment } from '../core/lateness.js';
import { deviceArrivalsOnHost, rankClock } from '../core/device-arrivals.js';
import { arrivalTracePath, traceArrivals } from './arrival-trace.js';
import { disconnectedWorldWarning, launcherRank, monotonicClockId } from '../launch/environment.js';
import { boardBindAddress, decodeEntries, encodeEntry, ProgressBoard } from '../launch/progress-board.js';
import { Watchdog } from './watchdog.js';
import { COMBINE, type BackendInfo, type NativeBackend } from '../native/binding.js';
import { buildReporters, checkOutputPaths, outputSpecs } from '../report/outputs.js';
import type { CycleRecord, Reporter, RowHalfRecord, RowRecord, RunSummary } from '../report/reporter.js';
import { VERSION } from '../version.js';
import { ENV } from '../core/environment.js';

/** Where a command's lines go: plain functions (passed around on their own, never called as methods). */
export interface RunIO {
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface SuiteOutcome {
  exitCode: number;
  outOfBounds: number;
  avgBusBw: number;
  rows: RowRecord[];
  info: BackendInfo;
}

export interface SuiteHooks {
  /** Reporters besides the nccl-tests table (created on rank 0 only, after the backend is up). */
  extraReporters?: (info: BackendInfo) => Reporter[];
  /** The command line as given (program path first): recorded in reports with a rerun command. */
  argv?: readonly string[];
  /** Where NCCL_TESTS_MIN_BW, NCCL_TESTS_ALLTOALLV_* and the launchers' variables are read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** -T expired and the backend's abort returned (a backend without a job-wide abort): end the process. The
   *  caller decides how (cli/main.ts exits 4): library code never exits the process itself. */
  onTimeout?: () => never;
}

export async function runSuite(options: ResolvedOptions, io: RunIO, hooks: SuiteHooks = {}): Promise<SuiteOutcome> {
  const desc = getCollective(options.collective);
  // Before anything starts, by the rank that writes (rank 0, or every rank when no launcher says which):
  // ranks on other hosts may not see rank 0's folder. The --np launcher has already checked the same paths.
  const launched = launcherRank(hooks.env ?? process.env);
  if (launched === null || launched === 0) checkOutputPaths(outputSpecs(options), { force: options.force });
  return withBackend(options, io, hooks, async (up) => {
    // Counts the backend cannot take: refused first, whatever memory the job has (every rank alike).
    refuseCounts(options, desc, up.driver, up.info, hooks.env ?? process.env);
    const adjusted = await up.adjust();
    const reporters = (up.info.worldRank ?? up.info.rank) === 0
      ? [...buildReporters(adjusted.options, io), ...(hooks.extraReporters?.(up.info) ?? [])] : [];
    return runInitialized({ options: adjusted.options, requested: options, io, desc, driver: up.driver, native: up.native, info: up.info,
      reporters, hooks, dog: up.dog, reducedMaxBytes: adjusted.reducedMaxBytes });
  });
}

/** A backend that is up: its driver, module, info and the watchdog every wait goes through. */
export interface BackendUp {
  driver: BackendDriver;
  native: NativeBackend;
  info: BackendInfo;
  dog: Watchdog;
  /** What the job's devices allow (nccl: GPU memory cap, datatypes; CPUs: host memory), agreed on every rank. */
  adjust(): Promise<Adjusted>;
}

/** Whether this process has peers in its job (other processes that may wait for it in a collective). */
export function hasPeers(info: BackendInfo): boolean {
  return ((info as { worldRanks?: number }).worldRanks ?? info.nranks) > (info.localRanks ?? 1);
}

/** Brings the options' backend up as every run does (driver checks, init, the watchdog), hands it to `body` and
 *  finalizes it afterwards (runSuite and `collbench workload`). Every wait of the bring-up is under the watchdog
 *  (-T, else the default limit). A process that fails leaves at once when it has peers: finalizing would wait for
 *  them in a collective (MPI_Finalize's fence, Gloo's final barrier) while they wait for it in another, and its
 *  reason would never be printed; its non-zero exit ends the job (mpirun, the --np launcher), or their watchdog does. */
export async function withBackend<T>(options: ResolvedOptions, io: RunIO, hooks: SuiteHooks,
  body: (up: BackendUp) => Promise<T>): Promise<T> {
  const { record, module: native, passedOver } = selectBackend(options.backend, { ncclLib: options.ncclLib, options }, hooks.env);
  if (passedOver !== null && (launcherRank(hooks.env ?? process.env) ?? 0) === 0) io.err(passedOver);
  const driver = record.createDriver(hooks.env);
  driver.validate(options);
  driver.prepare?.(options);
  const dog = new Watchdog(options.timeoutSec, io, native, hooks.onTimeout, hooks.env);
  const info = await dog.watch(record.bringUp, 0,
    driver.init ? driver.init(native, options) : Promise.resolve(native.init()));
  let failed = true;
  try {
    const hangView = record.hangView; // the library's own view of a hang (nccl: RAS), printed beside the verdict
    if (hangView) dog.hangView = () => hangView(hooks.env ?? process.env, info);
    native.setResultHoldMs(dog.resultHoldMs());
    await placeLoop(native, info, dog, io, hooks.env ?? process.env);
    const adjust = async (): Promise<Adjusted> => (driver.adjust
      ? dog.watch('the start-up exchange of device and memory limits', 0, Promise.resolve(driver.adjust(options, info, native)))
      : { options, reducedMaxBytes: null });
    const result = await body({ driver, native, info, dog, adjust });
    failed = false;
    return result;
  } finally {
    const leave = failed && hasPeers(info);
    if (!leave) native.finalize();
    driver.shutdown?.({ leave });
  }
}

/** Keeps the process's other threads off the timed loop's CPU where this process may decide it (core/loop-cpu.ts).
 *  A refusal (a container without sched_setaffinity, another system) is said once; the run goes on unplaced. */
async function placeLoop(native: NativeBackend, info: BackendInfo, dog: Watchdog, io: RunIO,
  env: NodeJS.ProcessEnv): Promise<void> {
  try {
    const plan = loopCpuPlan({ allowed: native.allowedCpus(), localSize: info.localSize, gpu: findBackendRecord(info.backend)?.gpu ?? false, env });
    if ('cpu' in plan) await dog.watch('placing the timed loop on a CPU of its own', 0, native.isolateLoopAsync(plan.cpu));
  } catch (e) {
    io.err(`# Warning: the timed loop shares its CPU with the other threads (${(e as Error).message}); ${PIN_LOOP_ENV}=0 ` +
      'silences this');
  }
}

/** One row-half's native spec for one rank of this process (default: its first), from the collective's descriptor. */
function halfSpec(options: ResolvedOptions, desc: CollectiveDescriptor, info: BackendInfo, ctx: LayoutContext,
  c: SweepCase, sizeBytes: number, inPlace: boolean, checkRounds: number, rank = info.rank) {
  const layout = desc.layout(sizeBytes, DTYPE_BYTES[c.dtype], info.nranks, rank, ctx);
  const root = Math.max(c.root, 0);
  const half = desc.half(layout, { rank, nranks: info.nranks, root, inPlace, op: c.op });
  const checked = checkRounds > 0 && half.checked;
  const spec: HalfSpec = {
    coll: COLL_ID[desc.name], dtype: DTYPE_ID[c.dtype], op: OP_ID[c.op], root, inPlace,
    count: layout.count, sendOffset: half.sendOffset, recvOffset: half.recvOffset,
    rotateBytes: layout.rotateBytes, maxBytes: options.maxBytes, peers: layout.peers,
    fill: half.fill, expect: half.expect,
    iters: options.iters, aggIters: options.aggIters, blocking: options.blocking,
    perIter: options.perIterTiming, checkRounds: checked ? checkRounds : 0, checkSeed: 0,
    average: options.average, unalignElems: options.unalign, graphLaunches: options.cudaGraph,
    // Who the others waited for means something only where nobody can leave before the last one arrives, and where
    // there are others (or the device-arrival trace asks for the one rank's arrivals).
    arrivals: desc.synchronizing && layout.count > 0 && (info.nranks > 1 || arrivalTracePath(ctx.env) !== null),
  };
  return { spec, layout, checked };
}

/** The specs of every rank this process drives (one, or -t × -g with nccl): a spec, or one per local rank. */
export function localSpecs(options: ResolvedOptions, desc: CollectiveDescriptor, info: BackendInfo, ctx: LayoutContext,
  c: SweepCase, sizeBytes: number, inPlace: boolean, checkRounds: number, checkSeed = 0) {
  const locals = info.localRanks ?? 1;
  const all = Array.from({ length: locals }, (_, i) =>
    halfSpec(options, desc, info, ctx, c, sizeBytes, inPlace, checkRounds, info.rank + i));
  for (const h of all) h.spec.checkSeed = checkSeed;
  return { ...all[0], specs: locals === 1 ? all[0].spec : all.map((h) => h.spec) };
}

/** One run's state shared by the steps below (the backend is up; reporters exist on rank 0 only). */
interface RunContext {
  options: ResolvedOptions;
  /** The options as given, before adjust(): which lists were `all` (core/plan.ts probedPairs). */
  requested: ResolvedOptions;
  io: RunIO;
  desc: CollectiveDescriptor;
  driver: BackendDriver;
  native: NativeBackend;
  info: BackendInfo;
  reporters: Reporter[];
  hooks: SuiteHooks;
  /** Every wait of the run goes through it (-T, or the default watchdog). */
  dog: Watchdog;
  reducedMaxBytes: number | null;
}

/** Rank 0's means of naming who arrived last: the processes' clocks put together, every rank's line, and how many
 *  ranks each process drives (host arrivals are one row per process, device arrivals one per rank). */
interface ArrivalContext {
  clock: ClockAlignment;
  ranks: RankLineInfo[];
  localRanks: number;
}

/** Barrier rounds whose exit times align the processes' clocks (a few ms at start-up, only across kernels). */
const CLOCK_ROUNDS = 64;

/** Every process: how its clock relates to rank 0's; rank 0 gets the alignment, the others null. */
async function alignProcessClocks(run: RunContext, ranks: RankLineInfo[]): Promise<ArrivalContext | null> {
  const { info, native, dog } = run;
  const localRanks = info.localRanks ?? 1;
  // One process: nobody waits for another, except one GPU for another (device arrivals, on one clock).
  if (info.nranks <= localRanks) {
    return info.nranks > 1 && run.driver.deviceArrivals && run.options.perIterTiming
      ? { clock: alignClocks([[]], true), ranks, localRanks } : null;
  }
  const ids = await dog.watch('the start-up exchange of clock ids', 0, native.gatherStringsAsync(monotonicClockId()));
  const samples = await dog.watch('the start-up clock alignment', 0, native.clockSamplesAsync(CLOCK_ROUNDS));
  if (!ids || !samples) return null;
  // COLLBENCH_CLOCK_ALIGN=barrier estimates offsets even on one kernel (to see the estimate's accuracy: truly 0 there).
  const forced = (run.hooks.env ?? process.env)[ENV.CLOCK_ALIGN] === 'barrier';
  const sameClock = !forced && ids.every((id) => id !== '' && id === ids[0]);
  return { clock: alignClocks(samples, sameClock), ranks, localRanks };
}

/**
 * Every process: a progress board (launch/progress-board.ts) on this host, and every other's board and host, so that
 * an expired wait can name who did not arrive. The addresses travel in one allreduce (every rank learns every
 * entry). A board that cannot listen leaves its entry empty: the others then report it as not answering.
 */
export async function attachProgressBoards(run: Pick<RunContext, 'info' | 'native' | 'dog' | 'io'>, env: NodeJS.ProcessEnv):
  Promise<ProgressBoard | null> {
  const { info, native, dog } = run;
  const locals = info.localRanks ?? 1;
  const processes = info.nranks / locals;
  if (!(processes > 1) || !Number.isInteger(processes)) return null;
  const self = Math.floor((info.worldRank ?? info.rank) / locals);
  const host = shortHost(hostname());
  // The job's token: two random 26-bit numbers from process 0 (exact in a double sum), zero elsewhere.
  const tokenParts = self === 0 ? [randomInt(2 ** 26), randomInt(2 ** 26)] : [0, 0];
  const board = new ProgressBoard(self, host, '', () => native.loopIteration());
  let entry = { ipv4: 0, port: 0, host };
  try {
    entry = { ...(await board.listen(boardBindAddress(env))), host };
  } catch (e) {
    run.io.err(`# Warning: no progress board on ${host} (${(e as Error).message}): a timeout cannot say where this rank is`);
  }
  const summed = await dog.watch('the start-up exchange of progress boards', 0,
    native.allreduceAsync([...tokenParts, ...encodeEntry(self, processes, entry)], COMBINE.sum));
  const token = `${summed[0]!.toString(16)}-${summed[1]!.toString(16)}`;
  board.setToken(token);
  dog.attach({
    board, peers: decodeEntries(summed.slice(2)), self, token,
  });
  return board;
}

/** Who the others waited for in one row-half (rank 0 only): each process's share of iterations it was last, and the
 *  rank named late when one stood out. */
function arrivalRecord(arrival: ArrivalContext | null, result: HalfResult): Pick<RowHalfRecord, 'late' | 'lastShare'> {
  if (!arrival || !result.arrivalUs) return { late: null, lastShare: null };
  // Device arrivals: one row per rank, each on its process's host clock once its reference is added.
  const onDevice = result.deviceRefUs ? deviceArrivalsOnHost(result.arrivalUs, result.deviceRefUs) : null;
  const evidence = onDevice
    ? arrivalEvidence(onDevice.arrivalsUs, rankClock(arrival.clock, arrival.localRanks, onDevice.referenceUs))
    : arrivalEvidence(result.arrivalUs, arrival.clock);
  if (!evidence) return { late: null, lastShare: null };
  const late = evidence.late;
  const rankOf = (row: number): number => (onDevice ? row : row * arrival.localRanks);
  const who = late ? arrival.ranks[rankOf(late.process)] : undefined;
  return {
    lastShare: onDevice || arrival.localRanks === 1 ? evidence.lastShare : null,
    late: late ? {
      rank: who?.rank ?? rankOf(late.process), host: who?.host ?? '', lastFraction: late.lastFraction,
      medianLateUs: late.medianLateUs, marginUs: late.marginUs,
      ...(onDevice && who && typeof who.device === 'number' ? { device: who.device, bus: who.bus } : {}),
    } : null,
  };
}

/** One allocation for the whole run: the largest send/recv need over every datatype and local rank, plus -u slack. */
function allocateBuffers(run: RunContext, ctx: LayoutContext): void {
  const { options, desc, info, native } = run;
  let sendBytes = options.maxBytes, recvBytes = options.maxBytes;
  for (const dtype of options.dtypes) {
    const ts = DTYPE_BYTES[dtype];
    for (let local = 0; local < (info.localRanks ?? 1); local++) {
      const l = desc.layout(options.maxBytes, ts, info.nranks, info.rank + local, ctx);
      sendBytes = Math.max(sendBytes, l.sendElems * ts, l.rotateBytes);
      recvBytes = Math.max(recvBytes, l.recvElems * ts, l.rotateBytes);
    }
  }
  const slack = 8 * options.unalign + 64;
  native.allocate(sendBytes + slack, recvBytes + slack);
}

/**
 * --duration: whether the soak's time has passed, agreed by every rank after each row (each asks its own clock; an
 * allreduce max makes the first rank that sees it pass stop everyone after the same row). Without --duration: never.
 */
function soakClock(run: RunContext, durationSec: number | null): { endless: boolean; over: boolean; passed(): Promise<boolean> } {
  const deadline = durationSec === null ? null : Date.now() + durationSec * 1000;
  const state = {
    endless: deadline !== null,
    over: false,
    async passed(): Promise<boolean> {
      if (deadline === null) return false;
      const mine = Date.now() >= deadline ? 1 : 0;
      const [any] = await run.dog.watch('the soak\'s end-of-row agreement', 0, run.native.allreduceAsync([mine], COMBINE.max));
      state.over = any === 1;
      return state.over;
    },
  };
  return state;
}

/** Counts the backend cannot take (MPI's int counts for the collectives it does not split), refused on every rank
 *  alike before any buffer is allocated: the largest count of the sweep is the one at -e. */
function refuseCounts(options: ResolvedOptions, desc: CollectiveDescriptor, driver: BackendDriver, info: BackendInfo,
  env: NodeJS.ProcessEnv): void {
  const limit = driver.maxCount?.(options.collective);
  if (!limit) return;
  const ctx: LayoutContext = { env, minBytes: options.minBytes, maxBytes: options.maxBytes };
  for (const dtype of options.dtypes) {
    const l = desc.layout(options.maxBytes, DTYPE_BYTES[dtype], info.nranks, info.rank, ctx);
    const count = Math.max(l.count, ...(l.peers ? [...l.peers.sendCounts, ...l.peers.recvCounts, ...l.peers.sendDispls, ...l.peers.recvDispls] : []));
    if (count > limit.max) {
      throw UsageError.forFlag('-e', `${options.collective} ${dtype} at ${options.maxBytes} bytes needs a count of ${count} elements ` +
        `in one call, above ${limit.max} on the ${info.backend} backend (${limit.why}); lower -e or use a larger datatype`);
    }
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
async function measureHalf(run: RunContext, queued: QueuedHalf):
  Promise<{ result: HalfResult; precision: RowHalfRecord['precision'] }> {
  const { options, native } = run;
  const { h, label } = queued;
  const sizeBytes = h.layout.sizeBytes;
  const once = async (iters: number, submitted?: Promise<HalfResult>): Promise<HalfResult> => {
    const specs = Array.isArray(h.specs) ? h.specs.map((s) => ({ ...s, iters })) : { ...h.specs, iters };
    const ops = iters * options.aggIters + h.spec.checkRounds + 1; // timed, checked and the untimed op
    const result = await run.dog.watch(label, run.dog.expectedSec(ops, sizeBytes), submitted ?? native.runHalf(specs), iters);
    run.dog.learn(sizeBytes, result.timeUs);
    // The counts are summed as doubles by the library's own allreduce: one that corrupts data (the fault tests' PMPI
    // interposer at index 0) leaves them a hair off a whole number. They are counts.
    result.wrong = Math.round(result.wrong);
    result.ranksWithWrong = Math.round(result.ranksWithWrong);
    return result;
  };
  const target = options.targetRsdPct;
  let iters = options.iters;
  const budgetSec = Number(run.hooks.env?.[ENV.TARGET_RSD_BUDGET_S] ?? process.env[ENV.TARGET_RSD_BUDGET_S]) || TARGET_RSD_BUDGET_SEC;
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
    const [again] = await run.dog.watch(`the --target-rsd decision of ${label}`, 0, native.allreduceAsync([mine], COMBINE.max));
    if (again !== 1) break;
    iters *= 2;
    runStarted = Date.now();
    result = await once(iters);
  }
  const achieved = rsd(result);
  return { result, precision: { targetRsdPct: target, rsdPct: achieved, sampleCvPct: cv(result), iterations: iters, met: achieved <= target } };
}

/** Row-halves queued ahead of the one being awaited, at most (the whole of a usual sweep: 20 sizes x 2 halves). */
export const LOOKAHEAD_HALVES = 64;

/** Where a row-half is in its sweep: cycle, index of its size, placement. */
interface HalfAt { cycle: number; index: number; inPlace: boolean }

/** A row-half submitted to the native executor (one thread per module, first in first out), not yet awaited. */
interface QueuedHalf {
  at: HalfAt;
  h: ReturnType<typeof localSpecs>;
  label: string;
  result: Promise<HalfResult>;
}

/**
 * The row-halves of one sweep in the order they run, submitted ahead of their turn: the native thread runs them back
 * to back, as a C benchmark runs its rows, and hands their results over in batches (native/src/addon/executor.h), so
 * that JavaScript formats and exports rows while nothing is timed, or beside a long half, never in a gap before one
 * (README "Performance").
 * How far ahead depends on what is decided between halves: --target-rsd decides each half's repeats (nothing ahead:
 * the decision's allreduce must come between the half and the next, in the same order on every rank); --duration
 * decides after each row whether to go on (the row's in-place half only). Each half is still awaited, under the
 * watchdog, from when the one before it was done, so the limit and the hung-rank report are those of the half the
 * rank is in; a half that fails cancels those queued behind it (natively, CORE_CANCELLED).
 */
class HalfQueue {
  private readonly queued: QueuedHalf[] = [];
  private next: HalfAt | null = { cycle: 0, index: 0, inPlace: false };
  private readonly depth: 'none' | 'row' | number;
  /** The sweep repeats until stopped (-N 0, or --duration). */
  private readonly endless: boolean;

  constructor(private readonly run: RunContext, private readonly ctx: LayoutContext, private readonly c: SweepCase,
    private readonly sizes: number[], private readonly nextSeed: () => number, soak: boolean) {
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
      throw new Error(`internal: row-half queue out of order (queued ${JSON.stringify(q.at)}, wanted ${JSON.stringify(at)})`);
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
    else if (this.endless || at.cycle + 1 < options.runCycles) this.next = { cycle: at.cycle + 1, index: 0, inPlace: false };
    else this.next = null;
  }
}

/** Times both halves of one row (out-of-place, then in-place) and records them. */
async function runRow(run: RunContext, queue: HalfQueue, c: SweepCase, cycle: number, index: number,
  totals: { outOfBounds: number; busBws: number[] }, arrival: ArrivalContext | null): Promise<RowRecord> {
  const { options, desc, info } = run;
  const halves: RowHalfRecord[] = [];
  let layout = null;
  for (const inPlace of [false, true]) {
    const queued = queue.take({ cycle, index, inPlace });
    const h = queued.h;
    layout = h.layout;
    const { result, precision } = await measureHalf(run, queued);
    traceArrivals(run.hooks.env ?? process.env, layout.sizeBytes, inPlace, result);
    // As nccl-tests: bandwidth always from the completion time; -C only changes the printed time.
    const algBw = algBwGBps(layout.algBytes, result.timeUs);
    const busBw = busBwGBps(algBw, desc.busBwFactor(info.nranks));
    if (h.checked) totals.outOfBounds += result.ranksWithWrong;
    totals.busBws.push(busBw);
    halves.push({
      inPlace, timeUs: options.reportCpuTime ? result.cpuTimeUs : result.timeUs, algBw, busBw,
      wrong: h.checked ? result.wrong : null, result, ...arrivalRecord(arrival, result),
      ...(precision ? { precision } : {}),
    });
  }
  return {
    sweep: c, cycle, sizeBytes: layout!.sizeBytes, count: layout!.count, type: c.dtype,
    redop: desc.redopColumn(c.op), root: desc.rootColumn(c.root), halves: [halves[0]!, halves[1]!], time: new Date(),
  };
}

async function runInitialized(run: RunContext): Promise<SuiteOutcome> {
  const { options, io, driver, native, info } = run;
  const env = run.hooks.env ?? process.env;
  const { nranks } = info;
  const warning = disconnectedWorldWarning(nranks, env);
  if (warning) io.err(warning);
  if (options.root >= nranks)
    throw new UsageError(`-r/--root: root ${options.root} does not exist in a world of ${nranks} ranks`);

  const rankLines = await run.dog.watch('the start-up gather of rank lines', 0,
    native.gatherStringsAsync(JSON.stringify(driver.rankLine(info))));
  const perProcess = (rankLines ?? []).map((s) => [JSON.parse(s) as RankLineInfo | RankLineInfo[]].flat());
  const board = await attachProgressBoards(run, env);
  try {
    return await runRows(run, perProcess);
  } finally {
    board?.close();
  }
}

/** The run stopped early: the exporters write the rows they hold back (the error that stopped it is what is reported:
 *  a write that fails now, the disk full say, is that error again or a lesser one). */
async function abandonReports(reporters: readonly Reporter[]): Promise<void> {
  for (const r of reporters) {
    try {
      await r.abandon?.();
    } catch { /* the run's own error is reported */ }
  }
}

/** The pairs of -d all / -o all the library refuses (backends/refusals.ts): one op of one element (or of one per
 *  rank, where the collective splits the size) each, on the buffers just allocated, under the watchdog. */
async function probeRefusals(run: RunContext, ctx: LayoutContext, shape: CollectiveShape): Promise<Refusal[]> {
  const { options, desc, info, native, dog } = run;
  const bytesFor = (p: CasePair): number => {
    const ts = DTYPE_BYTES[p.dtype];
    const one = desc.layout(ts, ts, info.nranks, info.rank, ctx).count > 0 ? ts : ts * info.nranks;
    return Math.min(one, options.maxBytes);
  };
  return findRefusals({
    pairs: probedPairs(run.requested, options, shape), codes: run.driver.refusals ?? [],
    runOne: (p) => dog.watch(`the probe of ${options.collective} ${p.dtype} ${p.op}`, 0,
      native.warmup(localSpecs(options, desc, info, ctx, { ...p, root: 0 }, bytesFor(p), false, 0).specs, 1)),
    agree: (flags) => dog.watch('the start-up agreement on refused datatypes and ops', 0, native.allreduceAsync(flags, COMBINE.max)),
  });
}

/** The run proper, once every process is up: clocks, buffers, the sweeps, the summary. */
async function runRows(run: RunContext, perProcess: RankLineInfo[][]): Promise<SuiteOutcome> {
  const { options, desc, driver, native, info, reporters } = run;
  const env = run.hooks.env ?? process.env;
  const { nranks } = info;
  const arrival = await alignProcessClocks(run, perProcess.flat());
  const sizes = sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes);
  const ctx: LayoutContext = { env, minBytes: options.minBytes, maxBytes: options.maxBytes };
  allocateBuffers(run, ctx);

  const skipped = desc.skipReason(nranks);
  const shape: CollectiveShape = { loopsOps: desc.loopsOps, rooted: desc.rooted };
  const refused = skipped ? [] : await probeRefusals(run, ctx, shape);
  const cases = skipped ? [] : planCases(options, shape, nranks, refused);
  const meta = {
    options, program: options.program, version: VERSION, backend: `${info.backend} (${info.libraryVersionShort})`,
    info, ranks: perProcess.flat(),
    warnings: [...driver.warnings(options, desc, info), ...refusalLines(refused, info.libraryVersionShort, shape)],
    clock: arrival ? { ...arrival.clock } : null,
    perIterTimer: driver.perIterTimer, startTime: new Date(), argv: run.hooks.argv,
    plannedRows: options.runCycles === 0 ? null : cases.length * sizes.length * options.runCycles,
    reducedMaxBytes: run.reducedMaxBytes, watchdog: run.dog.describe(),
  };
  for (const r of reporters) await r.begin?.(meta);
  run.dog.beforeAbort = () => abandonReports(reporters); // a timeout: the rows held back are written first
  run.dog.recordTimeout = async (t) => { for (const r of reporters) await r.timedOut?.(t); }; // then the verdict

  const rows: RowRecord[] = [];
  const totals = { outOfBounds: 0, busBws: [] as number[] };
  const health = { cycles: 0, below: 0 };
  const soak = soakClock(run, options.durationSec);
  let checkSeed = 0; // nccl-tests: a per-thread counter, one step per row-half
  const nextSeed = (): number => ++checkSeed;

  for (const c of cases) {
    const sweep = `${options.collective} ${c.dtype} ${c.op} root ${c.root}`;
    // The barrier, the warm-ups and the first row-halves go to the native thread at once (it runs them in this order),
    // paused until all are queued: building them takes JavaScript about a millisecond, which at several ranks per host
    // would share the CPU of the first halves (a 2-rank broadcast's first row at 2-6x its time). Each is awaited in
    // turn under the watchdog.
    const queue = new HalfQueue(run, ctx, c, sizes, nextSeed, soak.endless);
    let barrier: Promise<void>;
    let warmups: { size: number; done: Promise<void> }[];
    native.pauseQueue();
    try {
      barrier = native.barrierAsync();
      barrier.catch(() => undefined);
      warmups = warmupSizes(options.minBytes, options.maxBytes).map((size) => {
        const done = native.warmup(localSpecs(options, desc, info, ctx, c, size, false, 0).specs, options.warmupIters);
        done.catch(() => undefined); // awaited below; after an earlier failure it is cancelled, not awaited
        return { size, done };
      });
      queue.prime();
    } finally {
      native.resumeQueue();
    }
    try {
      await run.dog.watch(`the barrier before ${sweep}`, 0, barrier);
      for (const { size, done } of warmups) {
        await run.dog.watch(`warm-up of ${sweep} ${size} B`, run.dog.expectedSec(options.warmupIters + 1, size),
          done, options.warmupIters);
      }
      // --duration repeats the sweep until the time has passed (as -N 0), every rank stopping after the same row.
      for (let cycle = 0; !soak.over && (soak.endless || options.runCycles === 0 || cycle < options.runCycles); cycle++) {
        const cycleBusBws: number[] = [];
        for (const [index, sizeBytes] of sizes.entries()) {
          for (const r of reporters) r.rowStart?.({ index: rows.length, sweep: c, cycle, sizeBytes });
          const row = await runRow(run, queue, c, cycle, index, totals, arrival);
          rows.push(row);
          cycleBusBws.push(...row.halves.map((h) => h.busBw));
          for (const r of reporters) await r.row?.(row);
          if (await soak.passed()) break;
        }
        if (cycleBusBws.length < 2 * sizes.length) break; // --duration ended it part-way: not a cycle to judge
        const avg = averageBusBw(cycleBusBws);
        const below = cycleBelowWarnBusBw(avg, options.warnBusBw);
        health.cycles += 1;
        if (below) health.below += 1;
        const record: CycleRecord = { sweep: c, cycle, avgBusBw: avg, warnBusBw: options.warnBusBw, below, time: new Date() };
        for (const r of reporters) await r.cycleEnd?.(record);
      }
    } catch (e) {
      await queue.settle(); // nothing of this run may still be running when the backend is finalized
      await abandonReports(reporters);
      throw e;
    }
    if (soak.over) break;
  }

  const avgBusBw = averageBusBw(totals.busBws);
  const verdict = minBwVerdict(avgBusBw, env.NCCL_TESTS_MIN_BW);
  const exitCode = runExitCode(totals.outOfBounds, verdict, health.below);
  const memory = options.memoryReport && driver.memoryUsage ? driver.memoryUsage(native) : null;
  const summary: RunSummary = {
    outOfBounds: totals.outOfBounds, avgBusBw, minBwVerdict: verdict, exitCode, skipped, memory,
    cycles: health.cycles, cyclesBelowWarnBusBw: health.below,
  };
  for (const r of reporters) await r.end?.(summary);
  return { exitCode, outOfBounds: totals.outOfBounds, avgBusBw, rows, info };
}
