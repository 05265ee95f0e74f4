// runSuite(): one benchmark run — the programmatic entry the CLI, compare and the tests share
// (DESIGN.md §1). Loads a backend, plans the sweeps, drives the native timed loop row-half by
// row-half, and reports through the nccl-tests table. Rank 0 reports; every rank runs the same plan.
import { cpus, hostname } from 'node:os';
import { getCollective } from '../collectives/index.js';
import { UsageError, EXIT } from '../config/errors.js';
import { sweepSizes, warmupSizes } from '../config/sizes.js';
import { iterStats } from '../core/iter-stats.js';
import { algBwGBps, averageBusBw, busBwGBps } from '../core/metrics.js';
import { planCases, type SweepCase } from '../core/plan.js';
import {
  COLL_ID, DTYPE_BYTES, DTYPE_ID, OP_ID,
  type HalfResult, type HalfSpec, type ResolvedOptions,
} from '../core/types.js';
import { disconnectedWorldWarning, prepareSingletonMpi } from '../launch/environment.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import { loadBackend, type BackendName } from '../native/loader.js';
import {
  firstWrongLine, footerLines, minBwVerdict, preambleLines, rowLine, skipLine,
  type HalfCells,
} from '../report/reporters/nccl-table.js';
import { VERSION } from '../version.js';

export interface RunIO {
  out(line: string): void;
  err(line: string): void;
}

export class TimeoutError extends Error {}

export interface RowHalfRecord {
  timeUs: number; algBw: number; busBw: number; wrong: number | null; result: HalfResult;
}
export interface RowRecord {
  sizeBytes: number; count: number; type: string; redop: string; root: number;
  halves: [RowHalfRecord, RowHalfRecord];
}

export interface SuiteOutcome {
  exitCode: number;
  outOfBounds: number;
  avgBusBw: number;
  rows: RowRecord[];
  info: BackendInfo;
}

/** Flags that only mean something on GPUs; CPU backends refuse them instead of ignoring them. */
function refuseGpuOnlyFlags(o: ResolvedOptions, backend: BackendName): void {
  if (backend === 'nccl') return;
  const refused: [boolean, string][] = [
    [o.nThreads !== 1, '-t/--nthreads (threads driving GPUs)'],
    [o.nGpus !== 1, '-g/--ngpus (GPUs per thread)'],
    [o.parallelInit !== 0, '-p/--parallel_init'],
    [o.streamNull !== 0, '-y/--stream_null (CUDA streams)'],
    [o.cudaGraph !== 0, '-G/--cudagraph (CUDA graphs)'],
    [o.localRegister !== 0, '-R/--local_register (NCCL buffer registration)'],
    [o.ctaPolicy !== -1, '-x/--cta_policy (NCCL CTA policy)'],
    [o.deviceImpl !== 0, '-D/--device_implementation (NCCL device API)'],
    [o.deviceCtaCount !== 16, '-V/--device_cta_count (CTAs of NCCL device-API kernels)'],
    [o.memoryReport, '-M/--memory (GPU memory report)'],
  ];
  const hit = refused.find(([bad]) => bad);
  if (hit) throw new UsageError(`${hit[1]} needs the nccl backend; the ${backend} backend runs on CPUs`);
}

function rankLineData(info: BackendInfo): string {
  const cpu = cpus()[0]?.model?.trim() ?? 'cpu';
  return JSON.stringify({ rank: info.rank, host: hostname().split('.')[0], pid: info.pid, device: 'cpu', bus: '-', name: cpu });
}

interface Watchdog { clear(): void }

function armWatchdog(seconds: number, native: NativeBackend, io: RunIO, what: string): Watchdog {
  if (seconds <= 0) return { clear() {} };
  const timer = setTimeout(() => {
    io.err(`${hostname().split('.')[0]}: Test timeout (${seconds}s) in ${what}`);
    native.abort(EXIT.TIMEOUT);
    process.exit(EXIT.TIMEOUT);
  }, seconds * 1000);
  return { clear: () => clearTimeout(timer) };
}

