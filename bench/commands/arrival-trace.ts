// Test hook COLLBENCH_ARRIVAL_TRACE=FILE (README "Late ranks", device arrivals): rank 0 appends one JSON line per
// row-half with its raw arrivals, so that a check on one GPU can see a device-side delay move the device arrival while
// the host enqueue times stay (scripts/gpu-check/40-arrival.sh). Not a report: no schema, no promise of stability.
import { appendFileSync } from 'node:fs';
import { deviceArrivalsOnHost } from '../core/device-arrivals.js';
import type { HalfResult } from '../core/types.js';
import { ENV } from '../core/environment.js';

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
    ? { sizeBytes, inPlace, deviceUs: device.arrivalsUs, referenceUs: device.referenceUs, hostUs: result.enqueueUs ?? [] }
    : { sizeBytes, inPlace, hostUs: result.arrivalUs };
  appendFileSync(path, `${JSON.stringify(line)}\n`);
}
