// `collbench locate --hosts h1,h2,… [--np-per-host K] [-J verdict.json] [-- run arguments]`: names the host or link
// that slows a multi-host job down. Every measurement is a child job of collbench itself (all_reduce --np … --hosts …,
// an argument array, never a shell) writing its JSON report to a temporary file; the stages, the schedule and the
// decision rule live in bench/locate/. Open MPI's configuration comes from the environment (OMPI_MCA_*), untouched.
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failureLine, startChild, type ChildOutcome, type RunningChild } from '../compare/runner.js';
import { EXIT, UsageError } from '../core/errors.js';
import { mpirunPlan } from '../launch/mpirun.js';
import { writeFileAtomic } from '../report/atomic-write.js';
import { OutputError } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { reportErrors, type ReportDocument } from '../report/schema.js';
import type { GroupSamples } from '../locate/decide.js';
import { renderLocateText, type LocateJob } from '../locate/document.js';
import { runLocate, type GroupSpec, type MeasureStep, type Measurer } from '../locate/flow.js';
import { DEFAULT_RUN_ARGS, LOCATE_OPTIONS, parseLocateArgs, type LocateOptions, type PlanRequest } from '../locate/options.js';
import { fitSchedule, locatePlan } from '../locate/schedule.js';
import { BUDGET_SLACK } from '../locate/budget.js';
import { formatSeconds } from '../locate/document.js';
import { commandHelp } from '../config/options.js';

export interface LocateIO { out: (line: string) => void; err: (line: string) => void }

/** A host that resolves but where mpirun cannot start a process: exit 5, naming it. */
export class UnreachableHostError extends Error {}

/** Progress lines and children's process groups; stop() ends every running job (Ctrl-C on locate). */
class Session implements Measurer {
  readonly running = new Set<RunningChild>();
  interrupted = false;
  stopReason: string | null = null;
  readonly env: NodeJS.ProcessEnv;
  private deadline: NodeJS.Timeout | null = null;
  constructor(readonly opts: LocateOptions, readonly dir: string, readonly scriptPath: string, readonly io: LocateIO) {
    this.env = { ...process.env };
    delete this.env[ARGV_ENV]; // each job records its own command line
  }

  readonly onSignal = (): void => { this.stop('interrupted'); };

  stop(why: string): void {
    if (!this.interrupted) this.stopReason = why;
    this.interrupted = true;
    for (const c of this.running) c.stop();
  }

  /** --max-time: from now on, the run stops after this many seconds (and reports what it found). */
  startClock(): void {
    this.deadline = setTimeout(() => {
      this.progress(`--max-time ${this.opts.maxTimeSec} s reached: stopping the running jobs`);
      this.stop(`stopped at --max-time (${this.opts.maxTimeSec} s)`);
    }, this.opts.maxTimeSec * 1000).unref();
  }

  stopClock(): void { if (this.deadline) clearTimeout(this.deadline); }

  progress(line: string): void { if (!this.opts.quiet) this.io.err(`locate: ${line}`); }

  async child(command: string, args: string[], timeoutSec: number, started?: (c: RunningChild) => void): Promise<ChildOutcome> {
    const c = startChild({ command, args, env: this.env, timeoutMs: timeoutSec * 1000, graceMs: 3000 });
    this.running.add(c);
    started?.(c);
    try {
      return await c.done;
    } finally {
      this.running.delete(c);
    }
  }

