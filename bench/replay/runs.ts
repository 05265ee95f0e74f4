// A replay's measurement on one rank: the backend up as a run's, the checked steps timed through the engine's timed
// call sequences (native benchSequence; no second timed loop): the whole sequence back to back for the time per
// replayed iteration, then each step alone for its own median and p99.
import type { MatrixSource } from '../collectives/alltoallv-plan.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { shortHost } from '../core/ranks.js';
import type { BackendInfo } from '../native/binding.js';
import type { SuiteHooks } from '../engine/context.js';
import { sequenceSpecs, withSequenceBackend, type GroupPlace, type SequenceRun } from '../engine/timed-sequences.js';
import type { ReplayPlan, ReplayStep } from './steps.js';

export interface ReplayTiming {
  iters: number;
  warmupIters: number;
  check: boolean;
  /** Keep the recorded time between calls (µs before each step), where the trace has times. */
  gaps: boolean;
  quiet: boolean;
}

/** What rank 0 measured (the others get empty samples). */
export interface ReplayMeasured {
  plan: ReplayPlan;
  /** Per replayed iteration, the whole sequence (µs). */
  iterationUs: number[];
  /** Busy time spent per iteration standing in for the recorded gaps (µs; 0 without --gaps). */
  gapUs: number;
  /** Per step, its time alone per iteration (µs). */
  stepUs: number[][];
  /** Wrong elements per step (the check of the whole sequence). */
  wrong: number[];
  firstWrong: string | null;
  hosts: string[];
  info: BackendInfo;
  root: boolean;
}

/** The recorded idle time before each step (µs): the time between consecutive calls' records, 0 before the first. */
export function recordedGapsUs(steps: readonly ReplayStep[]): number[] | null {
  if (!steps.every((s) => s.timeNs !== undefined)) return null;
  // Whole µs: ns epochs past 2^53 arrive rounded (pickle and JSON alike), a fraction of a µs is noise.
  return steps.map((s, i) => (i === 0 ? 0 : Math.max(0, Math.round((s.timeNs! - steps[i - 1]!.timeNs!) / 1e3))));
}

/** The process groups a plan needs (every group smaller than the job, once, in the order its steps first use them:
 *  what every rank passes to createGroups) and each step's place for the rank `me` (undefined: the world). */
export function groupPlaces(plan: ReplayPlan, me: number): { groups: number[][]; places: (GroupPlace | undefined)[] } {
  const groups: number[][] = [];
  const index = new Map<string, number>();
  const indexOf = (ranks: number[]): number => {
    const key = ranks.join(',');
    if (!index.has(key)) index.set(key, groups.push(ranks) - 1);
    return index.get(key)!;
  };
  const places = plan.steps.map((s): GroupPlace | undefined => {
    const world =
      s.groups.length === 1 && s.group.ranks.length === plan.nranks && s.group.ranks.every((r, i) => r === i);
    if (world) return undefined;
    const ids = s.groups.map((g) => indexOf(g.ranks));
    const mine = s.groups.findIndex((g) => g.ranks.includes(me));
    return mine < 0
      ? { index: ids[0]!, size: s.group.size, rank: null }
      : { index: ids[mine]!, size: s.group.size, rank: s.groups[mine]!.ranks.indexOf(me) };
  });
  return { groups, places };
}

/** The traffic matrix of an all-to-all-v step as the alltoallv descriptor reads it. */
function matrixOf(step: ReplayStep): MatrixSource {
  return { mode: 'matrix', file: `step ${step.index}`, scale: 1, dim: step.group.size, cells: step.matrix! };
}

/** Brings the backend up, plans the steps for the job's world (`planFor` may refuse it) and times them. */
export async function timeReplay(
  options: ResolvedOptions,
  timing: ReplayTiming,
  planFor: (nranks: number) => ReplayPlan,
  io: IO,
  hooks: Pick<SuiteHooks, 'env' | 'onTimeout'>,
): Promise<ReplayMeasured> {
  return withSequenceBackend(options, io, hooks, planFor, (s) => timeSteps(options, timing, io, s));
}

