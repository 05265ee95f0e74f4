// `collbench accept --profile FILE [--baseline B.json] [--save-baseline OUT.json] [-J verdict.json] [--junit v.xml]
// [--np N --hosts … --backend …]`: cluster acceptance in one command. The options, then the engine runs every check
// of the profile (accept/runs.ts: child runs with per-iteration samples), the rows are judged
// (bench/accept/rows.ts) and the verdict written; exit 0 pass, 7 a check failed, the run's own code when a run could
// not finish.
import {
  baselineCheck,
  loadBaseline,
  matchBaseline,
  BASELINE_KIND,
  BASELINE_SCHEMA_VERSION,
  type BaselineDocument,
} from './baseline.js';
import { judge, samplesBySize } from './evaluate.js';
import { loadProfile, type Profile } from './profile.js';
import { checkRows, type CheckRuns } from './rows.js';
import { bonferroniLevel } from '../numbers/stats.js';
import {
  ACCEPT_KIND,
  ACCEPT_SCHEMA_VERSION,
  renderVerdictJson,
  renderVerdictJunit,
  renderVerdictText,
  type AcceptDocument,
  type Verdict,
} from './verdict.js';
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import { asText } from '../config/resolve.js';
import type { IO } from '../core/io.js';
import { EXIT, UsageError } from '../core/errors.js';
import { flag, helpFlag, inGroup, PASS_ON_FLAGS } from '../config/flags.js';
import { AcceptChecks } from './runs.js';
import { withChildRuns } from '../engine/child-runs.js';
import { crowdingRefusal } from '../launch/mpirun.js';
import { isoLocal } from '../report/exporters/json.js';
import { checkOutputPaths, writeDocument, writeOutputFile } from '../report/outputs.js';

/**
 * Default --tolerance: a size regresses only when its median time is more than 1 + this times the baseline's (and
 * significantly so). Measured here (docs/accept.md): 6 unchanged runs of profiles/cpu-smoke.yaml on the shared
 * 2-core machine, every run against every other (30 pairs x 17 sizes), twice: median-time ratios p95 2.22 and 1.23,
 * max 2.87 and 2.31, a third of them "significant" (load comes in bursts longer than a run, which no within-run
 * interval sees). 3 (a 4x slowdown) stays clear of the worst seen; quieter machines should pass a smaller one.
 */
export const DEFAULT_TOLERANCE = 3;
/** Family-wise error rate of the baseline comparisons of one verdict (Bonferroni over every size compared). */
export const ALPHA = 0.05;

/** The run flags accept passes on to every run (marked passOn in the flag table): how ranks are launched. */
const LAUNCH_FLAGS = PASS_ON_FLAGS;
const LAUNCH_GROUP = 'Launch options, passed to every run (as for runs)';
const OPTIONS = 'Options';
const ACCEPT_FLAGS = [
  flag.text(undefined, 'profile', 'profile', OPTIONS, 'the acceptance profile (required)', { value: '<file>' }),
  flag.text(
    undefined,
    'baseline',
    'baseline',
    OPTIONS,
    'compare with a baseline saved by --save-baseline (same profile, rank ' + 'count and backend)',
    { value: '<file>' },
  ),
  flag.output(
    undefined,
    'save-baseline',
    'saveBaseline',
    OPTIONS,
    "save this run's per-iteration samples as a baseline",
  ),
  flag.number(
    'tolerance',
    'tolerance',
    DEFAULT_TOLERANCE,
    'tolerance',
    0,
    100,
    OPTIONS,
    'a slowdown within 1 + X times the ' + 'baseline is never a regression (0.5 = 50% slower)',
    { value: '<X>' },
  ),
  flag.output(
    'J',
    'json',
    'json',
    OPTIONS,
    'the verdict as JSON (kind "collbench-accept", schema/collbench-accept.v1.schema.json); ' + '- = stdout',
  ),
  flag.output(
    undefined,
    'junit',
    'junit',
    OPTIONS,
    'the verdict as JUnit XML, one test case per check row; - = stdout',
  ),
  flag.timeout(600, OPTIONS, 'how long one run may take before it is killed'),
  flag.force(OPTIONS),
  flag.quiet(OPTIONS),
  helpFlag(OPTIONS),
] as const;

