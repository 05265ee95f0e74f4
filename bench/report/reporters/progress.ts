// Live progress on stderr (docs/architecture.md, "report/"): rows done / planned, the collective, datatype and size
// being measured, elapsed time and ETA, drawn with cli-progress. Only when stderr is a terminal and not
// --quiet: never in pipes or CI logs. The bar is erased before each table row prints and redrawn after.
import cliProgress from 'cli-progress';
import { formatSize } from '../../config/sizes.js';
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

/** True when progress may be drawn: stderr is a terminal and --quiet was not given. */
export function progressWanted(stream: ProgressStream, quiet: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return !quiet && stream.isTTY === true && env.CI === undefined && env.TERM !== 'dumb';
}

export function progressReporter(stream: ProgressStream, now: () => number = Date.now): Reporter {
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
      const eta = planned !== null && done > 0 ? formatDuration((elapsed / done) * (planned - done)) : '?';
      const what = `${collective} ${next.sweep.dtype}${next.sweep.root >= 0 ? ` root ${next.sweep.root}` : ''} ${formatSize(next.sizeBytes)}B`;
      const format = planned !== null
        ? ` {bar} {value}/{total} rows | ${what} | ${formatDuration(elapsed)} elapsed, ETA ${eta}`
        : ` {value} rows | ${what} | ${formatDuration(elapsed)} elapsed`;
      bar = new cliProgress.SingleBar({
        stream: stream as NodeJS.WritableStream, format, barsize: 24, hideCursor: null, clearOnComplete: true,
        linewrap: false, fps: 2, noTTYOutput: false,
      }, cliProgress.Presets.shades_classic);
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