async function timeSteps(
  run: ResolvedOptions,
  t: ReplayTiming,
  io: IO,
  { up, env, plan, root }: SequenceRun<ReplayPlan>,
): Promise<ReplayMeasured> {
  const { info, native, dog } = up;
  const maxBytes = Math.max(...plan.steps.map((s) => s.bytes));
  const options: ResolvedOptions = { ...run, maxBytes, minBytes: 0, iters: t.iters };
  // Process groups before anything is timed, by every rank in the same order (as the job's new_group calls).
  const { groups, places } = groupPlaces(plan, info.worldRank ?? info.rank);
  if (groups.length) await dog.watch(`the creation of ${groups.length} process groups`, 0, native.createGroups(groups));
  const [specs] = sequenceSpecs(
    options,
    up,
    [
      plan.steps.map((s, k) => ({
        collective: s.collective,
        sweep: { dtype: s.dtype, op: s.op, root: Math.max(s.root, 0) },
        bytes: s.bytes,
        seed: k + 1,
        ctx: s.matrix ? { env, alltoallv: matrixOf(s) } : { env, minBytes: 0, maxBytes },
        ...(places[k] ? { group: places[k] } : {}),
      })),
    ],
    t.check,
  );
  const total = plan.steps.reduce((a, s) => a + s.bytes, 0);
  const rounds = t.iters + t.warmupIters;
  const gapUs = t.gaps ? recordedGapsUs(plan.steps) : null;
  if (t.gaps && !gapUs && root)
    io.err('# --gaps: the trace records no call times (only flight-recorder dumps do): calls run back to back');
  const gapSec = gapUs ? (rounds * gapUs.reduce((a, b) => a + b, 0)) / 1e6 : 0;

  // The whole sequence, as the job issued it: the time per iteration, and the check of every step.
  const whole = await dog.watch(
    `replay of ${plan.steps.length} steps`,
    dog.expectedSec(rounds * plan.steps.length, rounds * total) + gapSec,
    native.runSequence(specs, {
      iters: t.iters,
      warmupIters: t.warmupIters,
      ...(gapUs ? { gapUs } : {}),
      check: t.check,
    }),
  );
  const wrong = plan.steps.map((_, k) => (k === whole.firstWrongOp ? Math.round(whole.wrong) : 0));
  let firstWrong: string | null = null;
  if (whole.wrong > 0 && whole.firstWrong) {
    const s = plan.steps[whole.firstWrongOp]!,
      f = whole.firstWrong;
    firstWrong = `step ${s.index} (${s.collective} ${s.bytes} B, ${s.where}): rank ${f.rank} element ${f.index}: expected ${f.expected}, got ${f.got}`;
  }
  if (root && !t.quiet)
    io.err(
      `# replayed ${plan.steps.length} steps x ${t.iters} iterations` +
        `${whole.stepUs.length ? `: ${(Math.min(...whole.stepUs) / 1e3).toFixed(3)}-${(Math.max(...whole.stepUs) / 1e3).toFixed(3)} ms each` : ''}`,
    );

  // Each step alone, for its own time (same loop, one op per sequence).
  const stepUs: number[][] = [];
  for (const [k, s] of plan.steps.entries()) {
    const one = await dog.watch(
      `replay step ${s.index} (${s.collective} ${s.bytes} B)`,
      dog.expectedSec(rounds, rounds * s.bytes),
      native.runSequence([specs[k]!], { iters: t.iters, warmupIters: t.warmupIters, check: false }),
    );
    stepUs.push(one.stepUs);
  }
  const hosts = await dog.watch(
    'the gather of host names',
    0,
    native.gatherStringsAsync(shortHost(info.processorName)),
  );
  return {
    plan,
    iterationUs: whole.stepUs,
    gapUs: whole.gapUs,
    stepUs,
    wrong,
    firstWrong,
    hosts: [...new Set(hosts ?? [])],
    info,
    root,
  };
}
