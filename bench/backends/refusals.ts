// Which datatype × op pairs the loaded library refuses (NCCL 2.28.9: avg and mulsum on fp8) or computes wrongly
// (BackendDriver.knownWrong): one 1-element op per pair on the job's communicator after bring-up, every rank's answers
// combined so that all ranks skip the same pairs (pairs from config/cases.ts, refusal codes from the driver).
import { KNOWN_WRONG, type CasePair, type Refusal } from '../config/cases.js';
import { isNativeError } from '../native/binding.js';

export interface RefusalProbe {
  pairs: readonly CasePair[];
  /** Native error codes by which the library refuses a pair (anything else is a failure and ends the run). */
  codes: readonly string[];
  /** One op of one element (or the fewest the collective takes) of `pair`, on every local rank, waited for. */
  runOne(pair: CasePair): Promise<void>;
  /** Why this rank's library computes `pair` wrongly (a known defect), or null: skipped as a refusal is, without a probe. */
  knownWrong?(pair: CasePair): string | null;
  /** Every rank's refusal flags (1 refused, 0 accepted) combined by maximum over the job. */
  agree(flags: number[]): Promise<number[]>;
}

/**
 * The pairs to skip: those any rank's library refused. Each rank probes the same pairs in the same order (a refusal
 * is the library's argument check, made before anything is enqueued, so no rank waits for one that refused), then
 * one combine makes the answer the job's. When every pair is refused, something else is wrong (a library that
 * refuses every op): the first refusal is thrown, as the run would have failed on it.
 */
export async function findRefusals(probe: RefusalProbe): Promise<Refusal[]> {
  if (probe.pairs.length === 0 || probe.codes.length === 0) return [];
  const mine: (Refusal | null)[] = [];
  let first: Error | null = null;
  for (const pair of probe.pairs) {
    const wrong = probe.knownWrong?.(pair) ?? null;
    if (wrong !== null) {
      mine.push({ ...pair, code: KNOWN_WRONG, message: wrong });
      continue;
    }
    try {
      await probe.runOne(pair);
      mine.push(null);
    } catch (e) {
      if (!isNativeError(e) || !probe.codes.includes(e.code)) throw e;
      first ??= e;
      mine.push({ ...pair, code: e.code, message: e.message });
    }
  }
  const agreed = await probe.agree(mine.map((r) => (r ? 1 : 0)));
  const refused = probe.pairs.flatMap((pair, i) =>
    agreed[i] === 1
      ? [mine[i] ?? { ...pair, code: 'refused by another rank', message: "another rank's library refused this pair" }]
      : [],
  );
  if (refused.length === probe.pairs.length && refused.some((r) => r.code !== KNOWN_WRONG)) {
    if (first !== null) throw first;
    throw new Error(`every datatype x op pair was refused by another rank's library (${refused[0]!.code})`);
  }
  return refused;
}
