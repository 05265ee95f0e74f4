// The one place that turns options into reporters and exporters (the live table, progress, -J, --csv, --md, --junit,
// --html, --prom sharing one report document, rewritten atomically as rows come), checks their paths before a run,
// and writes every command's finished document. `-` sends a document to stdout once the run ends.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { EnvironmentError, UsageError } from '../core/errors.js';
import type { IO } from '../core/io.js';
import type { ResolvedOptions } from '../config/flags.js';
import { writeFileAtomic } from './atomic-write.js';
import { renderCsv } from './exporters/csv.js';
import { renderJson, reportBuilder } from './exporters/json.js';
import { renderJunit } from './exporters/junit.js';
import { renderMarkdown } from './exporters/md.js';
import { renderNcclTestsJson } from './exporters/nccl-tests-json.js';
import type { Reporter } from './reporter.js';
import { ncclTableReporter } from './reporters/nccl-table-reporter.js';
import { prettyReporter } from './reporters/pretty.js';
import { progressLinesReporter, progressMode, progressReporter, type ProgressStream } from './reporters/progress.js';
import type { ReportDocument } from './schema.js';

/** A report file could not be written during the run (disk full, directory removed): exit 5. */
export class OutputError extends EnvironmentError {
  constructor(message: string) {
    super(message);
    this.name = 'OutputError';
  }
}

export interface OutputSpec {
  flag: string; // how messages name it: -J, --csv, …
  path: string; // '-' = stdout
  render(doc: ReportDocument): string | Promise<string>;
}

export function outputSpecs(o: ResolvedOptions): OutputSpec[] {
  const specs: OutputSpec[] = [];
  if (o.jsonFile !== null) {
    specs.push({
      flag: '-J',
      path: o.jsonFile,
      render: o.jsonFormat === 'nccl-tests' ? renderNcclTestsJson : renderJson,
    });
  }
  if (o.csvFile !== null) specs.push({ flag: '--csv', path: o.csvFile, render: renderCsv });
  if (o.mdFile !== null) specs.push({ flag: '--md', path: o.mdFile, render: renderMarkdown });
  if (o.junitFile !== null) specs.push({ flag: '--junit', path: o.junitFile, render: renderJunit });
  // vega is loaded only when a page is wanted (it costs a noticeable part of a second at start-up)
  if (o.htmlFile !== null) {
    specs.push({
      flag: '--html',
      path: o.htmlFile,
      render: async (doc) => (await import('./exporters/html.js')).renderRunHtml(doc),
    });
  }
  // prom-client too is loaded only when metrics are wanted
  if (o.promFile !== null) {
    specs.push({
      flag: '--prom',
      path: o.promFile,
      render: async (doc) => (await import('./exporters/prom.js')).renderProm(doc),
    });
  }
  return specs;
}

/** Why a folder cannot take a new file, in words, from the error of creating one there. */
function folderProblem(err: NodeJS.ErrnoException, dir: string): string {
  switch (err.code) {
    // a folder that exists yet answers ENOENT to a new file: a kernel file system (/proc, /sys)
    case 'ENOENT':
      return existsSync(dir)
        ? `folder ${dir} takes no new files (a kernel file system such as /proc or /sys)`
        : `folder ${dir} does not exist`;
    case 'ENOTDIR':
      return `${dir} is not a directory`;
    case 'EACCES':
    case 'EPERM':
      return `folder ${dir} is not writable (${err.code})`;
    case 'EROFS':
      return `folder ${dir} is on a read-only file system`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `no space left in ${dir} (${err.code})`;
    default:
      return err.code ? `${err.code} in ${dir}` : err.message;
  }
}

/**
 * Proves that `dir` takes a new file by creating and removing one there (access(2) says yes to root on a
 * read-only mount or an immutable folder; only a real create tells). Throws the errno error otherwise.
 */
