// Who arrived last: the processes' clocks aligned at start-up and each row-half's arrivals (host enqueue times or
// device arrivals) turned into the late rank the table names; COLLBENCH_ARRIVAL_TRACE=FILE appends each row-half's raw
// arrivals as a JSON line for the GPU check (scripts/gpu-check/40-arrival.sh).
import { appendFileSync } from 'node:fs';
import { ENV } from '../core/environment.js';
import {
  alignClocks,
  arrivalEvidence,
  deviceArrivalsOnHost,
  rankClock,
  type ClockAlignment,
} from '../numbers/lateness.js';
import type { RankLineInfo } from '../core/ranks.js';
import type { HalfResult } from '../core/types.js';
import { monotonicClockId } from '../launch/launcher.js';
import type { RowHalfRecord } from '../report/reporter.js';
import type { RunContext } from './context.js';

/** Rank 0's means of naming who arrived last: the processes' clocks put together, every rank's line, and how many
 *  ranks each process drives (host arrivals are one row per process, device arrivals one per rank). */
export interface ArrivalContext {
  clock: ClockAlignment;
  ranks: RankLineInfo[];
  localRanks: number;
}

/** Barrier rounds whose exit times align the processes' clocks (a few ms at start-up, only across kernels). */
const CLOCK_ROUNDS = 64;

/** Every process: how its clock relates to rank 0's; rank 0 gets the alignment, the others null. */
export async function alignProcessClocks(run: RunContext, ranks: RankLineInfo[]): Promise<ArrivalContext | null> {
  const { info, native, dog } = run;
  const localRanks = info.localRanks ?? 1;
  // One process: nobody waits for another, except one GPU for another (device arrivals, on one clock).
  if (info.nranks <= localRanks) {
    return info.nranks > 1 && run.driver.deviceArrivals && run.options.perIterTiming
      ? { clock: alignClocks([[]], true), ranks, localRanks }
      : null;
  }
  const ids = await dog.watch('the start-up exchange of clock ids', 0, native.gatherStringsAsync(monotonicClockId()));
  const samples = await dog.watch('the start-up clock alignment', 0, native.clockSamplesAsync(CLOCK_ROUNDS));
  if (!ids || !samples) return null;
  // COLLBENCH_CLOCK_ALIGN=barrier estimates offsets even on one kernel (to see the estimate's accuracy: truly 0 there).
  const forced = run.env[ENV.CLOCK_ALIGN] === 'barrier';
  const sameClock = !forced && ids.every((id) => id !== '' && id === ids[0]);
  return { clock: alignClocks(samples, sameClock), ranks, localRanks };
}

/** Who the others waited for in one row-half (rank 0 only): each process's share of iterations it was last, and the
 *  rank named late when one stood out. */
export function arrivalRecord(
  arrival: ArrivalContext | null,
  result: HalfResult,
): Pick<RowHalfRecord, 'late' | 'lastShare'> {
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
    late: late
      ? {
          rank: who?.rank ?? rankOf(late.process),
          host: who?.host ?? '',
          lastFraction: late.lastFraction,
          medianLateUs: late.medianLateUs,
          marginUs: late.marginUs,
          ...(onDevice && who && typeof who.device === 'number' ? { device: who.device, bus: who.bus } : {}),
        }
      : null,
  };
}

export const ARRIVAL_TRACE_ENV = ENV.ARRIVAL_TRACE;

export function arrivalTracePath(env: Readonly<Record<string, string | undefined>> | undefined): string | null {
  const path = env?.[ARRIVAL_TRACE_ENV];
  return path ? path : null;
}

/** One line: size, placement, per rank the device arrivals on the host clock (µs) when recorded, per process the host
 *  arrivals (the enqueue times with device arrivals), and the references. Nothing without arrivals or without the hook. */
export function traceArrivals(env: NodeJS.ProcessEnv, sizeBytes: number, inPlace: boolean, result: HalfResult): void {
  const path = arrivalTracePath(env);
  if (!path || !result.arrivalUs?.length) return; // rank 0 holds them
  const device = result.deviceRefUs ? deviceArrivalsOnHost(result.arrivalUs, result.deviceRefUs) : null;
  const line = device
    ? {
        sizeBytes,
        inPlace,
        deviceUs: device.arrivalsUs,
        referenceUs: device.referenceUs,
        hostUs: result.enqueueUs ?? [],
      }
    : { sizeBytes, inPlace, hostUs: result.arrivalUs };
  appendFileSync(path, `${JSON.stringify(line)}\n`);
}
