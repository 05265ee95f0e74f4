// `collbench compare SETTINGS… -- collbench replay TRACE… [options]`: a replay per setting, its words checked by a
// --dry-run replay child before any timed run, each run's replay document turned into the points compare judges (every
// step's time alone and the whole iteration's, lower is better).
import { UsageError } from '../core/errors.js';
import { BACKEND_NAMES as BACKENDS, type BackendName } from '../core/types.js';
import type { ChildRuns } from '../engine/child-runs.js';
import type { ReplayDocument } from '../report/replay-document.js';
import type { CompareCase, SizeVerdict } from './document.js';
import type { ProgramSpec } from './program-spec.js';
import type { Combination } from './settings.js';

/** `collbench replay …` after compare's --. */
export const isReplayProgram = (words: readonly string[]): boolean =>
  /(^|\/)collbench(\.js)?$/.test(words[0] ?? '') && words[1] === 'replay';

/** Replay flags compare sets itself or that would leave nothing to compare. */
const REFUSED: [RegExp, string][] = [
  [/^(-J|--json)(=|$)|^-J./, "compare writes each replay's -J itself; give compare's own --json/--csv/--md/--html"],
  [/^--csv(=|$)/, "compare writes each replay's report itself; give compare's own --csv"],
  [/^--dry-run$/, 'compare times each replay; --dry-run would time nothing'],
  [/^(-h|--help)$/, 'see collbench replay --help'],
];

/** The replay's words as a program compare runs; its backend read from --backend where given. */
export function parseReplayProgram(words: readonly string[]): ProgramSpec {
  const rest = words.slice(1);
  for (const w of rest.slice(1))
    for (const [re, why] of REFUSED) if (re.test(w)) throw UsageError.forFlag(w.replace(/=.*$/, ''), why);
  const at = rest.findIndex((w) => w === '--backend' || w.startsWith('--backend='));
  const named = at < 0 ? null : rest[at]!.includes('=') ? rest[at]!.slice('--backend='.length) : (rest[at + 1] ?? '');
  if (named !== null && !(BACKENDS as readonly string[]).includes(named))
    throw UsageError.forFlag('--backend', `unknown backend '${named}' (${BACKENDS.join(', ')})`);
  return { words: [...words], collective: 'replay', args: rest, options: null, backend: named as BackendName | null };
}

/** Every distinct argument list compare will run, read and checked by the replay itself (--dry-run: flags, files,
 *  consistency; nothing launched). A refusal is compare's, one line, exit 2, before any timed run. */
export async function checkReplayProgram(p: ProgramSpec, combos: readonly Combination[], children: ChildRuns) {
  const seen = new Set<string>();
  for (const c of combos) {
    const words = [...p.args, ...c.args, '--dry-run'];
    if (seen.has(words.join('\u0000'))) continue;
    seen.add(words.join('\u0000'));
    const o = await children.start(process.execPath, [...process.execArgv, children.scriptPath, ...words], {
      timeoutSec: 120,
    });
    if (o.exitCode === 0) continue;
    const line =
      o.spawnError ??
      o.stderrTail
        .split('\n')
        .filter((l) => l.trim())
        .pop() ??
      `exit ${o.exitCode ?? o.signal}`;
    throw new UsageError(
      `compare: ${line.replace(/^collbench:\s*/, '')}${c.args.length ? ` (in ${c.id}: ${c.label})` : ''}`,
    );
  }
}

/** One judged quantity of one run: its case, its place there (a size; a replay's step), busbw, time, #wrong. */
export interface RunPoint {
  caseKey: string;
  case: Pick<CompareCase, 'type' | 'redop' | 'root' | 'title'>;
  key: number;
  sizeBytes: number;
  count: number;
  step?: NonNullable<SizeVerdict['step']>;
  bus: number | null;
  time: number | null;
  wrong: (number | null)[];
}

const STEPS = { type: 'replay', redop: '', root: -1, title: 'replayed steps, each alone' };
const ITERATION = { type: 'replay', redop: '', root: -1, title: 'whole replayed iteration' };

/** A replay document as points: each step (its median time alone, busbw, #wrong) and the whole iteration. */
export function replayPoints(doc: ReplayDocument): RunPoint[] {
  const steps = doc.ops.map((o): RunPoint => ({
    caseKey: 'replay steps',
    case: STEPS,
    key: o.step,
    sizeBytes: o.bytes,
    count: o.count,
    step: { index: o.step, collective: o.collective, recorded: o.recorded },
    bus: o.busBwGBps,
    time: o.time.medianUs,
    wrong: [o.wrong],
  }));
  const bytes = doc.ops.reduce((a, o) => a + o.bytes, 0);
  const wrong = doc.ops.some((o) => o.wrong !== null) ? doc.ops.reduce((a, o) => a + (o.wrong ?? 0), 0) : null;
  return [
    ...steps,
    {
      caseKey: 'replay iteration',
      case: ITERATION,
      key: -1,
      sizeBytes: bytes,
      count: doc.ops.length,
      step: { index: -1, collective: 'iteration', recorded: `${doc.ops.length} steps back to back` },
      bus: null,
      time: doc.iteration.time.medianUs,
      wrong: [wrong],
    },
  ];
}

/** The world a replay ran on, as compare's header shows it. */
export function replayWorld(doc: ReplayDocument): { backend: string; nranks: number; nodes: number | null } {
  return {
    backend: `${doc.backend.name} (${doc.backend.version})`,
    nranks: doc.nranks,
    nodes: doc.hosts.length || null,
  };
}
