// Live progress on stderr: rows done of planned, what is measured, elapsed time and ETA. On a terminal (or rank 0's
// under mpirun: COLLBENCH_STDERR_TTY) a cli-progress bar erased around each table row; elsewhere a plain line every
// 10 s; never inside the table, none with --quiet.
import cliProgress from 'cli-progress';
import { formatSize } from '../../config/sizes.js';
import { ENV } from '../../core/environment.js';
import type { Reporter, RowStart } from '../reporter.js';

/** Seconds as 45s, 3m05s, 2h03m. */
export function formatDuration(sec: number): string {
  if (!Number.isFinite(sec) || sec < 0) return '?';
  const s = Math.round(sec);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export interface ProgressStream {
  isTTY?: boolean;
  write(chunk: string): boolean;
}

/** The row being measured, in words: `all_reduce float 8MB`. */
const rowLabel = (collective: string, { sweep, sizeBytes }: RowStart): string =>
  `${collective} ${sweep.dtype}${sweep.root >= 0 ? ` root ${sweep.root}` : ''} ${formatSize(sizeBytes)}B`;

/** How progress shows: a bar (stderr is a terminal, or the --np launcher's is), a plain line every 10 s, or none
 *  (--quiet). */
export type ProgressMode = 'bar' | 'lines' | null;

export function progressMode(
  stream: ProgressStream,
  quiet: boolean,
  env: NodeJS.ProcessEnv = process.env,
): ProgressMode {
  if (quiet) return null;
  const terminal = stream.isTTY === true || env[ENV.STDERR_TTY] === '1';
  return terminal && env.CI === undefined && env.TERM !== 'dumb' ? 'bar' : 'lines';
}

/** True when the bar may be drawn: stderr is a terminal and --quiet was not given. */
export function progressWanted(stream: ProgressStream, quiet: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return progressMode(stream, quiet, env) === 'bar';
}

/**
 * The time left, from the pace of the units done so far: '?' before the first is done or when the total is unknown.
 * `inCurrentSec`: time already spent on the unit under way, which is not to be waited for again (yet at least the
 * units after it remain), so that the estimate does not grow while one long row runs; '?' once that unit has taken
 * more than twice the pace, rather than a confident "~0s left".
 */
export function timeLeft(elapsedSec: number, done: number, planned: number | null, inCurrentSec = 0): string {
  if (planned === null || done <= 0) return '?';
  const pace = Math.max(0, elapsedSec - inCurrentSec) / done;
  // A unit taking more than twice the pace (a larger size at the end of a sweep): the pace says nothing of it.
  if (inCurrentSec > 2 * pace) return '?';
  const remaining = Math.max(0, planned - done);
  return formatDuration(Math.max(pace * Math.max(0, remaining - 1), pace * remaining - inCurrentSec));
}

/** How often a plain progress line is printed when stderr is not a terminal (COLLBENCH_PROGRESS_PERIOD_MS: tests). */
export const PROGRESS_LINE_PERIOD_MS = Number(process.env[ENV.PROGRESS_PERIOD_MS]) || 10_000;

/**
 * A plain progress line every `periodMs` while something runs (`progress: 12/40 rows, 1m20s elapsed, ~3m05s left`),
 * for logs and pipes; the first one only after a period, so a short run prints none. `status()` gives the counts.
 */
export interface ProgressStatus {
  done: number;
  planned: number | null;
  unit: string;
  what?: string;
  /** When the last unit was done (ms, the clock `now` reads). */
  doneAtMs?: number;
}

export function periodicProgress(
  write: (line: string) => void,
  status: () => ProgressStatus,
  periodMs = PROGRESS_LINE_PERIOD_MS,
  now: () => number = Date.now,
): { stop(): void } {
  const started = now();
  const timer = setInterval(() => {
    const { done, planned, unit, what, doneAtMs } = status();
    const t = now();
    const elapsed = (t - started) / 1000;
    const left = timeLeft(elapsed, done, planned, doneAtMs === undefined ? 0 : (t - doneAtMs) / 1000);
    write(
      `progress: ${done}${planned !== null ? `/${planned}` : ''} ${unit}, ${formatDuration(elapsed)} elapsed` +
        `${left === '?' ? '' : `, ~${left} left`}${what ? ` (now ${what})` : ''}`,
    );
  }, periodMs);
  timer.unref(); // never keeps a finished run alive
  return { stop: () => clearInterval(timer) };
}

/** Plain progress lines for a run's rows (stderr not a terminal). */
export function progressLinesReporter(stream: ProgressStream, periodMs = PROGRESS_LINE_PERIOD_MS): Reporter {
  let ticker: { stop(): void } | null = null;
  let planned: number | null = null;
  let done = 0;
  let doneAtMs: number | undefined;
  let what = '';
  let collective = '';
  const stop = (): void => {
    ticker?.stop();
    ticker = null;
  };
  return {
    begin(meta) {
      planned = meta.plannedRows ?? null;
      collective = meta.options.collective;
      const status = (): ProgressStatus => ({ done, planned, unit: 'rows', what, doneAtMs });
      ticker = periodicProgress((line) => stream.write(line + '\n'), status, periodMs);
    },
    rowStart(next: RowStart) {
      what = rowLabel(collective, next);
    },
    row() {
      done++;
      doneAtMs = Date.now();
    },
    end: stop,
    abandon: stop,
  };
}

export function progressReporter(stream: ProgressStream, now: () => number = Date.now): Reporter {
  // Rank 0 under mpirun writes to a pipe that ends on the launcher's terminal: cli-progress draws only on a stream
  // that says it is one (80 columns: the launcher's width is not known here). Its cursor save and restore are left
  // out there: the table rows come through another pipe, and a restore arriving after a row would move back onto it
  // and erase it; without them every redraw and erasure acts on the line the cursor is on.
  const terminal =
    stream.isTTY === true
      ? stream
      : {
          isTTY: true,
          columns: 80,
          write: (chunk: string, done?: () => void) => {
            // eslint-disable-next-line no-control-regex -- terminal escapes are what is looked for
            const ok = stream.write(chunk.replace(/\u001b[78]/g, ''));
            done?.();
            return ok;
          },
        };
  let bar: cliProgress.SingleBar | null = null;
  let planned: number | null = null;
  let collective = '';
  let done = 0;
  let started = 0;

  const erase = (): void => {
    if (bar) {
      bar.stop(); // clearOnComplete: erases the line
      bar = null;
    }
  };

  return {
    begin(meta) {
      planned = meta.plannedRows ?? null;
      collective = meta.options.collective;
      started = now();
    },
    rowStart(next: RowStart) {
      erase();
      const elapsed = (now() - started) / 1000;
      const eta = timeLeft(elapsed, done, planned);
      const what = rowLabel(collective, next);
      const format =
        planned !== null
          ? ` {bar} {value}/{total} rows | ${what} | ${formatDuration(elapsed)} elapsed, ETA ${eta}`
          : ` {value} rows | ${what} | ${formatDuration(elapsed)} elapsed`;
      bar = new cliProgress.SingleBar(
        {
          stream: terminal as NodeJS.WritableStream,
          format,
          barsize: 24,
          hideCursor: null,
          clearOnComplete: true,
          linewrap: false,
          fps: 2,
          noTTYOutput: false,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(planned ?? 0, done);
    },
    row() {
      done++;
      erase();
    },
    end() {
      erase();
    },
  };
}
