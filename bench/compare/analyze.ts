// The verdict of `collbench compare` from each combination's runs: per size the median busbw and its spread, the best
// combination, its gain over the default, the crossovers and #wrong per combination: what nccl-tests users do by eye
// across pasted tables. Where busbw's factor is 0 the verdict is on time (judgedOn).
import { getCollective } from '../collectives/index.js';
import type { ReportDocument, ReportHalf } from '../report/schema.js';
import { EXIT } from '../core/errors.js';
import { bootstrapRatio, holm, mannWhitneyP, medianOf, SIGNIFICANCE_LEVEL, smallestRankP } from '../numbers/stats.js';
import { choicesAt, pluginChoicesAt, type NcclTuningEvent } from './tuning-log.js';
import type { CollectiveName } from '../core/types.js';
import { type ChildOutcome, failureLine } from '../launch/child-job.js';
import type {
  CombinationStatus,
  CompareCase,
  CompareCombination,
  CompareRun,
  JudgedOn,
  RunStatus,
  SizeVerdict,
  Spread,
} from './document.js';
import { replayPoints, replayWorld, type RunPoint } from './replay.js';
import type { Combination } from './settings.js';
import type { ReplayDocument } from '../report/replay-document.js';

/** One run of one combination as it ended: what the child did and the report it left (if any). */
export interface RunResult {
  run: number;
  outcome: ChildOutcome | null; // null: not run (pending or skipped)
  skipped?: boolean;
  doc: ReportDocument | null;
  /** A replay's document (compare … -- collbench replay), in place of `doc`. */
  replay?: ReplayDocument | null;
  docError: string | null; // why the report could not be read
  reportPath: string | null;
}

