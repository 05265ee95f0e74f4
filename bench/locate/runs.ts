// The jobs of `collbench locate`: child runs of collbench itself with their JSON reports, in rounds of jobs at the
// same time, each stopped at its time budget; Ctrl-C and --max-time stop them all. The stages see this only as a
// Measurer, so scripts/locate-sim.ts can drive them with simulated jobs.
import { EnvironmentError } from '../core/errors.js';
import type { IO } from '../core/io.js';
import { failureLine, type ChildOutcome, type RunningChild } from '../launch/child-job.js';
import { mpirunPlan } from '../launch/mpirun.js';
import { samplesOf, type GroupSamples } from './decide.js';
import type { LocateJob } from './document.js';
import type { GroupSpec, MeasureStep, Measurer } from './flow.js';
import { DEFAULT_RUN_ARGS, type LocateOptions } from './options.js';
import type { ChildRuns } from '../engine/child-runs.js';
import type { ReportLinks } from '../report/schema.js';

/** A host that resolves but where mpirun cannot start a process: exit 5, naming it. */
export class UnreachableHostError extends EnvironmentError {}

/** locate's jobs: progress lines, rounds of child runs, --max-time (which stops every running job, as Ctrl-C does). */
export class LocateJobs implements Measurer {
  private deadline: NodeJS.Timeout | null = null;
  constructor(
    readonly opts: LocateOptions,
    readonly children: ChildRuns,
    readonly io: IO,
  ) {}

  /** Stopped early (a signal, or --max-time): no more jobs start. */
  get interrupted(): boolean {
    return this.children.stopped;
  }

  get stopReason(): string | null {
    return this.children.stopReason;
  }

  /** --max-time: from now on, the run stops after this many seconds (and reports what it found). */
  startClock(): void {
    this.deadline = setTimeout(() => {
      this.progress(`--max-time ${this.opts.maxTimeSec} s reached: stopping the running jobs`);
      this.children.stop(`stopped at --max-time (${this.opts.maxTimeSec} s)`);
    }, this.opts.maxTimeSec * 1000).unref();
  }

  stopClock(): void {
    if (this.deadline) clearTimeout(this.deadline);
  }

  progress(line: string): void {
    if (!this.opts.quiet) this.io.err(`locate: ${line}`);
  }

  /**
   * One all_reduce job over `hosts` with K ranks each; its samples per size (busbw GB/s per iteration, both halves).
   * Stopped at `budgetSec`, or by its round (`round.stop`), it keeps the sizes its report holds by then (the report
   * is rewritten after every row and when the job is stopped).
   */
  async job(
    g: GroupSpec,
    repeat: number,
    budgetSec: number | null,
    round: RoundControl,
  ): Promise<{ job: LocateJob; samples: Map<number, number[]>; links: ReportLinks | null }> {
    const { id, hosts } = g;
    const k = this.opts.npPerHost;
    const words = (report: string): string[] => [
      'all_reduce',
      '--np',
      String(hosts.length * k),
      '--hosts',
      hosts.map((h) => `${h}:${k}`).join(','),
      ...DEFAULT_RUN_ARGS,
      ...this.opts.runArgs,
      ...(g.iterations !== undefined ? ['-n', String(g.iterations)] : []),
      ...(g.links && !this.opts.runArgs.includes('--links') ? ['--links'] : []),
      '-I',
      '1',
      '-J',
      report,
      '--json-format',
      'collbench',
      '--quiet',
    ];
    const limit = budgetSec !== null ? Math.min(budgetSec, this.opts.timeoutSec) : this.opts.timeoutSec;
    const byBudget = budgetSec !== null && budgetSec < this.opts.timeoutSec;
    let child: RunningChild | null = null;
    const ran = this.interrupted
      ? null
      : await this.children.run(`${id}-r${repeat}`, words, {
          timeoutSec: limit,
          graceMs: 3000,
          started: (c) => {
            child = c;
            round.started(c);
          },
        });
    const o = ran?.outcome ?? null;
    if (child) round.finished(child, o !== null && o.exitCode === 0 && !o.timedOut);
    const samples = new Map<number, number[]>();
    let links: ReportLinks | null = null;
    let status: LocateJob['status'] = 'ok';
    let error: string | null = null;
    const capped =
      o !== null && !this.interrupted && ((o.timedOut && byBudget) || (child !== null && round.wasStopped(child)));
    if (o === null || (o.interrupted && !capped) || (this.interrupted && !capped && o.exitCode !== 0)) {
      status = 'interrupted';
      error = 'interrupted';
    } else if (o.timedOut && !capped) {
      status = 'timeout';
      error = failureLine(o, this.opts.timeoutSec);
    } else if (o.exitCode !== 0 && !capped) {
      status = 'failed';
      error = failureLine(o, this.opts.timeoutSec);
    } else {
      const { doc, error: unread } = ran!.report;
      if (!doc) {
        status = 'failed';
        error = capped
          ? `stopped at its time budget (${o!.durationSec.toFixed(1)} s) before it wrote a report`
          : unread;
      } else {
        for (const [size, values] of samplesOf(doc)) samples.set(size, values);
        links = doc.links ?? null;
      }
      if (status === 'ok' && samples.size === 0) {
        status = 'failed';
        error = capped
          ? `stopped at its time budget (${o!.durationSec.toFixed(1)} s) before its first size finished: far slower than the others`
          : 'the report has no per-iteration samples';
      }
    }
    this.progress(
      `${id} (repeat ${repeat}): ${status}${capped ? ' (stopped at its time budget)' : ''}${error ? ` (${error})` : ''}${o ? ` ${o.durationSec.toFixed(1)} s` : ''}`,
    );
    return {
      job: {
        id,
        hosts,
        repeat,
        status,
        error,
        durationSec: o?.durationSec ?? 0,
        budgetSec: limit === this.opts.timeoutSec && !byBudget ? null : limit,
        capped,
        iterations: g.iterations ?? null,
      },
      samples,
      links,
    };
  }

