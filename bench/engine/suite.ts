// runSuite(): one benchmark run, the programmatic entry the run command, compare's children and the tests share:
// brings the backend up, plans the sweeps, drives the timed loop row-half by row-half (measure.ts) and hands every row
// to the reporters (rank 0). Every rank runs the same plan, so no decision is negotiated between ranks.
import type { BackendDriver } from '../backends/driver.js';
import { findRefusals } from '../backends/refusals.js';
import type { CollectiveDescriptor, LayoutContext } from '../collectives/descriptor.js';
import { getCollective } from '../collectives/index.js';
import { sweepSizes, warmupSizes } from '../config/sizes.js';
import { UsageError } from '../core/errors.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { averageBusBw } from '../numbers/bandwidth.js';
import {
  planCases,
  probedPairs,
  refusalLines,
  type CasePair,
  type CollectiveShape,
  type Refusal,
} from '../config/cases.js';
import type { RankLineInfo } from '../core/ranks.js';
import { DTYPE_BYTES } from '../core/types.js';
import { cycleBelowWarnBusBw, minBwVerdict, runExitCode } from '../numbers/run-verdict.js';
import { disconnectedWorldWarning } from '../launch/launcher.js';
import { COMBINE, type BackendInfo } from '../native/binding.js';
import { buildReporters } from '../report/outputs.js';
import type { CycleRecord, Reporter, RowRecord, RunSummary } from '../report/reporter.js';
import { VERSION } from '../version.js';
import { alignProcessClocks } from './arrivals.js';
import { withBackend } from './bring-up.js';
import type { CheckedHooks, RunContext, SuiteOutcome } from './context.js';
import { localSpecs } from './half-spec.js';
import { linksCollector } from './links.js';
import { HalfQueue, runRow } from './measure.js';
import { attachProgressBoards } from './attach-boards.js';

/** `hooks.preflight`: the run's checks (preflight.ts), made by the caller before it chose to run in this process. */
export async function runSuite(options: ResolvedOptions, io: IO, hooks: CheckedHooks): Promise<SuiteOutcome> {
  const desc = getCollective(options.collective);
  const env = hooks.env ?? process.env;
  return withBackend(options, io, hooks, async (up) => {
    // Counts the backend cannot take: refused first, whatever memory the job has (every rank alike).
    refuseCounts(options, desc, up.driver, up.info, env);
    const adjusted = await up.adjust();
    const reporters =
      (up.info.worldRank ?? up.info.rank) === 0
        ? [...buildReporters(adjusted.options, io), ...(hooks.extraReporters?.(up.info) ?? [])]
        : [];
    return runInitialized({
      options: adjusted.options,
      requested: options,
      io,
      desc,
      driver: up.driver,
      native: up.native,
      info: up.info,
      reporters,
      hooks,
      env,
      dog: up.dog,
      reducedMaxBytes: adjusted.reducedMaxBytes,
      links: linksCollector(adjusted.options, up),
    });
  });
}

/** One allocation for the whole run: the largest send/recv need over every datatype and local rank, plus -u slack. */
function allocateBuffers(run: RunContext, ctx: LayoutContext): void {
  const { options, desc, info, native } = run;
  let sendBytes = options.maxBytes,
    recvBytes = options.maxBytes;
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
function soakClock(
  run: RunContext,
  durationSec: number | null,
): { endless: boolean; over: boolean; passed(): Promise<boolean> } {
  const deadline = durationSec === null ? null : Date.now() + durationSec * 1000;
  const state = {
    endless: deadline !== null,
    over: false,
    async passed(): Promise<boolean> {
      if (deadline === null) return false;
      const mine = Date.now() >= deadline ? 1 : 0;
      const [any] = await run.dog.watch(
        "the soak's end-of-row agreement",
        0,
        run.native.allreduceAsync([mine], COMBINE.max),
      );
      state.over = any === 1;
      return state.over;
    },
  };
  return state;
}

/** Counts the backend cannot take (MPI's int counts for the collectives it does not split), refused on every rank
 *  alike before any buffer is allocated: the largest count of the sweep is the one at -e. */
function refuseCounts(
  options: ResolvedOptions,
  desc: CollectiveDescriptor,
  driver: BackendDriver,
  info: BackendInfo,
  env: NodeJS.ProcessEnv,
): void {
  const limit = driver.maxCount?.(options.collective);
  if (!limit) return;
  const ctx: LayoutContext = { env, minBytes: options.minBytes, maxBytes: options.maxBytes };
  for (const dtype of options.dtypes) {
    const l = desc.layout(options.maxBytes, DTYPE_BYTES[dtype], info.nranks, info.rank, ctx);
    const count = Math.max(
      l.count,
      ...(l.peers ? [...l.peers.sendCounts, ...l.peers.recvCounts, ...l.peers.sendDispls, ...l.peers.recvDispls] : []),
    );
    if (count > limit.max) {
      throw UsageError.forFlag(
        '-e',
        `${options.collective} ${dtype} at ${options.maxBytes} bytes needs a count of ${count} elements ` +
          `in one call, above ${limit.max} on the ${info.backend} backend (${limit.why}); lower -e or use a larger datatype`,
      );
    }
  }
}

async function runInitialized(run: RunContext): Promise<SuiteOutcome> {
  const { options, io, driver, native, info } = run;
  const { env } = run;
  const { nranks } = info;
  const warning = disconnectedWorldWarning(nranks, env);
  if (warning) io.err(warning);
  if (options.root >= nranks)
    throw new UsageError(`-r/--root: root ${options.root} does not exist in a world of ${nranks} ranks`);

  const rankLines = await run.dog.watch(
    'the start-up gather of rank lines',
    0,
    native.gatherStringsAsync(JSON.stringify(driver.rankLine(info))),
  );
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
    } catch {
      /* the run's own error is reported */
    }
  }
}