export function spread(xs: readonly number[]): Spread | null {
  if (xs.length === 0) return null;
  return { median: medianOf(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

const wrongOf = (h: ReportHalf): number | null => h.wrong;

function docWrong(doc: ReportDocument): number {
  return doc.rows.reduce((n, r) => n + (r.outOfPlace.wrong ?? 0) + (r.inPlace.wrong ?? 0), 0);
}

/** How one run ended, with a one-line error for anything but a clean run. */
export function classifyRun(r: RunResult, timeoutSec: number): { status: RunStatus; error: string | null } {
  if (r.skipped) return { status: 'skipped', error: 'not run: an earlier run of this combination failed' };
  const o = r.outcome;
  if (!o) return { status: 'pending', error: null };
  if (o.spawnError || o.timedOut || o.interrupted)
    return { status: o.timedOut ? 'timeout' : 'failed', error: failureLine(o, timeoutSec) };
  const line = failureLine(o, timeoutSec);
  if (o.exitCode === EXIT.OK || o.exitCode === EXIT.WRONG_RESULTS) {
    if (r.replay) {
      const wrong = r.replay.ops.reduce((n, op) => n + (op.wrong ?? 0), 0);
      return wrong > 0 ? { status: 'wrong', error: `${wrong} wrong elements` } : { status: 'ok', error: null };
    }
    if (!r.doc) return { status: 'failed', error: `${line}, but no readable report: ${r.docError ?? 'missing'}` };
    if (r.doc.status !== 'complete') return { status: 'failed', error: `${line}, but its report is incomplete` };
    const wrong = docWrong(r.doc);
    if (wrong > 0) return { status: 'wrong', error: `${wrong} wrong elements` };
    return { status: 'ok', error: null }; // exit 7 without wrong elements: NCCL_TESTS_MIN_BW, not a failure of the setting
  }
  // The program refused its options (exit 2), or NCCL refused the setting (invalid usage/argument).
  if (o.exitCode === EXIT.USAGE || /NCCL_INVALID_(?:USAGE|ARGUMENT)|ncclInvalid(?:Usage|Argument)/.test(o.stderrTail)) {
    return { status: 'rejected', error: line };
  }
  return { status: 'failed', error: line };
}

const FAILING: RunStatus[] = ['timeout', 'rejected', 'failed'];

function combinationStatus(runs: CompareRun[]): { status: CombinationStatus; error: string | null } {
  const bad = runs.find((r) => FAILING.includes(r.status));
  if (bad) return { status: bad.status as CombinationStatus, error: `run ${bad.run}: ${bad.error}` };
  const wrong = runs.find((r) => r.status === 'wrong');
  if (wrong) return { status: 'wrong', error: `run ${wrong.run}: ${wrong.error}` };
  if (runs.some((r) => r.status === 'pending')) return { status: 'pending', error: null };
  return { status: 'ok', error: null };
}

function stderrTail(text: string, lines = 12): string {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-lines)
    .join('\n');
}

export interface Analysis {
  combinations: CompareCombination[];
  cases: CompareCase[];
  winners: string[];
  backend: string | null;
  nranks: number | null;
  nodes: number | null;
  judgedOn: JudgedOn;
  exitCode: number;
}

/** What a compare document carries from the analysis as it is (the command adds the run's own fields and exit code). */
export function analysisFields(a: Analysis): Omit<Analysis, 'exitCode'> {
  const { combinations, cases, winners, backend, nranks, nodes, judgedOn } = a;
  return { backend, nranks, nodes, judgedOn, combinations, cases, winners };
}

/** busbw, unless its factor is 0 at this rank count (then every busbw is 0 by definition): time. */
export function judgedOn(collective: CollectiveName | 'replay', nranks: number | null): JudgedOn {
  if (collective === 'replay')
    return { metric: 'time', why: "a replay: each step's time alone and the whole replayed iteration's" };
  if (nranks === null || getCollective(collective).busBwFactor(nranks) !== 0) return { metric: 'busbw', why: null };
  return {
    metric: 'time',
    why: `busbw is 0 by definition for ${collective} on ${nranks} rank${nranks === 1 ? '' : 's'} (its factor is 0)`,
  };
}

interface Acc {
  bus: number[];
  time: number[];
  wrong: number | null;
  count: number;
  sizeBytes: number;
  step: SizeVerdict['step'];
}

/** A run report's rows as points: one per type/redop/root case and size, the placement's busbw and time, #wrong of
 *  both placements. */
function reportPoints(doc: ReportDocument, key: 'inPlace' | 'outOfPlace'): RunPoint[] {
  return doc.rows.map((row) => ({
    caseKey: `${row.type}\u0000${row.redop}\u0000${row.root}`,
    case: { type: row.type, redop: row.redop, root: row.root },
    key: row.sizeBytes,
    sizeBytes: row.sizeBytes,
    count: row.count,
    bus: row[key].busBwGBps,
    time: row[key].timeUs,
    wrong: [wrongOf(row.outOfPlace), wrongOf(row.inPlace)],
  }));
}

const reportWorld = (doc: ReportDocument): { backend: string; nranks: number; nodes: number | null } => ({
  backend: doc.world.backend,
  nranks: doc.world.nranks,
  nodes: new Set(doc.ranks.map((r) => r.host)).size || null,
});

/**
 * Builds the verdict. `placement` picks the half whose busbw is compared; #wrong counts both halves.
 * A combination is eligible to be "best" only when every run completed with #wrong 0 everywhere: a
 * failed, rejected, timed-out or corrupting setting is shown, never counted.
 */
export function analyze(
  combos: readonly Combination[],
  results: ReadonlyMap<string, readonly RunResult[]>,
  opts: {
    placement: 'out-of-place' | 'in-place';
    timeoutSec: number;
    collective: CollectiveName | 'replay';
    probeEvents?: readonly NcclTuningEvent[] | null;
  },
): Analysis {
  const key = opts.placement === 'in-place' ? 'inPlace' : 'outOfPlace';
  const cases = new Map<string, RunPoint['case'] & { sizes: Map<number, Map<string, Acc>> }>();
  let world: { backend: string; nranks: number; nodes: number | null } | null = null;

  const combinations: CompareCombination[] = combos.map((c) => {
    const runs: CompareRun[] = (results.get(c.id) ?? []).map((r) => {
      const { status, error } = classifyRun(r, opts.timeoutSec);
      const run: CompareRun = {
        run: r.run,
        status,
        error,
        exitCode: r.outcome?.exitCode ?? null,
        signal: r.outcome?.signal ?? null,
        durationSec: r.outcome ? Math.round(r.outcome.durationSec * 1000) / 1000 : null,
        report: r.doc ? r.reportPath : null,
        rows: r.doc?.rows.length ?? 0,
      };
      if (FAILING.includes(status) && r.outcome) run.stderrTail = stderrTail(r.outcome.stderrTail);
      return run;
    });
    let wrong: number | null = null;
    for (const r of results.get(c.id) ?? []) {
      const points = r.doc ? reportPoints(r.doc, key) : r.replay ? replayPoints(r.replay) : null;
      if (!points) continue;
      world ??= r.doc ? reportWorld(r.doc) : replayWorld(r.replay!);
      for (const p of points) {
        let cs = cases.get(p.caseKey);
        if (!cs) {
          cs = { ...p.case, sizes: new Map() };
          cases.set(p.caseKey, cs);
        }
        let bySize = cs.sizes.get(p.key);
        if (!bySize) {
          bySize = new Map();
          cs.sizes.set(p.key, bySize);
        }
        let acc = bySize.get(c.id);
        if (!acc) {
          acc = { bus: [], time: [], wrong: null, count: p.count, sizeBytes: p.sizeBytes, step: p.step ?? null };
          bySize.set(c.id, acc);
        }
        if (p.bus !== null) acc.bus.push(p.bus);
        if (p.time !== null) acc.time.push(p.time);
        for (const w of p.wrong) {
          if (w === null) continue;
          acc.wrong = (acc.wrong ?? 0) + w;
          wrong = (wrong ?? 0) + w;
        }
      }
    }
    const { status, error } = combinationStatus(runs);
    return {
      id: c.id,
      baseline: c.baseline,
      label: c.label,
      settings: c.settings,
      env: c.env,
      unset: c.unset,
      args: c.args,
      status,
      error,
      wrong,
      runs,
    };
  });

  const statusOf = new Map(combinations.map((c) => [c.id, c.status]));
  const baseline = combos.find((c) => c.baseline)?.id ?? null;
  const w0 = world as { backend: string; nranks: number; nodes: number | null } | null;
  const nranks = w0?.nranks ?? null;
  const judged = judgedOn(opts.collective, nranks);
  const onTime = judged.metric === 'time';
  const winners: string[] = [];
  const docsOf = new Map(combos.map((c) => [c.id, (results.get(c.id) ?? []).flatMap((r) => (r.doc ? [r.doc] : []))]));
  const outCases: CompareCase[] = [...cases.values()].map((cs) => {
    const sizes: SizeVerdict[] = [...cs.sizes.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, bySize]) => {
        const { sizeBytes, step } = [...bySize.values()][0]!;
        // The judged samples: busbw (higher is better), or time (lower is better) where busbw's factor is 0.
        const samples = (id: string | null): number[] =>
          id === null ? [] : ((onTime ? bySize.get(id)?.time : bySize.get(id)?.bus) ?? []);
        /** How much better x is than ref, as a ratio (> 1: better): busbw over busbw, or ref's time over x's. */
        const gain = (x: Spread, ref: Spread): number | null =>
          onTime ? (x.median > 0 ? ref.median / x.median : null) : ref.median > 0 ? x.median / ref.median : null;
        const base = spread(samples(baseline));
        const results = combos.map((c) => {
          const acc = bySize.get(c.id);
          const judged = spread(samples(c.id));
          const g = judged && base ? gain(judged, base) : null;
          const chose =
            opts.collective === 'replay'
              ? null
              : pluginChoicesAt(docsOf.get(c.id)!, opts.collective, sizeBytes, nranks ?? 1);
          return {
            ...(chose ? { ncclChose: chose } : {}),
            id: c.id,
            n: (onTime ? acc?.time : acc?.bus)?.length ?? 0,
            busBwGBps: spread(acc?.bus ?? []),
            timeUs: spread(acc?.time ?? []),
            wrong: acc?.wrong ?? null,
            vsDefaultPct: g === null ? null : (g - 1) * 100,
            judged,
          };
        });
        const eligible = results
          .filter((r) => r.judged !== null && statusOf.get(r.id) === 'ok')
          .sort((a, b) => (onTime ? a.judged!.median - b.judged!.median : b.judged!.median - a.judged!.median));
        const best = eligible[0] ?? null,
          second = eligible[1] ?? null;
        const runs = best ? best.n : 0;
        const count = [...bySize.values()][0]?.count ?? 0;
        // The gain's size: a bootstrap interval of the ratio of medians over the interleaved runs (95 %; for times the
        // default's over the best's). Whether there is one at all: the Mann-Whitney test of the runs, corrected across
        // the case's sizes below (Holm).
        const versus = best && baseline && best.id !== baseline ? { a: samples(best.id), b: samples(baseline) } : null;
        const ci = versus
          ? bootstrapRatio(onTime ? versus.b : versus.a, onTime ? versus.a : versus.b, { seed: sizeBytes + 1 })
          : null;
        const g = best && base ? gain(best.judged!, base) : null;
        return {
          sizeBytes,
          ...(step ? { step } : {}),
          count,
          results: results.map(({ judged: _, ...r }) => r),
          best: best?.id ?? null,
          runnerUp: second?.id ?? null,
          gainPct: g === null ? null : (g - 1) * 100,
          gainInterval: ci ? { lo: (ci.lo - 1) * 100, hi: (ci.hi - 1) * 100, level: ci.level } : null,
          gainP: versus && versus.a.length >= 2 && versus.b.length >= 2 ? mannWhitneyP(versus.a, versus.b) : null,
          significance: null,
          clear:
            best && second && runs > 1 && second.n > 1
              ? onTime
                ? best.judged!.max < second.judged!.min
                : best.judged!.min > second.judged!.max
              : null,
          ncclChoice:
            results.find((r) => r.id === baseline)?.ncclChose ??
            (opts.probeEvents && opts.collective !== 'replay'
              ? choicesAt(opts.probeEvents, opts.collective, sizeBytes, nranks ?? 1)
              : null),
        };
      });
    // Holm's correction over the sizes that have a test: "significant" at some size is then not luck across many.
    // Where even runs that do not overlap at all could not pass (the rank test's smallest p above 0.05 over the number
    // of sizes tested), the answer is that there were too few runs, not that there is no difference.
    const tested = sizes.filter((sv) => sv.gainP !== null);
    const passed = holm(tested.map((sv) => sv.gainP!));
    tested.forEach((sv, i) => {
      const runsOf = (id: string | null): number => sv.results.find((r) => r.id === id)?.n ?? 0;
      const reachable = smallestRankP(runsOf(sv.best), runsOf(baseline)) <= SIGNIFICANCE_LEVEL / tested.length;
      sv.significance = passed[i] ? 'significant' : reachable ? 'no significant difference' : 'too few runs';
    });
    const crossovers: CompareCase['crossovers'] = [];
    let prev: string | null = null;
    for (const s of sizes) {
      if (s.best === null) continue;
      if (!winners.includes(s.best)) winners.push(s.best);
      // A replay's steps are not an ordered sweep of sizes: no crossovers there.
      if (prev !== null && s.best !== prev && !s.step)
        crossovers.push({ sizeBytes: s.sizeBytes, from: prev, to: s.best });
      prev = s.best;
    }
    return {
      ...(cs.title ? { title: cs.title } : {}),
      type: cs.type,
      redop: cs.redop,
      root: cs.root,
      sizes,
      crossovers,
    };
  });

  const statuses = combinations.map((c) => c.status);
  const exitCode = statuses.includes('wrong')
    ? EXIT.WRONG_RESULTS
    : statuses.some((s) => s === 'failed' || s === 'rejected')
      ? EXIT.BACKEND
      : statuses.includes('timeout')
        ? EXIT.TIMEOUT
        : EXIT.OK;
  return {
    combinations,
    cases: outCases,
    winners,
    backend: w0?.backend ?? null,
    nranks,
    judgedOn: judged,
    nodes: w0?.nodes ?? null,
    exitCode,
  };
}
