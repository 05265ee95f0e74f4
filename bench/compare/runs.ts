// The runs of `collbench compare`: every combination of settings run as child runs of collbench
// (engine/child-runs.ts), run by run in ABBA order so that a linear drift cancels, a combination that failed once
// skipped after; on NCCL one extra default run logs NCCL's per-call tuning choices. Ctrl-C stops the running child.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { classifyRun, type RunResult } from './analyze.js';
import type { NcclProbe } from './document.js';
import { NCCL_FUNC_OF, parseNcclTuningLog, type NcclTuningEvent } from './tuning-log.js';
import { childWords, type ProgramSpec } from './program.js';
import { shorten } from './render.js';
import { childEnv, type Combination } from './settings.js';
import type { IO } from '../core/io.js';
import type { ChildRuns } from '../engine/child-runs.js';

const NCCL_PROBE_ENV = { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'TUNING' };

/** What the runs take from compare's plan. */
export interface CompareRunPlan {
  combos: Combination[];
  program: ProgramSpec;
  /** Runs per combination, each with its own report; each run's time limit. */
  runs: number;
  timeoutSec: number;
  quiet: boolean;
}

/** Every run's result per combination, the NCCL probe, and whether a signal stopped them. */
export class CompareRuns {
  readonly results: Map<string, RunResult[]>;
  probe: NcclProbe | null = null;
  probeEvents: NcclTuningEvent[] | null = null;

  /** `keep`: the reports folder is the user's (--reports-dir): the probe's NCCL logs stay listed in the document. */
  constructor(
    private readonly plan: CompareRunPlan,
    private readonly children: ChildRuns,
    private readonly keep: boolean,
    private readonly io: IO,
  ) {
    this.results = new Map(plan.combos.map((c) => [c.id, []]));
  }

  /** A signal stopped the comparison: the runs so far are what it has. */
  get interrupted(): boolean {
    return this.children.stopped;
  }

  progress(line: string): void {
    if (!this.plan.quiet) this.io.err(`compare: ${line}`);
  }

  async runOne(c: Combination, run: number, tag: string, extraEnv: Record<string, string> = {}): Promise<RunResult> {
    const r = await this.children.run(tag, (report) => childWords(this.plan.program, c, report), {
      timeoutSec: this.plan.timeoutSec,
      env: (base) => childEnv(base, c, extraEnv),
    });
    return { run, outcome: r.outcome, doc: r.report.doc, docError: r.report.error, reportPath: r.reportPath };
  }

  /** NCCL: one extra default run logging NCCL's per-call choice (its timings are not used: logging costs time). */
  async runNcclProbe(): Promise<void> {
    const base = this.plan.combos.find((c) => c.baseline)!;
    const env = { ...NCCL_PROBE_ENV, NCCL_DEBUG_FILE: join(this.children.dir, 'nccl-tuning.%h.%p.log') };
    this.progress(`NCCL probe: default run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING`);
    const r = await this.runOne(base, 0, 'probe-C0', env);
    const { status, error } = classifyRun(r, this.plan.timeoutSec);
    const files = readdirSync(this.children.dir)
      .filter((f) => /^nccl-tuning\..*\.log$/.test(f))
      .map((f) => join(this.children.dir, f));
    const text = [...files.map((f) => readFileSync(f, 'utf8')), r.outcome?.stdoutTail ?? ''].join('\n');
    this.probeEvents = parseNcclTuningLog(text);
    this.probe = { ran: true, env, status, error, events: this.probeEvents.length, files: this.keep ? files : [] };
    if (this.probeEvents.length === 0 && NCCL_FUNC_OF[this.plan.program.collective] !== undefined) {
      this.progress(`NCCL probe: no per-call tuning lines found (${shorten(error ?? 'this NCCL does not log them')})`);
    }
  }

  /** Every combination, run by run, interleaved; a combination that failed once is skipped after; `afterRun` after
   *  each (compare rewrites its files). */
  async runCombinations(afterRun: () => Promise<void>): Promise<void> {
    const { combos } = this.plan;
    const opts = this.plan;
    const total = combos.length * opts.runs;
    let n = 0;
    for (let run = 1; run <= opts.runs && !this.interrupted; run++) {
      const order = run % 2 === 1 ? combos : [...combos].reverse(); // ABBA: linear drift cancels over pairs
      for (const c of order) {
        if (this.interrupted) break;
        n++;
        const prior = this.results.get(c.id)!;
        if (
          prior.some(
            (r) => r.skipped || ['failed', 'rejected', 'timeout'].includes(classifyRun(r, opts.timeoutSec).status),
          )
        ) {
          prior.push({ run, outcome: null, skipped: true, doc: null, docError: null, reportPath: null });
          this.progress(`[${n}/${total}] run ${run}/${opts.runs} ${c.id} ${c.label}: skipped (failed before)`);
          continue;
        }
        const r = await this.runOne(c, run, `${c.id}-run${run}`);
        prior.push(r);
        const { status, error } = classifyRun(r, opts.timeoutSec);
        this.progress(
          `[${n}/${total}] run ${run}/${opts.runs} ${c.id} ${c.label}: ${status}` +
            `${error ? ` (${shorten(error)})` : ''} ${r.outcome ? `${r.outcome.durationSec.toFixed(1)} s` : ''}`.trimEnd(),
        );
        await afterRun();
      }
    }
  }
}
