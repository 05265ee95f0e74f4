// Benchmark runs as child processes that leave a JSON report (compare, locate and accept run theirs this way): each
// child is this program again (node's flags, the script, the run's words, -J FILE) in its own process group under a
// time limit (launch/child-job.ts); its report is read back and checked against the schema. The one place where a
// command starts its runs, stops them all (Ctrl-C, SIGTERM, --max-time) and reads what they measured.
import { mkdtempSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild, type ChildOutcome, type RunningChild } from '../launch/child-job.js';
import { ARGV_ENV } from '../report/provenance.js';
import { readDocument } from '../report/json-schemas.js';
import { reportErrorLine, reportSchemaOf, type ReportDocument } from '../report/schema.js';

/** A child's report: the document when it is there and valid, else why not (one phrase). */
export type ReportRead = { doc: ReportDocument; error: null } | { doc: null; error: string };

export function readReport(path: string): ReportRead {
  const { doc, problem } = readDocument<ReportDocument>(path, reportSchemaOf);
  if (doc) return { doc, error: null };
  if (problem.stage === 'read' && problem.code === 'ENOENT') return { doc: null, error: 'the run wrote no report' };
  if (problem.stage === 'read' || problem.stage === 'json') {
    return { doc: null, error: `unreadable report: ${problem.message}` };
  }
  const lines = problem.stage === 'schema' ? problem.errors.map(reportErrorLine) : [];
  return { doc: null, error: `report does not match the schema: ${lines.slice(0, 2).join('; ')}` };
}

export interface ChildRun {
  outcome: ChildOutcome;
  report: ReportRead;
  reportPath: string;
}

export interface ChildRunOptions {
  /** The run's time limit (0: none); then SIGTERM to its process group, SIGKILL after `graceMs`. */
  timeoutSec: number;
  graceMs?: number;
  /** This run's environment from the children's (default: theirs as it is). */
  env?: (base: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
  /** Called once the child has started (locate's rounds stop slow jobs through it). */
  started?: (c: RunningChild) => void;
}

/** The children of one command: where their reports go, their environment, those running now, and why they were
 *  stopped early, if they were. */
export class ChildRuns {
  private readonly running = new Set<RunningChild>();
  /** This process's environment less the typed command line: each child records its own. */
  readonly env: NodeJS.ProcessEnv;
  /** Why the command stopped its children early (`interrupted` for a signal, or its own reason); null while not. */
  stopReason: string | null = null;
  /** The signal that stopped them, if one did. */
  private signal: NodeJS.Signals | null = null;

  constructor(
    private readonly scriptPath: string,
    readonly dir: string,
  ) {
    this.env = { ...process.env };
    delete this.env[ARGV_ENV];
  }

  /** Runs this program again as a child: `words(reportPath)` are its arguments after the script; its report is
   *  `<dir>/<tag>.json`, read back when it has ended. */
  async run(tag: string, words: (reportPath: string) => string[], o: ChildRunOptions): Promise<ChildRun> {
    const reportPath = join(this.dir, `${tag.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
    rmSync(reportPath, { force: true });
    const outcome = await this.start(process.execPath, [...process.execArgv, this.scriptPath, ...words(reportPath)], o);
    return { outcome, report: readReport(reportPath), reportPath };
  }

  /** Runs any command as one of these children (locate's reachability probe: mpirun with a one-line script). */
  async start(command: string, args: string[], o: ChildRunOptions): Promise<ChildOutcome> {
    const child = startChild({
      command,
      args,
      env: o.env ? o.env(this.env) : this.env,
      timeoutMs: o.timeoutSec * 1000,
      graceMs: o.graceMs,
    });
    this.running.add(child);
    o.started?.(child);
    try {
      return await child.done;
    } finally {
      this.running.delete(child);
    }
  }

  /** True once the children were stopped early: the command starts no more of them. */
  get stopped(): boolean {
    return this.stopReason !== null;
  }

  /** Stops every running child (its whole process group); the first reason given is the one kept. */
  stop(why: string, signal: NodeJS.Signals | null = null): void {
    if (this.stopReason === null) {
      this.stopReason = why;
      this.signal = signal;
    }
    for (const c of this.running) c.stop();
  }

  /** The exit status of a command whose user stopped it with a signal: 128 + its number, as a shell reports it (130
   *  for SIGINT, 143 for SIGTERM); null when no signal stopped it. */
  signalExit(): number | null {
    return this.signal === null ? null : 128 + constants.signals[this.signal];
  }
}

/** Runs `body` with the children of one command: their reports in `dir` (given: kept; else a temporary folder named
 *  after `prefix`, removed afterwards), SIGINT and SIGTERM stopping every running child while it runs. */
export async function withChildRuns<T>(
  scriptPath: string,
  place: { dir: string } | { prefix: string },
  body: (children: ChildRuns) => Promise<T>,
): Promise<T> {
  const dir = 'dir' in place ? place.dir : mkdtempSync(join(tmpdir(), place.prefix));
  const children = new ChildRuns(scriptPath, dir);
  const onSignal = (signal: NodeJS.Signals): void => {
    children.stop('interrupted', signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await body(children);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!('dir' in place)) rmSync(dir, { recursive: true, force: true });
  }
}
