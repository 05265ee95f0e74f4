// The runs of `collbench accept`: each check of the profile run as child runs of collbench (engine/child-runs.ts),
// attempt after attempt until its k-of-n thresholds are decided, each report judged as it arrives; the first
// report fixes the world (matched against a baseline's). Ctrl-C stops the running child.
import { matchWorld, type LoadedBaseline } from './baseline.js';
import { decided, judge, type ThresholdResult } from './evaluate.js';
import type { ProfileCheck } from './profile.js';
import { linksWords } from './links.js';
import type { CheckRuns } from './rows.js';
import { EXIT } from '../core/errors.js';
import type { IO } from '../core/io.js';
import { failureLine, type ChildOutcome } from '../launch/child-job.js';
import type { ReportDocument } from '../report/schema.js';
import type { ChildRuns } from '../engine/child-runs.js';

/** What the runs take from accept's options. */
export interface AcceptRunSettings {
  /** The launch words every run gets (--np, --hosts, --backend, …). */
  launch: string[];
  /** Each run's time limit. */
  timeoutSec: number;
  quiet: boolean;
}

/** The exit status a failed run stands for: its own (3, 4, 5, 1, 2), a time-out 4, anything else 3. */
function runExitCode(o: ChildOutcome): number {
  if (o.timedOut) return EXIT.TIMEOUT;
  if (o.interrupted) return 130;
  const known: number[] = [EXIT.INTERNAL, EXIT.USAGE, EXIT.BACKEND, EXIT.TIMEOUT, EXIT.ENVIRONMENT];
  return o.exitCode !== null && known.includes(o.exitCode) ? o.exitCode : EXIT.BACKEND;
}

export class AcceptChecks {
  world: { nranks: number; backend: string; host: string } | null = null;

  constructor(
    private readonly opts: AcceptRunSettings,
    private readonly children: ChildRuns,
    private readonly io: IO,
    private readonly baseline: LoadedBaseline | null,
  ) {}

  /** A signal stopped the checks: the verdict is "error". */
  get interrupted(): boolean {
    return this.children.stopped;
  }

  progress(line: string): void {
    if (!this.opts.quiet) this.io.err(`accept: ${line}`);
  }

  /** A check's run: its words after the script. */
  childWords(c: ProfileCheck, report: string): string[] {
    return [
      c.collective,
      '-b',
      String(c.minBytes),
      '-e',
      String(c.maxBytes),
      '-f',
      String(c.stepFactor),
      '-n',
      String(c.iters),
      '-w',
      String(c.warmupIters),
      '-d',
      c.dtype,
      '-o',
      c.op,
      '-c',
      c.wrong ? '1' : '0',
      '-I',
      '1',
      '-J',
      report,
      '--quiet',
      ...linksWords(c, this.opts.launch),
      ...this.opts.launch,
    ];
  }

  async runCheck(c: ProfileCheck, label: string): Promise<CheckRuns> {
    const docs: ReportDocument[] = [];
    let results: ThresholdResult[] = judge(c, docs);
    for (let attempt = 1; attempt <= c.attempts.of && !this.interrupted; attempt++) {
      const { outcome, report } = await this.children.run(
        `check${c.index}-run${attempt}`,
        (path) => this.childWords(c, path),
        { timeoutSec: this.opts.timeoutSec },
      );
      const doc = report.doc?.status === 'complete' ? report.doc : null;
      const finished = outcome.exitCode === 0 || outcome.exitCode === EXIT.WRONG_RESULTS;
      if (!doc || !finished) {
        // a run that ended well but left no complete, valid report is collbench's own fault (exit 1)
        const error = finished
          ? { line: 'the run exited without a complete, schema-valid report', exitCode: EXIT.INTERNAL }
          : { line: failureLine(outcome, this.opts.timeoutSec), exitCode: runExitCode(outcome) };
        this.progress(`${label} ${c.id} run ${attempt}/${c.attempts.of}: error (${error.line})`);
        return { check: c, docs, results, error };
      }
      if (doc.rows.length !== c.sizes.length) {
        const why =
          doc.summary?.skipped ?? `the run measured ${doc.rows.length} of the check's ${c.sizes.length} sizes`;
        this.progress(`${label} ${c.id} run ${attempt}/${c.attempts.of}: error (${why})`);
        return { check: c, docs, results, error: { line: why, exitCode: EXIT.USAGE } };
      }
      this.noteWorld(doc);
      docs.push(doc);
      results = judge(c, docs);
      const failed = results.filter((r) => !r.attempts[attempt - 1]!.holds).map((r) => r.name);
      this.progress(
        `${label} ${c.id} run ${attempt}/${c.attempts.of}: ${failed.length ? `missed ${failed.join(', ')}` : 'thresholds held'}` +
          ` (${outcome.durationSec.toFixed(1)} s)`,
      );
      if (decided(c, results, docs.length)) break;
    }
    return { check: c, docs, results, error: null };
  }

  /** The first report fixes the world; with a baseline it must be the baseline's (else exit 2, nothing written). */
  private noteWorld(doc: ReportDocument): void {
    if (this.world) return;
    this.world = {
      nranks: doc.world.nranks,
      backend: doc.world.backend,
      host: doc.ranks[0]?.host ?? doc.provenance.host.hostname,
    };
    if (this.baseline) matchWorld(this.baseline, this.world);
  }
}