  /**
   * One all_reduce job over `hosts` with K ranks each; its samples per size (busbw GB/s per iteration, both halves).
   * Stopped at `budgetSec`, or by its round (`round.stop`), it keeps the sizes its report holds by then (the report
   * is rewritten after every row and when the job is stopped).
   */
  async job(g: GroupSpec, repeat: number, budgetSec: number | null, round: RoundControl): Promise<{ job: LocateJob; samples: Map<number, number[]> }> {
    const { id, hosts } = g;
    const k = this.opts.npPerHost;
    const report = join(this.dir, `${id.replace(/[^A-Za-z0-9._-]/g, '_')}-r${repeat}.json`);
    rmSync(report, { force: true });
    const args = [...process.execArgv, this.scriptPath, 'all_reduce', '--np', String(hosts.length * k),
      '--hosts', hosts.map((h) => `${h}:${k}`).join(','), ...DEFAULT_RUN_ARGS, ...this.opts.runArgs,
      ...(g.iterations !== undefined ? ['-n', String(g.iterations)] : []),
      '-I', '1', '-J', report, '--json-format', 'collbench', '--quiet'];
    const limit = budgetSec !== null ? Math.min(budgetSec, this.opts.timeoutSec) : this.opts.timeoutSec;
    const byBudget = budgetSec !== null && budgetSec < this.opts.timeoutSec;
    let child: RunningChild | null = null;
    const o = this.interrupted ? null : await this.child(process.execPath, args, limit, (c) => { child = c; round.started(c); });
    if (child) round.finished(child, o !== null && o.exitCode === 0 && !o.timedOut);
    const samples = new Map<number, number[]>();
    let status: LocateJob['status'] = 'ok';
    let error: string | null = null;
    const capped = o !== null && !this.interrupted && ((o.timedOut && byBudget) || (child !== null && round.wasStopped(child)));
    if (o === null || (o.interrupted && !capped) || (this.interrupted && !capped && o.exitCode !== 0)) { status = 'interrupted'; error = 'interrupted'; }
    else if (o.timedOut && !capped) { status = 'timeout'; error = failureLine(o, this.opts.timeoutSec); }
    else if (o.exitCode !== 0 && !capped) { status = 'failed'; error = failureLine(o, this.opts.timeoutSec); }
    else {
      const doc = readReport(report);
      if (typeof doc === 'string') { status = 'failed'; error = capped ? `stopped at its time budget (${o!.durationSec.toFixed(1)} s) before it wrote a report` : doc; }
      else for (const [size, values] of samplesOf(doc)) samples.set(size, values);
      if (status === 'ok' && samples.size === 0) {
        status = 'failed';
        error = capped ? `stopped at its time budget (${o!.durationSec.toFixed(1)} s) before its first size finished: far slower than the others`
          : 'the report has no per-iteration samples';
      }
    }
    this.progress(`${id} (repeat ${repeat}): ${status}${capped ? ' (stopped at its time budget)' : ''}${error ? ` (${error})` : ''}${o ? ` ${o.durationSec.toFixed(1)} s` : ''}`);
    return { job: { id, hosts, repeat, status, error, durationSec: o?.durationSec ?? 0, budgetSec: limit === this.opts.timeoutSec && !byBudget ? null : limit,
      capped, iterations: g.iterations ?? null }, samples };
  }

  /**
   * Runs `rounds` (each a list of groups whose jobs run at the same time) `repeats` times, each repeat starting one
   * round later (1 2 3, 2 3 1, 3 1 2): a round's two measurements are then n − 1 rounds apart, never back to back,
   * so one burst of load elsewhere (a build, another job) does not hit both. `step` numbers the repeats and gives
   * the jobs' time budget.
   */
  async measure(rounds: GroupSpec[][], repeats: number, step: MeasureStep = { firstRepeat: 1, budget: { capSec: null, afterFirst: null } }):
    Promise<{ groups: GroupSamples[]; jobs: LocateJob[] }> {
    const byId = new Map<string, GroupSamples>();
    const jobs: LocateJob[] = [];
    for (const round of rounds) for (const g of round) byId.set(g.id, { id: g.id, hosts: g.hosts, bySize: new Map(), failed: null });
    for (let r = step.firstRepeat; r < step.firstRepeat + repeats && !this.interrupted; r++) {
      const shift = (r - 1) % Math.max(1, rounds.length);
      const order = [...rounds.slice(shift), ...rounds.slice(0, shift)];
      for (const round of order) {
        if (this.interrupted) break;
        const width = this.opts.parallel > 0 ? this.opts.parallel : round.length;
        const results: Awaited<ReturnType<Session['job']>>[] = [];
        for (let i = 0; i < round.length; i += width) {
          const ctl = new RoundControl(step.budget.afterFirst);
          results.push(...await Promise.all(round.slice(i, i + width).map((g) => this.job(g, r, step.budget.capSec, ctl))));
        }
        results.forEach((res, i) => {
          const group = byId.get(round[i]!.id)!;
          jobs.push(res.job);
          if (res.job.status === 'interrupted') return; // not measured: neither samples nor a failure
          if (res.job.status !== 'ok') { group.failed ??= res.job.error; return; }
          for (const [size, values] of res.samples) {
            const runs = group.bySize.get(size) ?? [];
            runs.push(values);
            group.bySize.set(size, runs);
          }
        });
      }
    }
    return { groups: [...byId.values()], jobs };
  }
}

