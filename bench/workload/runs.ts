// A workload's measurement on one rank (`collbench workload`): the backend brought up as a run's, every
// configuration's sequence of calls (workload/plan.ts) timed back to back through the native timed loop, `repeats`
// times in a rotated order, with progress lines; rank 0 gets the samples and the job's hosts for its document.
import type { LayoutContext } from '../collectives/descriptor.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import type { SweepCase } from '../config/cases.js';
import { shortHost } from '../core/ranks.js';
import type { DTypeName } from '../core/types.js';
import type { BackendInfo } from '../native/binding.js';
import type { RepeatSamples } from './analyze.js';
import { gapsFor, type WorkloadPlan } from './plan.js';
import type { SuiteHooks } from '../engine/context.js';
import { sequenceSpecs, withSequenceBackend, type SequenceRun } from '../engine/timed-sequences.js';
import { formatDuration, periodicProgress, timeLeft } from '../report/reporters/progress.js';

/** How each configuration is timed. */
export interface WorkloadTiming {
  dtype: DTypeName;
  repeats: number;
  steps: number;
  warmupSteps: number;
  /** Stand-in compute per step, ms (0: the step is communication alone). */
  computeMs: number;
  check: boolean;
  /** No progress lines on stderr. */
  quiet: boolean;
}

/** What one rank measured: every configuration's samples per repeat, the job's hosts (rank 0), and the backend. */
export interface WorkloadMeasured {
  plan: WorkloadPlan;
  samples: RepeatSamples[][];
  hosts: string[];
  info: BackendInfo;
  root: boolean;
}

/** Brings the backend up, builds the plan for the job's world (`planFor` may refuse it) and times it. */
export async function timeWorkload(
  options: ResolvedOptions,
  timing: WorkloadTiming,
  planFor: (nranks: number) => WorkloadPlan,
  io: IO,
  hooks: Pick<SuiteHooks, 'env' | 'onTimeout'>,
): Promise<WorkloadMeasured> {
  return withSequenceBackend(options, io, hooks, planFor, (s) => timePlan(options, timing, io, s));
}

/** The measurement proper, once the backend is up and the progress boards listen. */
async function timePlan(
  run: ResolvedOptions,
  t: WorkloadTiming,
  io: IO,
  { up, env, plan, root }: SequenceRun<WorkloadPlan>,
): Promise<WorkloadMeasured> {
  const { info, native, dog } = up;
  const maxBytes = Math.max(...plan.configurations.flatMap((c) => c.ops.map((o) => o.bytes)));
  const ctx: LayoutContext = { env, minBytes: 0, maxBytes };
  const options: ResolvedOptions = { ...run, maxBytes, minBytes: 0, iters: t.steps, dtypes: [t.dtype] };
  const sweep: SweepCase = { dtype: t.dtype, op: 'sum', root: 0 };
  let seed = 0;
  // One spec (or one per local rank) per call; buffers for the largest call of any configuration.
  const specs = sequenceSpecs(
    options,
    up,
    plan.configurations.map((c) =>
      c.ops.map((o) => ({
        collective: o.collective,
        sweep,
        bytes: o.bytes,
        ctx,
        seed: ++seed,
      })),
    ),
    t.check,
  );
  const samples: RepeatSamples[][] = plan.configurations.map(() => []);
  const computeUs = t.computeMs * 1e3;
  // Rank 0 says how far it is: the time left on each repeat's line, and a plain line every 10 s between them.
  const planned = t.repeats * plan.configurations.length;
  let done = 0,
    now = '',
    doneAtMs: number | undefined;
  const started = Date.now();
  const ticker =
    root && !t.quiet
      ? periodicProgress(io.err, () => ({ done, planned, unit: 'configuration runs', what: now, doneAtMs }))
      : null;
  try {
    for (let r = 0; r < t.repeats; r++) {
      for (let j = 0; j < plan.configurations.length; j++) {
        const i = (j + r) % plan.configurations.length; // a rotated order each repeat: no configuration always first
        const c = plan.configurations[i]!;
        const bytes = c.ops.reduce((x, o) => x + o.bytes, 0);
        const label = `workload ${plan.kind} ${plan.varies} ${c.label}, repeat ${r + 1}`;
        const run = (gapUs: number[] | undefined, check: boolean) =>
          dog.watch(
            label,
            dog.expectedSec(t.steps + t.warmupSteps, bytes) + ((t.steps + t.warmupSteps) * computeUs) / 1e6,
            native.runSequence(specs[i]!, { iters: t.steps, warmupIters: t.warmupSteps, gapUs, check }),
          );
        now = `${plan.varies} ${c.label}, repeat ${r + 1}`;
        const comm = await run(undefined, t.check && r === 0);
        const withCompute = computeUs > 0 ? await run(gapsFor(c.ops, computeUs), false) : null;
        samples[i]!.push({
          commUs: comm.stepUs,
          stepUs: withCompute?.stepUs ?? null,
          computeUs: withCompute?.gapUs ?? 0,
          wrong: Math.round(comm.wrong),
        });
        done++;
        doneAtMs = Date.now();
        if (root && !t.quiet) {
          const elapsed = (Date.now() - started) / 1000;
          io.err(
            `# repeat ${r + 1}/${t.repeats} ${c.label}: ${c.ops.length} calls, comm ${(Math.min(...comm.stepUs) / 1e3).toFixed(3)}–` +
              `${(Math.max(...comm.stepUs) / 1e3).toFixed(3)} ms per step${comm.wrong > 0 ? `, ${comm.wrong} wrong` : ''}` +
              ` (${done}/${planned}, ${formatDuration(elapsed)} elapsed, ~${timeLeft(elapsed, done, planned)} left)`,
          );
        }
        if (comm.wrong > 0 && root && comm.firstWrong) {
          const f = comm.firstWrong;
          io.err(
            `# ${c.label}: call ${comm.firstWrongOp} (${c.ops[comm.firstWrongOp]!.collective} ${c.ops[comm.firstWrongOp]!.bytes} B): ` +
              `rank ${f.rank} element ${f.index}: expected ${f.expected}, got ${f.got}`,
          );
        }
      }
    }
  } finally {
    ticker?.stop();
  }
  // The job's hosts, for the document (rank 0 receives every rank's).
  const hosts = await dog.watch(
    'the gather of host names',
    0,
    native.gatherStringsAsync(shortHost(info.processorName)),
  );
  return { plan, samples, hosts: [...new Set(hosts ?? [])], info, root };
}