function probeFolder(dir: string): void {
  const probe = join(dir, `.collbench-probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  closeSync(openSync(probe, 'wx', 0o600));
  unlinkSync(probe);
}

export interface OutputCheck {
  /** --force: an existing file may be replaced (default: refused). */
  force?: boolean;
  /** The name of the flag that allows replacing, for the message (default --force). */
  forceFlag?: string;
}

/**
 * Refuses, before anything runs, outputs that cannot be written: missing, read-only or full folder, a path
 * that is a directory, two outputs on one file, and (without --force) a file that already exists: a run
 * never silently replaces an earlier result. The folder is probed by creating and removing a file in it.
 */
export function checkOutputPaths(specs: readonly { flag: string; path: string }[], check: OutputCheck = {}): void {
  const stdout = specs.filter((s) => s.path === '-');
  if (stdout.length > 1) {
    throw UsageError.forFlag(
      stdout[1]!.flag,
      `stdout (-) already receives ${stdout[0]!.flag}; give one of them a file name`,
    );
  }
  const seen = new Map<string, string>();
  for (const s of specs) {
    if (s.path === '-') continue;
    const abs = resolve(s.path);
    const other = seen.get(abs);
    if (other) throw UsageError.forFlag(s.flag, `${s.path} is also the file of ${other}`);
    seen.set(abs, s.flag);
    const dir = dirname(abs);
    let st;
    try {
      st = statSync(abs, { throwIfNoEntry: false });
      if (st?.isDirectory()) throw UsageError.forFlag(s.flag, `cannot write ${s.path}: is a directory`);
      probeFolder(dir);
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw UsageError.forFlag(s.flag, `cannot write ${s.path}: ${folderProblem(e as NodeJS.ErrnoException, dir)}`);
    }
    if (st && !check.force) {
      throw UsageError.forFlag(
        s.flag,
        `${s.path} already exists; refusing to overwrite it (give ${check.forceFlag ?? '--force'} to replace it)`,
      );
    }
  }
}

/** Replaces one output file atomically (writeFileAtomic); a failure is an OutputError naming the flag and the file. */
export function writeOutputFile(flag: string, path: string, text: string, durable = true): void {
  try {
    writeFileAtomic(path, text, durable);
  } catch (e) {
    throw new OutputError(`${flag}: cannot write ${path}: ${(e as Error).message}`);
  }
}

/** One output of a command's own document (accept, compare, locate, replay, workload): the flag that asked for it,
 *  its file (`-` = stdout, null = not asked for) and how the document becomes its text. */
export interface DocumentOutput<D> {
  flag: string;
  path: string | null;
  render(doc: D): string | Promise<string>;
}

/** The outputs asked for that are files (not stdout), as checkOutputPaths and the launcher take them. */
export function outputFiles(outputs: readonly DocumentOutput<never>[]): { flag: string; path: string }[] {
  return outputs.flatMap((o) => (o.path === null || o.path === '-' ? [] : [{ flag: o.flag, path: o.path }]));
}

/** A document as indented JSON with a final newline, as the commands' -J writes it. */
export const documentJson = (doc: unknown): string => `${JSON.stringify(doc, null, 2)}\n`;

/**
 * The one writer of a command's finished document: the text summary on stdout, or, when a document goes to stdout,
 * on stderr (`summaryBesideStdout` 'stderr') or not at all ('none'), so that stdout holds only that document; then
 * each output in order, a file replaced atomically (OutputError when it cannot be), stdout's printed.
 */
export async function writeDocument<D>(
  doc: D,
  outputs: readonly DocumentOutput<D>[],
  io: IO,
  summary: { lines: readonly string[]; besideStdout: 'stderr' | 'none' },
): Promise<void> {
  const toStdout = outputs.some((o) => o.path === '-');
  if (!toStdout) for (const line of summary.lines) io.out(line);
  else if (summary.besideStdout === 'stderr') for (const line of summary.lines) io.err(line);
  for (const o of outputs) {
    if (o.path === null) continue;
    const text = await o.render(doc);
    if (o.path === '-') io.out(text.replace(/\n$/, ''));
    else writeOutputFile(o.flag, o.path, text);
  }
}

/** During a run the exporters rewrite their files at most this often (ms): the first row after a quiet spell at once,
 *  rows that follow sooner together, at most this long afterwards. A rewrite per row cost about 0.3-0.6 ms of JavaScript
 *  and file-system work per row (more as the document grows: a soak rewrote O(rows²)); run beside the row-halves queued
 *  ahead, or as a backlog before the next one, it slowed them (docs/performance.md). */
export const EXPORT_INTERVAL_MS = 1000;

/** The signals after which a run's files still hold every row finished (exportReporter). */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * The exporters of one run: one shared document, every file rewritten at begin, after rows (at most every
 * EXPORT_INTERVAL_MS), when the run stops early (abandon) or is stopped by a signal, and at the end (flushed to disk).
 * A file always holds a whole document; one the run did not finish says "incomplete".
 */
export function exportReporter(
  specs: readonly OutputSpec[],
  toStdout: (text: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Reporter {
  const builder = reportBuilder(env);
  const write = async (final: boolean): Promise<void> => {
    const doc = builder.doc!;
    // Every document rendered first, then all written back to back: the files of one rewrite hold the same rows
    // (a kill -9 between two of them is a window of one file write, not of the HTML renderer).
    const shown = specs.filter((s) => s.path !== '-' || final);
    const texts: string[] = [];
    for (const s of shown) texts.push(await s.render(doc));
    shown.forEach((s, i) => {
      if (s.path === '-') {
        toStdout(texts[i]!.replace(/\n$/, ''));
        return;
      }
      // Durable (fsync) at the end only: the rewrites during the run are replaced soon.
      writeOutputFile(s.flag, s.path, texts[i]!, final);
    });
  };
  // Rewrites go one after the other (a timer's and a row's never interleave); a failed one is thrown at the next call.
  let chain: Promise<void> = Promise.resolve();
  let failure: Error | null = null;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | null = null;
  const flush = (final: boolean): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (failure) return Promise.reject(failure);
    lastWrite = Date.now();
    chain = chain.then(() => write(final));
    return chain;
  };
  const soon = (): Promise<void> => {
    if (failure) return Promise.reject(failure);
    const wait = lastWrite + EXPORT_INTERVAL_MS - Date.now();
    if (wait <= 0) return flush(false);
    timer ??= setTimeout(() => {
      flush(false).catch((e: unknown) => {
        failure = e instanceof Error ? e : new Error(String(e));
      });
    }, wait).unref();
    return Promise.resolve();
  };
  // Ctrl-C, SIGTERM or SIGHUP during the run: the rows held back are written, then the signal ends the process as it
  // would have (the listener is gone by then, so the default action runs).
  const onSignal = (signal: NodeJS.Signals): void => {
    unlisten();
    const die = (): void => {
      process.kill(process.pid, signal);
    };
    (timer ? flush(false) : chain).then(die, die);
  };
  const listen = (): void => {
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
  };
  const unlisten = (): void => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  return {
    begin: (meta) => {
      builder.begin(meta);
      listen();
      return flush(false);
    },
    row: (row) => {
      builder.row(row);
      return soon();
    },
    abandon: () => {
      unlisten();
      return timer ? flush(false) : chain;
    },
    timedOut: (t) => {
      if (!builder.doc) return;
      builder.timedOut(t);
      return flush(false);
    },
    end: (summary) => {
      unlisten();
      builder.end(summary);
      return flush(true);
    },
  };
}

/**
 * Rank 0's reporters for these options, in the order they must run for each row: progress (erases its
 * line), the live table, the exporters. `stderr` is where the progress bar or lines go.
 */
export function buildReporters(
  options: ResolvedOptions,
  io: IO,
  ctx: { stderr?: ProgressStream; env?: NodeJS.ProcessEnv } = {},
): Reporter[] {
  const env = ctx.env ?? process.env;
  const specs = outputSpecs(options);
  const tableOut = specs.some((s) => s.path === '-') ? io.err : io.out;
  const reporters: Reporter[] = [];
  const stderr = ctx.stderr ?? process.stderr;
  const progress = progressMode(stderr, options.quiet, env);
  if (progress === 'bar') reporters.push(progressReporter(stderr));
  else if (progress === 'lines') reporters.push(progressLinesReporter(stderr));
  reporters.push(options.format === 'pretty' ? prettyReporter(tableOut) : ncclTableReporter(tableOut));
  if (specs.length > 0) reporters.push(exportReporter(specs, io.out, env));
  return reporters;
}