/** The pairs of -d all / -o all the library refuses (backends/refusals.ts): one op of one element (or of one per
 *  aligned chunk per rank, where the collective splits the size) each, on the buffers just allocated, under the watchdog. */
async function probeRefusals(run: RunContext, ctx: LayoutContext, shape: CollectiveShape): Promise<Refusal[]> {
  const { options, desc, info, native, dog } = run;
  // The smallest size whose op is not empty (a chunked layout rounds a few elements down to none): NCCL discards an
  // empty collective before it checks the datatype and op, so a probe of nothing would accept every pair.
  const bytesFor = (p: CasePair): number => {
    const ts = DTYPE_BYTES[p.dtype];
    let bytes = ts;
    while (bytes < options.maxBytes && desc.layout(bytes, ts, info.nranks, info.rank, ctx).count === 0) bytes *= 2;
    return Math.min(bytes, options.maxBytes);
  };
  return findRefusals({
    pairs: probedPairs(run.requested, options, shape),
    codes: run.driver.refusals ?? [],
    knownWrong: run.driver.knownWrong ? (p) => run.driver.knownWrong!(p, desc, info) : undefined,
    runOne: (p) =>
      dog.watch(
        `the probe of ${options.collective} ${p.dtype} ${p.op}`,
        0,
        native.warmup(localSpecs(options, desc, info, ctx, { ...p, root: 0 }, bytesFor(p), false, 0).specs, 1),
      ),
    agree: (flags) =>
      dog.watch('the start-up agreement on refused datatypes and ops', 0, native.allreduceAsync(flags, COMBINE.max)),
  });
}

/** The run proper, once every process is up: clocks, buffers, the sweeps, the summary. */
async function runRows(run: RunContext, perProcess: RankLineInfo[][]): Promise<SuiteOutcome> {
  const { options, desc, driver, native, info, reporters } = run;
  const { env } = run;
  const { nranks } = info;
  const sizes = sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes);
  const ctx: LayoutContext = { env, minBytes: options.minBytes, maxBytes: options.maxBytes };
  allocateBuffers(run, ctx);
  const soak = soakClock(run, options.durationSec);

  const skipped = desc.skipReason(nranks);
  const shape: CollectiveShape = { loopsOps: desc.loopsOps, rooted: desc.rooted };
  const refused = skipped ? [] : await probeRefusals(run, ctx, shape);
  const cases = skipped ? [] : planCases(options, shape, nranks, refused);
  const refusedLines = refusalLines(refused, info.libraryVersionShort, shape);
  // The clocks last of the start-up exchanges: their alignment is the freshest when the sweeps begin.
  const arrival = await alignProcessClocks(run, perProcess.flat());
  const meta = {
    options,
    program: options.program,
    version: VERSION,
    backend: `${info.backend} (${info.libraryVersionShort})`,
    info,
    ranks: perProcess.flat(),
    warnings: [...driver.warnings(options, desc, info, cases), ...refusedLines],
    clock: arrival ? { ...arrival.clock } : null,
    perIterTimer: driver.perIterTimer,
    startTime: new Date(),
    argv: run.hooks.argv,
    plannedRows: options.runCycles === 0 ? null : cases.length * sizes.length * options.runCycles,
    reducedMaxBytes: run.reducedMaxBytes,
    watchdog: run.dog.describe(),
  };
  for (const r of reporters) await r.begin?.(meta);
  run.dog.beforeAbort = () => abandonReports(reporters); // a timeout: the rows held back are written first
  run.dog.recordTimeout = async (t) => {
    for (const r of reporters) await r.timedOut?.(t);
  }; // then the verdict

  const rows: RowRecord[] = [];
  const totals = { outOfBounds: 0, busBws: [] as number[] };
  const health = { cycles: 0, below: 0 };
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
        await run.dog.watch(
          `warm-up of ${sweep} ${size} B`,
          run.dog.expectedSec(options.warmupIters + 1, size),
          done,
          options.warmupIters,
        );
      }
      // --duration repeats the sweep until the time has passed (as -N 0), every rank stopping after the same row.
      for (
        let cycle = 0;
        !soak.over && (soak.endless || options.runCycles === 0 || cycle < options.runCycles);
        cycle++
      ) {
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
        const record: CycleRecord = {
          sweep: c,
          cycle,
          avgBusBw: avg,
          warnBusBw: options.warnBusBw,
          below,
          time: new Date(),
        };
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
  const links = run.links?.finish() ?? null;
  const summary: RunSummary = {
    outOfBounds: totals.outOfBounds,
    avgBusBw,
    minBwVerdict: verdict,
    exitCode,
    skipped,
    memory,
    cycles: health.cycles,
    cyclesBelowWarnBusBw: health.below,
    ...(links ? { links } : {}),
  };
  for (const r of reporters) await r.end?.(summary);
  return { exitCode, outOfBounds: totals.outOfBounds, avgBusBw, rows, info };
}