export async function runSuite(options: ResolvedOptions, io: RunIO): Promise<SuiteOutcome> {
  const desc = getCollective(options.collective);
  if (options.backend !== null && !['mpi', 'gloo', 'nccl'].includes(options.backend))
    throw new UsageError(`--backend: unknown backend '${options.backend}' (valid: mpi, gloo, nccl)`);
  if (options.jsonFile !== null)
    throw new UsageError('-J/--output_file: JSON reports are not available in this version of collbench yet');
  const wanted = options.backend as BackendName | null;
  prepareSingletonMpi();
  const { name: backendName, module: native } = loadBackend(wanted);
  refuseGpuOnlyFlags(options, backendName);
  const info = native.init();
  try {
    return await runInitialized(options, io, desc, native, info);
  } finally {
    native.finalize();
  }
}

async function runInitialized(
  options: ResolvedOptions, io: RunIO, desc: ReturnType<typeof getCollective>,
  native: NativeBackend, info: BackendInfo,
): Promise<SuiteOutcome> {
  const { rank, nranks } = info;
  const isReporter = rank === 0;
  const out = (line: string) => { if (isReporter) io.out(line); };

  const warning = disconnectedWorldWarning(nranks);
  if (warning) io.err(warning);
  if (options.root >= nranks)
    throw new UsageError(`-r/--root: root ${options.root} does not exist in a world of ${nranks} ranks`);

  const rankLines = native.gatherStrings(rankLineData(info));
  const sizes = sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes);
  const env = process.env;
  const layoutCtx = { env, minBytes: options.minBytes, maxBytes: options.maxBytes };

  // One allocation for the whole run: the largest send/recv need over every datatype, plus -u slack.
  let sendBytes = 0, recvBytes = 0;
  for (const dtype of options.dtypes) {
    const ts = DTYPE_BYTES[dtype];
    const l = desc.layout(options.maxBytes, ts, nranks, rank, layoutCtx);
    sendBytes = Math.max(sendBytes, l.sendElems * ts, l.rotateBytes);
    recvBytes = Math.max(recvBytes, l.recvElems * ts, l.rotateBytes);
  }
  const slack = 8 * options.unalign + 64;
  native.allocate(Math.max(sendBytes, options.maxBytes) + slack, Math.max(recvBytes, options.maxBytes) + slack);

  for (const line of preambleLines({
    leadingLines: libraryWarnings(options, desc, info), version: VERSION, backend: `${info.backend} (${info.libraryVersionShort})`, program: options.program,
    options, ranks: (rankLines ?? []).map((s) => JSON.parse(s)), perIterTimer: 'host clock timing',
  })) out(line);

  const skip = desc.skipReason(nranks);
  const rows: RowRecord[] = [];
  let outOfBounds = 0;
  const busBws: number[] = [];
  let checkSeed = 0;

  const specFor = (c: SweepCase, sizeBytes: number, inPlace: boolean, checkRounds: number): { spec: HalfSpec; layout: ReturnType<typeof desc.layout>; checked: boolean } => {
    const ts = DTYPE_BYTES[c.dtype];
    const layout = desc.layout(sizeBytes, ts, nranks, rank, layoutCtx);
    const root = Math.max(c.root, 0);
    const half = desc.half(layout, { rank, nranks, root, inPlace, op: c.op });
    const checked = checkRounds > 0 && half.checked;
    const spec: HalfSpec = {
      coll: COLL_ID[options.collective], dtype: DTYPE_ID[c.dtype], op: OP_ID[c.op], root, inPlace,
      count: layout.count, sendOffset: half.sendOffset, recvOffset: half.recvOffset,
      rotateBytes: layout.rotateBytes, maxBytes: options.maxBytes, peers: layout.peers,
      fill: half.fill, expect: half.expect,
      iters: options.iters, aggIters: options.aggIters, blocking: options.blocking,
      perIter: options.perIterTiming, checkRounds: checked ? checkRounds : 0, checkSeed: 0,
      average: options.average, unalignElems: options.unalign,
    };
    return { spec, layout, checked };
  };

  if (skip) {
    out(skipLine(skip));
  } else {
    for (const c of planCases(options, { loopsOps: desc.loopsOps, rooted: desc.rooted }, nranks)) {
      native.barrier();
      for (const size of warmupSizes(options.minBytes, options.maxBytes)) {
        const { spec } = specFor(c, size, false, 0);
        await native.warmup(spec, options.warmupIters);
      }
      for (let cycle = 0; options.runCycles === 0 || cycle < options.runCycles; cycle++) {
        for (const sizeBytes of sizes) {
          const halves: RowHalfRecord[] = [];
          let layoutForRow: ReturnType<typeof desc.layout> | null = null;
          const wrongLines: string[] = [];
          for (const inPlace of [false, true]) {
            const { spec, layout, checked } = specFor(c, sizeBytes, inPlace, options.check);
            layoutForRow = layout;
            spec.checkSeed = ++checkSeed;
            const dog = armWatchdog(options.timeoutSec, native, io,
              `${options.collective} ${c.dtype} ${layout.sizeBytes} B ${inPlace ? 'in-place' : 'out-of-place'}`);
            const result = await native.runHalf(spec).finally(() => dog.clear());
            const timeUs = options.reportCpuTime ? result.cpuTimeUs : result.timeUs;
            const algBw = algBwGBps(layout.algBytes, result.timeUs);
            const busBw = busBwGBps(algBw, desc.busBwFactor(nranks));
            const wrong = checked ? result.wrong : null;
            if (checked) outOfBounds += result.ranksWithWrong;
            if (checked && result.wrong > 0 && result.firstWrong) wrongLines.push(firstWrongLine(result.firstWrong));
            busBws.push(busBw);
            halves.push({ timeUs, algBw, busBw, wrong, result });
          }
          const layout = layoutForRow!;
          const cells = halves.map((h): HalfCells => ({
            timeUs: h.timeUs, algBw: h.algBw, busBw: h.busBw, wrong: h.wrong,
            iter: h.result.iterUs ? pickIterCells(h.result.iterUs, options.perIterSkip) : undefined,
          }));
          const row: RowRecord = {
            sizeBytes: layout.sizeBytes, count: layout.count, type: c.dtype, redop: desc.redopColumn(c.op),
            root: desc.rooted ? c.root : -1, halves: [halves[0], halves[1]],
          };
          rows.push(row);
          out(rowLine({
            sizeBytes: row.sizeBytes, count: row.count, type: row.type, redop: row.redop, root: row.root,
            halves: [cells[0], cells[1]], timestamp: options.reportTimestamps ? new Date() : undefined,
          }));
          for (const l of wrongLines) out(l);
        }
      }
    }
  }

  const avgBusBw = averageBusBw(busBws);
  const verdict = minBwVerdict(avgBusBw, process.env.NCCL_TESTS_MIN_BW);
  for (const line of footerLines({ outOfBounds, avgBusBw, minBwVerdict: verdict, program: options.program })) out(line);
  const exitCode = outOfBounds > 0 || verdict === 'FAILED' ? EXIT.WRONG_RESULTS : EXIT.OK;
  return { exitCode, outOfBounds, avgBusBw, rows, info };
}

/**
 * Known defects of the library under test that this run will meet, said up front so that the #wrong
 * they cause is understood (the check still reports them: hiding them would defeat its purpose).
 */
function libraryWarnings(options: ResolvedOptions, desc: ReturnType<typeof getCollective>, info: BackendInfo): string[] {
  const smallInts = options.dtypes.some((t) => t === 'int8' || t === 'uint8');
  const sums = options.ops.some((o) => o === 'sum' || o === 'avg' || o === 'mulsum');
  if (info.smallIntSumSaturates && desc.reduces && smallInts && sums) {
    return ['# Warning: this MPI library saturates int8/uint8 MPI_SUM instead of wrapping (Open MPI op/avx, ' +
      'open-mpi/ompi#8045): expect #wrong > 0 for int8/uint8 sum, avg and mulsum; OMPI_MCA_op=^avx avoids that component'];
  }
  return [];
}

function pickIterCells(samples: number[], skip: number): HalfCells['iter'] {
  const s = iterStats(samples, skip);
  return { minUs: s.min, maxUs: s.max, p99Us: s.p99, cvPct: s.cvPct };
}
