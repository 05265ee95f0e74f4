// The document `collbench replay -J` writes (kind "collbench-replay") and its overlay in `collbench report`: in the
// report layer, below the features, because `collbench report` reads it beside the run documents.

/** The capture formats a replay reads. */
export type TraceFormat = 'nccl-log' | 'chakra-1.0' | 'chakra-1.1' | 'flight-recorder';

export const REPLAY_KIND = 'collbench-replay';
export const REPLAY_SCHEMA_VERSION = 1;

export interface TimeSpread {
  medianUs: number;
  p99Us: number;
  minUs: number;
  maxUs: number;
}

export interface ReplayOp {
  step: number;
  collective: string;
  recorded: string;
  dtype: string;
  recordedDtype: string;
  count: number;
  bytes: number;
  /** The group (ids joined by commas where several groups run the step at once), its size, and the global ranks of
   *  each group running it. */
  group: { id: string; size: number; ranks?: number[][] };
  root: number | null;
  time: TimeSpread;
  /** The step's time alone per timed iteration (µs, the slowest process's), for later comparisons. */
  samplesUs: number[];
  algBwGBps: number;
  busBwGBps: number;
  wrong: number | null;
  where: string;
}

export interface ReplayDocument {
  kind: typeof REPLAY_KIND;
  schemaVersion: number;
  version: string;
  startTime: string;
  argv: string[];
  format: TraceFormat;
  files: string[];
  nranks: number;
  hosts: string[];
  backend: { name: string; version: string };
  settings: { iters: number; warmupIters: number; check: boolean; gaps: boolean };
  notes: string[];
  ops: ReplayOp[];
  iteration: { time: TimeSpread; gapUs: number; samplesUs: number[] };
  shares: { collective: string; steps: number; timeUs: number; percent: number }[];
  costliest: number[];
  firstWrong: string | null;
  exitCode: number;
}

const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : String(v));

export interface OverlaidReplay {
  label: string;
  file: string;
  doc: ReplayDocument;
}

/** The replays, checked to be of the same steps (collective and size at each step), or a ReplayOverlayError. */
export function sameSteps<R extends OverlaidReplay>(runs: readonly R[]): [R, ...R[]] {
  const [first, ...others] = runs;
  if (!first) throw new TypeError('a replay overlay needs a replay');
  for (const r of others) {
    const differs =
      r.doc.ops.length !== first.doc.ops.length
        ? 'its step count'
        : (() => {
            const k = r.doc.ops.findIndex(
              (o, i) => o.collective !== first.doc.ops[i]!.collective || o.bytes !== first.doc.ops[i]!.bytes,
            );
            return k < 0 ? null : `step ${r.doc.ops[k]!.step}`;
          })();
    if (differs)
      throw new ReplayOverlayError(`${r.file} and ${first.file} are replays of different steps (${differs} differs)`);
  }
  return [first, ...others];
}

/** `collbench report` of replays: the runs, then each step's median time per run and its ratio to the first run's,
 *  then the time per replayed iteration; refused when the replays are not of the same steps. */
export function renderReplayOverlay(runs: readonly OverlaidReplay[], title: string): string {
  const [first, ...others] = sameSteps(runs);
  const esc = (s: string): string => s.replace(/\|/g, '\\|');
  const lines = [`# ${esc(title)}`, ''];
  for (const r of runs) {
    lines.push(
      `- ${esc(r.label)} (${esc(r.file)}): ${r.doc.format}, ${r.doc.nranks} ranks, ${r.doc.backend.name} ${esc(r.doc.backend.version)}, ` +
        `${r.doc.settings.iters} iterations, ${r.doc.startTime}`,
    );
  }
  const ratio = (v: number, base: number): string =>
    base > 0 && Number.isFinite(v) ? `${(v / base).toFixed(2)}x` : '';
  const head = [
    'step',
    'collective',
    'size (B)',
    ...runs.map((r) => `${esc(r.label)} median (us)`),
    ...others.map((r) => `${esc(r.label)} / ${esc(first.label)}`),
  ];
  const row = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  lines.push('', '## Per step', '', row(head), row(head.map((_, i) => (i < 2 ? ':---' : '---:'))));
  first.doc.ops.forEach((o, i) => {
    const t = runs.map((r) => r.doc.ops[i]!.time.medianUs);
    lines.push(
      row([
        String(o.step),
        o.collective,
        String(o.bytes),
        ...t.map((v) => f1(v)),
        ...t.slice(1).map((v) => ratio(v, t[0]!)),
      ]),
    );
  });
  const it = runs.map((r) => r.doc.iteration.time.medianUs);
  lines.push(
    '',
    '## Per replayed iteration',
    '',
    row(['', ...runs.map((r) => esc(r.label)), ...others.map((r) => `${esc(r.label)} / ${esc(first.label)}`)]),
    row(['---', ...runs.map(() => '---:'), ...others.map(() => '---:')]),
    row(['median (us)', ...it.map((v) => f1(v)), ...it.slice(1).map((v) => ratio(v, it[0]!))]),
  );
  return `${lines.join('\n')}\n`;
}

/** Replays that cannot be overlaid (different steps). */
export class ReplayOverlayError extends Error {
  override name = 'ReplayOverlayError';
}