const ACCEPT_TABLE = [...ACCEPT_FLAGS, ...inGroup(LAUNCH_FLAGS, LAUNCH_GROUP)] as const;

export const ACCEPT_OPTIONS: CommandOptions<typeof ACCEPT_TABLE> = {
  command: 'accept',
  usage: 'collbench accept --profile FILE [options] [launch options]',
  about: `  Runs every check of an acceptance profile (YAML or JSON, schema/collbench-profile.v1.schema.json): one benchmark
  run per attempt of each check (collective and size range, -I 1), judges its thresholds (minimum busbw, maximum
  time, maximum cv% of the per-iteration times, zero #wrong, "k of n attempts must pass") and, with --baseline,
  compares every size with a saved baseline (bootstrap interval of the ratio of median times; a regression must be
  significant and beyond --tolerance). Prints a verdict table naming the late rank and host where one was found.`,
  groups: [OPTIONS, LAUNCH_GROUP],
  flags: ACCEPT_TABLE,
  footer: `Exit status: 0 every check passed, 7 a check failed, 2 bad input (profile, baseline, options), and as for runs
when a run could not finish: 3 backend error, 4 timeout, 5 environment (no backend, mpirun missing), 1 internal.`,
};

interface AcceptOptions {
  profile: string;
  baseline: string | null;
  saveBaseline: string | null;
  json: string | null;
  junit: string | null;
  tolerance: number;
  timeoutSec: number;
  quiet: boolean;
  force: boolean;
  launch: string[];
  np: number | null;
}

export function parseAcceptArgs(args: string[]): AcceptOptions | 'help' {
  const { stop, positionals, values, ordered } = parseOptions(args, ACCEPT_OPTIONS);
  if (stop === 'help') return 'help';
  if (positionals.length > 0)
    throw new UsageError(`accept: unexpected argument '${positionals[0]}' (see collbench accept --help)`);
  if (values.profile === null)
    throw UsageError.forFlag('accept: --profile', 'missing: name the acceptance profile (profiles/cpu-smoke.yaml, …)');
  const crowded = crowdingRefusal(values); // once here, not once per run
  if (crowded !== null) throw new UsageError(crowded, '--np');
  const launch = ordered.flatMap((t) => {
    const f = LAUNCH_FLAGS.find((x) => x.field === t.field);
    return !f
      ? []
      : f.kind === 'switch'
        ? t.value === true
          ? [`--${f.long}`]
          : []
        : [`--${f.long}=${asText(t.value)}`];
  });
  return {
    profile: values.profile,
    baseline: values.baseline,
    saveBaseline: values.saveBaseline,
    json: values.json,
    junit: values.junit,
    tolerance: values.tolerance,
    timeoutSec: values.timeoutSec,
    quiet: values.quiet,
    force: values.force,
    launch,
    np: values.np,
  };
}