/** The jobs of one round: when the first has finished, the others are stopped at `afterFirst` × its duration. */
class RoundControl {
  private readonly live = new Map<RunningChild, number>();
  private readonly stopped = new Set<RunningChild>();
  private timer: NodeJS.Timeout | null = null;
  constructor(private readonly afterFirst: number | null) {}
  started(c: RunningChild): void { this.live.set(c, Date.now()); }
  wasStopped(c: RunningChild): boolean { return this.stopped.has(c); }
  finished(c: RunningChild, ok: boolean): void {
    const began = this.live.get(c);
    this.live.delete(c);
    if (!ok || this.afterFirst === null || this.timer !== null || began === undefined || this.live.size === 0) return;
    const first = Date.now() - began;
    this.timer = setTimeout(() => {
      for (const other of this.live.keys()) { this.stopped.add(other); other.stop(); }
    }, Math.max(0, began + this.afterFirst * first - Date.now())).unref();
  }
}

function readReport(path: string): ReportDocument | string {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'the job wrote no report' : `unreadable report: ${(e as Error).message}`;
  }
  const errors = reportErrors(json);
  if (errors.length) return `report does not match the schema: ${errors.slice(0, 2).join('; ')}`;
  return json as ReportDocument;
}

/** Per size, every per-iteration busbw (GB/s) of both halves: the row's busbw scaled by its mean time / the sample. */
export function samplesOf(doc: ReportDocument): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const row of doc.rows) {
    for (const half of [row.outOfPlace, row.inPlace]) {
      if (!half.perIter || half.busBwGBps === null || half.timeUs === null) continue;
      const list = out.get(row.sizeBytes) ?? [];
      for (const s of half.perIter.samplesUs) if (s > 0) list.push((half.busBwGBps * half.timeUs) / s);
      out.set(row.sizeBytes, list);
    }
  }
  return out;
}

/** Names that do not resolve are typos (exit 2). */
async function checkResolvable(hosts: string[]): Promise<void> {
  const failed = (await Promise.all(hosts.map(async (h) => {
    try { await lookup(h); return null; } catch { return h; }
  }))).filter((h): h is string => h !== null);
  if (failed.length) throw new UsageError(`locate: unknown host${failed.length > 1 ? 's' : ''} ${failed.map((h) => `'${h}'`).join(', ')} (does not resolve)`);
}

/**
 * Can mpirun start a process on every host? One job over all hosts; when it fails, one job per host (in parallel,
 * a few at a time) names those that cannot be reached.
 */
async function checkReachable(s: Session, hosts: string[]): Promise<void> {
  const probe = (list: string[]): Promise<ChildOutcome> => {
    const plan = mpirunPlan({ np: list.length, hosts: list.join(','), program: [process.execPath, '-e', 'process.stdout.write(require("os").hostname())'], args: [], env: s.env });
    return s.child(plan.command, plan.args, Math.min(s.opts.timeoutSec, 120));
  };
  const all = await probe(hosts);
  if (all.exitCode === 0 && !all.timedOut) return;
  if (s.interrupted) throw new UnreachableHostError('locate: interrupted');
  s.progress(`not every host can be reached (${failureLine(all, 120)}); trying each one`);
  const bad: { host: string; why: string }[] = [];
  for (let i = 0; i < hosts.length; i += 8) {
    const batch = hosts.slice(i, i + 8);
    const res = await Promise.all(batch.map((h) => probe([h])));
    res.forEach((r, j) => { if (r.exitCode !== 0 || r.timedOut) bad.push({ host: batch[j]!, why: failureLine(r, 120) }); });
  }
  if (bad.length) {
    throw new UnreachableHostError(`locate: host${bad.length > 1 ? 's' : ''} ${bad.map((b) => `'${b.host}'`).join(', ')} unreachable: mpirun cannot start a process there (${bad[0]!.why})`);
  }
  throw new UnreachableHostError(`locate: mpirun cannot start a job over all hosts although each one works alone (${failureLine(all, 120)})`);
}