  /**
   * Runs `rounds` (each a list of groups whose jobs run at the same time) `repeats` times, each repeat starting one
   * round later (1 2 3, 2 3 1, 3 1 2): a round's two measurements are then n − 1 rounds apart, never back to back,
   * so one burst of load elsewhere (a build, another job) does not hit both. `step` numbers the repeats and gives
   * the jobs' time budget.
   */
  async measure(
    rounds: GroupSpec[][],
    repeats: number,
    step: MeasureStep = { firstRepeat: 1, budget: { capSec: null, afterFirst: null } },
  ): Promise<{ groups: GroupSamples[]; jobs: LocateJob[]; links: Map<string, ReportLinks> }> {
    const byId = new Map<string, GroupSamples>();
    const jobs: LocateJob[] = [];
    const links = new Map<string, ReportLinks>();
    for (const round of rounds)
      for (const g of round) byId.set(g.id, { id: g.id, hosts: g.hosts, bySize: new Map(), failed: null });
    for (let r = step.firstRepeat; r < step.firstRepeat + repeats && !this.interrupted; r++) {
      const shift = (r - 1) % Math.max(1, rounds.length);
      const order = [...rounds.slice(shift), ...rounds.slice(0, shift)];
      for (const round of order) {
        if (this.interrupted) break;
        const width = this.opts.parallel > 0 ? this.opts.parallel : round.length;
        const results: Awaited<ReturnType<LocateJobs['job']>>[] = [];
        for (let i = 0; i < round.length; i += width) {
          const ctl = new RoundControl(step.budget.afterFirst);
          results.push(
            ...(await Promise.all(round.slice(i, i + width).map((g) => this.job(g, r, step.budget.capSec, ctl)))),
          );
        }
        results.forEach((res, i) => {
          const group = byId.get(round[i]!.id)!;
          jobs.push(res.job);
          if (res.links) links.set(round[i]!.id, res.links);
          if (res.job.status === 'interrupted') return; // not measured: neither samples nor a failure
          if (res.job.status !== 'ok') {
            group.failed ??= res.job.error;
            return;
          }
          for (const [size, values] of res.samples) {
            const runs = group.bySize.get(size) ?? [];
            runs.push(values);
            group.bySize.set(size, runs);
          }
        });
      }
    }
    return { groups: [...byId.values()], jobs, links };
  }
}

/** The jobs of one round: when the first has finished, the others are stopped at `afterFirst` × its duration. */
class RoundControl {
  private readonly live = new Map<RunningChild, number>();
  private readonly stopped = new Set<RunningChild>();
  private timer: NodeJS.Timeout | null = null;
  constructor(private readonly afterFirst: number | null) {}
  started(c: RunningChild): void {
    this.live.set(c, Date.now());
  }
  wasStopped(c: RunningChild): boolean {
    return this.stopped.has(c);
  }
  finished(c: RunningChild, ok: boolean): void {
    const began = this.live.get(c);
    this.live.delete(c);
    if (!ok || this.afterFirst === null || this.timer !== null || began === undefined || this.live.size === 0) return;
    const first = Date.now() - began;
    this.timer = setTimeout(
      () => {
        for (const other of this.live.keys()) {
          this.stopped.add(other);
          other.stop();
        }
      },
      Math.max(0, began + this.afterFirst * first - Date.now()),
    ).unref();
  }
}

/**
 * Can mpirun start a process on every host? One job over all hosts; when it fails, one job per host (in parallel,
 * a few at a time) names those that cannot be reached.
 */
export async function checkReachable(s: LocateJobs, hosts: string[]): Promise<void> {
  const probe = (list: string[]): Promise<ChildOutcome> => {
    const plan = mpirunPlan({
      np: list.length,
      hosts: list.join(','),
      program: [process.execPath, '-e', 'process.stdout.write(require("os").hostname())'],
      args: [],
      env: s.children.env,
    });
    return s.children.start(plan.command, plan.args, { timeoutSec: Math.min(s.opts.timeoutSec, 120), graceMs: 3000 });
  };
  const all = await probe(hosts);
  if (all.exitCode === 0 && !all.timedOut) return;
  if (s.interrupted) throw new UnreachableHostError('locate: interrupted');
  s.progress(`not every host can be reached (${failureLine(all, 120)}); trying each one`);
  const bad: { host: string; why: string }[] = [];
  for (let i = 0; i < hosts.length; i += 8) {
    const batch = hosts.slice(i, i + 8);
    const res = await Promise.all(batch.map((h) => probe([h])));
    res.forEach((r, j) => {
      if (r.exitCode !== 0 || r.timedOut) bad.push({ host: batch[j]!, why: failureLine(r, 120) });
    });
  }
  if (bad.length) {
    throw new UnreachableHostError(
      `locate: host${bad.length > 1 ? 's' : ''} ${bad.map((b) => `'${b.host}'`).join(', ')} unreachable: mpirun cannot start a process there (${bad[0]!.why})`,
    );
  }
  throw new UnreachableHostError(
    `locate: mpirun cannot start a job over all hosts although each one works alone (${failureLine(all, 120)})`,
  );
}