export async function acceptCommand(argv: string[], scriptPath: string, io: IO): Promise<number> {
  const opts = parseAcceptArgs(argv);
  if (opts === 'help') {
    io.out(commandHelp(ACCEPT_OPTIONS));
    return EXIT.OK;
  }
  const outputs = [
    { flag: '-J', path: opts.json, render: renderVerdictJson },
    { flag: '--junit', path: opts.junit, render: renderVerdictJunit },
  ].filter((o): o is { flag: string; path: string; render: (d: AcceptDocument) => string } => o.path !== null);
  checkOutputPaths([...outputs, ...(opts.saveBaseline ? [{ flag: '--save-baseline', path: opts.saveBaseline }] : [])], {
    force: opts.force,
  });
  if (opts.saveBaseline === '-') throw UsageError.forFlag('--save-baseline', 'needs a file name, not -');
  const profile: Profile = loadProfile(opts.profile);
  const baseline = opts.baseline !== null ? loadBaseline(opts.baseline) : null;
  const matched = baseline ? matchBaseline(baseline, profile) : null;
  if (baseline && opts.np !== null && opts.np !== baseline.doc.world.nranks) {
    throw UsageError.forFlag(
      '--baseline',
      `${baseline.path} was taken on ${baseline.doc.world.nranks} ranks; --np asks for ${opts.np}`,
    );
  }
  const startTime = new Date();
  return withChildRuns(scriptPath, { prefix: 'collbench-accept-' }, async (children) => {
    const session = new AcceptChecks(opts, children, io, baseline);
    const all: CheckRuns[] = [];
    for (const [i, c] of profile.checks.entries()) {
      if (session.interrupted) break;
      // after a run that could not finish (no backend, a crash, a timeout) the verdict is "error" whatever follows:
      // the remaining checks are listed, not run
      const failed = all.find((r) => r.error);
      all.push(
        failed
          ? {
              check: c,
              docs: [],
              results: judge(c, []),
              error: { line: `not run: check '${failed.check.id}' could not run`, exitCode: failed.error!.exitCode },
            }
          : await session.runCheck(c, `[${i + 1}/${profile.checks.length}]`),
      );
    }
    const comparisons = matched ? profile.checks.filter((c) => c.baseline).reduce((n, c) => n + c.sizes.length, 0) : 0;
    const level = bonferroniLevel(ALPHA, comparisons);
    const rows = all.flatMap((r) =>
      checkRows(
        r,
        matched?.has(r.check.id)
          ? { check: matched.get(r.check.id)!, level, tolerance: r.check.baselineTolerance ?? opts.tolerance }
          : null,
      ),
    );
    const firstError = all.find((r) => r.error)?.error ?? null;
    const errors: string[] = [];
    if (session.interrupted) errors.push('interrupted');
    const verdict: Verdict =
      session.interrupted || firstError ? 'error' : rows.every((r) => r.status === 'pass') ? 'pass' : 'fail';
    const exitCode = session.interrupted
      ? (children.signalExit() ?? 130)
      : firstError
        ? firstError.exitCode
        : verdict === 'pass'
          ? EXIT.OK
          : EXIT.WRONG_RESULTS;
    const doc: AcceptDocument = {
      kind: ACCEPT_KIND,
      schemaVersion: ACCEPT_SCHEMA_VERSION,
      verdict,
      exitCode,
      startTime: isoLocal(startTime),
      endTime: isoLocal(new Date()),
      argv: ['collbench', 'accept', ...argv],
      profile: { name: profile.name, path: profile.path },
      world: session.world,
      baseline: baseline
        ? {
            path: baseline.path,
            createdAt: baseline.doc.createdAt,
            host: baseline.doc.host,
            tolerance: opts.tolerance,
            alpha: ALPHA,
            comparisons,
          }
        : null,
      savedBaseline: null,
      checks: rows,
      errors,
    };
    if (opts.saveBaseline !== null) {
      if (verdict === 'error' || !session.world) {
        io.err(`accept: --save-baseline: not written: the runs did not all finish`);
      } else {
        const b: BaselineDocument = {
          kind: BASELINE_KIND,
          schemaVersion: BASELINE_SCHEMA_VERSION,
          createdAt: isoLocal(startTime),
          profile: { name: profile.name, path: profile.path },
          world: { nranks: session.world.nranks, backend: session.world.backend },
          host: session.world.host,
          checks: all
            .filter((r) => r.check.baseline)
            .map((r) => baselineCheck(r.check, r.docs.length, samplesBySize(r.check, r.docs))),
        };
        writeOutputFile('--save-baseline', opts.saveBaseline, `${JSON.stringify(b)}\n`);
        doc.savedBaseline = opts.saveBaseline;
      }
    }
    await writeDocument(doc, outputs, io, { lines: renderVerdictText(doc), besideStdout: 'stderr' });
    return exitCode;
  });
}