function renderPlan(p: PlanRequest): string[] {
  const out = [`# collbench locate --plan: ${p.npPerHost} rank(s) per host, ${p.repeats} repeats, ${p.schedule} pairs, ` +
    `${p.jobSeconds} s per job, one suspect re-tested`];
  out.push(`# ${'hosts'.padStart(6)} ${'stage'.padEnd(12)} ${'rounds'.padStart(7)} ${'jobs/round'.padStart(10)} ${'ranks/job'.padStart(9)} ${'jobs'.padStart(9)}  note`);
  for (const n of p.counts) {
    const plan = locatePlan({ hosts: n, npPerHost: p.npPerHost, repeats: p.repeats, schedule: p.schedule, perJobSec: p.jobSeconds });
    for (const st of plan.stages) {
      out.push(`  ${String(n).padStart(6)} ${st.name.padEnd(12)} ${String(st.rounds).padStart(7)} ${String(st.jobsPerRound).padStart(10)} ` +
        `${String(st.ranksPerJob).padStart(9)} ${String(st.jobs).padStart(9)}  ${st.note}`);
    }
    const h = plan.wallSec / 3600;
    out.push(`  ${String(n).padStart(6)} ${'total'.padEnd(12)} ${String(plan.totalRounds).padStart(7)} rounds, wall time ≈ ${plan.wallSec.toFixed(0)} s` +
      `${h >= 1 ? ` (${h.toFixed(1)} h)` : ''}`);
  }
  return out;
}

export async function locateCommand(argv: string[], scriptPath: string, io: LocateIO): Promise<number> {
  const parsed = parseLocateArgs(argv);
  if (parsed.kind === 'help') { io.out(commandHelp(LOCATE_OPTIONS)); return EXIT.OK; }
  if (parsed.kind === 'plan') { for (const l of renderPlan(parsed.plan)) io.out(l); return EXIT.OK; }
  const given = parsed.options;
  await checkResolvable(given.hosts);
  const fit = fitSchedule({ hosts: given.hosts.length, npPerHost: given.npPerHost, repeats: given.repeats, schedule: given.schedule,
    perJobSec: given.jobSeconds, maxSec: given.maxTimeSec });
  const opts: LocateOptions = { ...given, repeats: fit.repeats, schedule: fit.schedule, scheduleNote: fit.note };
  const dir = mkdtempSync(join(tmpdir(), 'collbench-locate-'));
  const s = new Session(opts, dir, scriptPath, io);
  process.on('SIGINT', s.onSignal);
  process.on('SIGTERM', s.onSignal);
  try {
    s.progress(`max time ${formatSeconds(opts.maxTimeSec)}${argv.some((a) => a.startsWith('--max-time')) ? '' : ' (the default; --max-time)'}` +
      `; every job stopped at ${BUDGET_SLACK} × a healthy job's duration`);
    if (fit.note) s.progress(fit.note);
    s.startClock();
    s.progress(`checking that mpirun reaches ${opts.hosts.length} hosts`);
    await checkReachable(s, opts.hosts);
    const doc = await runLocate(s, argv);
    const toStdout = opts.jsonFile === '-';
    for (const line of renderLocateText(doc)) (toStdout ? io.err : io.out)(line);
    if (opts.jsonFile !== null) {
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (toStdout) io.out(text.trimEnd());
      else {
        try {
          writeFileAtomic(opts.jsonFile, text);
        } catch (e) {
          throw new OutputError(`locate: -J: cannot write ${opts.jsonFile}: ${(e as Error).message}`);
        }
      }
    }
    // Ctrl-C / SIGTERM: 130 as any interrupted command; stopped by --max-time: the (partial) verdict's own status
    return s.stopReason === 'interrupted' ? 130 : doc.exitCode;
  } finally {
    s.stopClock();
    process.off('SIGINT', s.onSignal);
    process.off('SIGTERM', s.onSignal);
    rmSync(dir, { recursive: true, force: true });
  }
}
