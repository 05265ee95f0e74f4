// `collbench compare --env NAME=v1,v2 [--mca …] [--gloo-algo …] [--repeats R] -- <program> <args…>`: the program run
// once per combination of settings (their product plus the default), interleaved run by run, each a child with its
// own -J report (runs.ts), and the verdict per size: instead of rerunning all_reduce_perf under NCCL_ALGO=… by hand.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { backendRecord, selectBackend } from '../backends/registry.js';
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import type { IO } from '../core/io.js';
import { BackendUnavailableError, EXIT, UsageError } from '../core/errors.js';
import { flag, helpFlag } from '../config/flags.js';
import type { BackendName } from '../core/types.js';
import { isoLocal } from '../report/exporters/json.js';
import { checkOutputPaths, writeDocument, writeOutputFile } from '../report/outputs.js';
import { analysisFields, analyze } from './analyze.js';
import { COMPARE_KIND, COMPARE_SCHEMA_VERSION, type CompareDocument } from './document.js';
import type { ProgramSpec } from './program-spec.js';
import { checkCombination, parseProgram } from './program.js';
import {
  renderCompareCsv,
  renderCompareHtml,
  renderCompareJson,
  renderCompareJunit,
  renderCompareMarkdown,
  renderText,
} from './render.js';
import { withChildRuns, type ChildRuns } from '../engine/child-runs.js';
import { checkReplayProgram } from './replay.js';
import { CompareRuns } from './runs.js';
import { combinations, parseAxis, parseGlooAxis, type Axis, type Combination } from './settings.js';
import { renderTunerCsv, TUNER_COLLECTIVE } from './tuner-csv.js';

const PLACEMENTS = ['out-of-place', 'in-place'] as const;

const SETTINGS = 'Settings (at least one; values separated by commas, \\, for a comma inside a value)';
const OPTIONS = 'Options';
const COMPARE_FLAGS = [
  flag.repeated(
    'env',
    'env',
    SETTINGS,
    'an environment variable (NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple,LL,LL128, …)',
    { value: '<NAME=v1,v2>' },
  ),
  flag.repeated(
    'mca',
    'mca',
    SETTINGS,
    'an Open MPI MCA parameter, passed as OMPI_MCA_NAME; coll_tuned_* parameters also get ' +
      'coll_tuned_use_dynamic_rules=1 (e.g. --mca coll_tuned_allreduce_algorithm=0,1,2,3,4,5,6)',
    { value: '<NAME=v1,v2>' },
  ),
  flag.repeated(
    'gloo-algo',
    'glooAlgo',
    SETTINGS,
    "the gloo backend's all_reduce algorithm (--gloo-algo of the program; needs " + '--backend gloo)',
    { value: '<a,b>' },
  ),
  flag.int(
    undefined,
    'repeats',
    'repeats',
    5,
    'repeat count',
    1,
    1000,
    OPTIONS,
    'runs per combination, interleaved run by run (odd ' +
      'runs in order, even runs reversed); the gain over the default gets a bootstrap interval and a rank-test verdict',
    { value: '<R>' },
  ),
  flag.int(undefined, 'runs', 'runs', 5, 'repeat count', 1, 1000, OPTIONS, 'the older spelling of --repeats', {
    value: '<R>',
  }),
  flag.timeout(600, OPTIONS, 'how long one run may take before it is killed and reported'),
  flag.choice(
    'placement',
    'placement',
    PLACEMENTS,
    'out-of-place',
    'placement',
    OPTIONS,
    'the half whose busbw is compared',
    { value: '<out-of-place|in-place>' },
  ),
  flag.output(
    'J',
    'json',
    'json',
    OPTIONS,
    'the comparison as JSON (kind "collbench-compare"); - = stdout, for every output',
  ),
  flag.output(undefined, 'csv', 'csv', OPTIONS, 'one line per size × combination'),
  flag.output(undefined, 'md', 'md', OPTIONS, 'Markdown tables'),
  flag.output(
    undefined,
    'html',
    'html',
    OPTIONS,
    'self-contained HTML page: the verdict tables and busbw/time charts, one line per ' + 'combination',
  ),
  flag.output(
    undefined,
    'junit',
    'junit',
    OPTIONS,
    'JUnit XML, one test case per combination (failed, rejected, timed out or wrong ' + 'results fail)',
  ),
  flag.output(
    undefined,
    'tuner-csv',
    'tunerCsv',
    OPTIONS,
    "the winners in the format of NCCL's example tuner plugin " + '(NCCL_TUNER_CONFIG_FILE)',
  ),
  flag.text(
    undefined,
    'reports-dir',
    'reportsDir',
    OPTIONS,
    "keep every run's own JSON report (and the NCCL log) in DIR",
    { value: '<dir>', defaultText: 'a temporary folder, removed' },
  ),
  flag.quiet(OPTIONS),
  flag.force(OPTIONS),
  helpFlag(OPTIONS),
] as const;

export const COMPARE_OPTIONS: CommandOptions<typeof COMPARE_FLAGS> = {
  command: 'compare',
  usage: 'collbench compare SETTINGS… [options] -- <program> <args…>',
  about: `  Runs <program> (all_reduce_perf … or collbench <collective>, with nccl-tests' flags) once per combination of
  the settings (their cartesian product) plus the default (no setting) as baseline, each in its own process, and
  prints per size the median busbw of every combination [min-max over runs], the best one, its gain over the
  default, the sizes where the best changes (crossovers) and #wrong per combination.`,
  groups: [SETTINGS, OPTIONS],
  flags: COMPARE_FLAGS,
  footer: `On the NCCL backend an extra default run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING records which algorithm and
protocol NCCL chose per size (the "NCCL chose" column); its timings are not used.
Exit status: 0 all clean, 7 a combination gave wrong results, 3 a combination failed or was rejected, 4 a run
timed out, 2 bad input (nothing was run).`,
};

interface CompareOptions {
  axes: Axis[];
  runs: number;
  timeoutSec: number;
  placement: (typeof PLACEMENTS)[number];
  outputs: { flag: string; path: string; render: (d: CompareDocument) => string | Promise<string> }[];
  reportsDir: string | null;
  quiet: boolean;
  force: boolean;
}

/** Compare's own flags (before --) → options; the axes keep the order they were given in. */
export function parseCompareArgs(args: string[]): CompareOptions | 'help' {
  const { stop, positionals, values, given, ordered } = parseOptions(args, COMPARE_OPTIONS);
  if (stop === 'help') return 'help';
  if (positionals.length > 0) {
    throw new UsageError(
      `compare: unexpected argument '${positionals[0]}' (the program goes after --; see collbench compare --help)`,
    );
  }
  // --repeats R (or its older spelling --runs R): runs per combination; 5 by default, the fewest with which a rank test
  // can call a gain significant after a correction over a few sizes (3 against 3 never can).
  if (given.has('repeats') && given.has('runs'))
    throw UsageError.forFlag('compare: --repeats', 'give --repeats or --runs (the same setting), not both');
  const axes: Axis[] = [];
  for (const t of ordered) {
    if (t.field === 'env' || t.field === 'mca') axes.push(parseAxis(t.field, t.value as string));
    if (t.field === 'glooAlgo') axes.push(parseGlooAxis(t.value as string));
  }
  const outputs: CompareOptions['outputs'] = [];
  const add = (flag: string, path: string | null, render: CompareOptions['outputs'][number]['render']): void => {
    if (path !== null) outputs.push({ flag, path, render });
  };
  add('--json', values.json, renderCompareJson);
  add('--csv', values.csv, renderCompareCsv);
  add('--md', values.md, renderCompareMarkdown);
  add('--html', values.html, renderCompareHtml);
  add('--junit', values.junit, renderCompareJunit);
  add('--tuner-csv', values.tunerCsv, renderTunerCsv);
  return {
    axes,
    placement: values.placement,
    outputs,
    quiet: values.quiet,
    force: values.force,
    reportsDir: values.reportsDir,
    runs: given.has('runs') ? values.runs : values.repeats,
    timeoutSec: values.timeoutSec,
  };
}

/** The backend the children will use: the program's --backend, else the one the loader picks here. */
export function predictBackend(p: ProgramSpec): BackendName | null {
  const given = p.options?.backend ?? p.backend ?? null;
  if (given !== null) return given;
  try {
    return selectBackend(null, { ncclLib: p.options?.ncclLib ?? null }).record.name;
  } catch (e) {
    if (e instanceof BackendUnavailableError) return null;
    throw e;
  }
}

/** Everything decided before the first child starts; bad input throws here, with nothing run. */
interface ComparePlan {
  argv: string[];
  opts: CompareOptions;
  combos: Combination[];
  program: ProgramSpec;
  backend: BackendName | null;
}

function planCompare(argv: string[]): ComparePlan | 'help' {
  const dash = argv.indexOf('--');
  const opts = parseCompareArgs(dash < 0 ? argv : argv.slice(0, dash));
  if (opts === 'help') return 'help';
  if (dash < 0)
    throw new UsageError(
      'compare: no program; put it after --, e.g. collbench compare --env NCCL_ALGO=Ring,Tree -- all_reduce_perf -b 8 -e 128M',
    );
  const combos = combinations(opts.axes);
  const program = parseProgram(argv.slice(dash + 1));
  for (const c of combos) checkCombination(program, c);
  checkOutputPaths(opts.outputs, { force: opts.force });
  const backend = predictBackend(program);
  if (opts.outputs.some((o) => o.flag === '--tuner-csv')) {
    if (program.collective === 'replay' || !TUNER_COLLECTIVE[program.collective]) {
      throw UsageError.forFlag(
        '--tuner-csv',
        `NCCL's example tuner plugin does not tune ${program.collective}; it takes ${Object.keys(TUNER_COLLECTIVE).join(', ')}`,
      );
    }
    const ncclAxis = opts.axes.some((a) => a.kind === 'env' && /^NCCL_/.test(a.name));
    if (!ncclAxis && (backend === null || !backendRecord(backend).tuningLog)) {
      throw UsageError.forFlag(
        '--tuner-csv',
        'writes NCCL algorithm/protocol choices; compare NCCL settings (--env NCCL_ALGO=…, NCCL_PROTO=…) on the nccl backend',
      );
    }
  }
  // NCCL_* variables change nothing on another backend: every combination would run alike
  const ncclVariable = opts.axes.find((a) => a.kind === 'env' && /^NCCL_/.test(a.name));
  if (ncclVariable && backend !== 'nccl' && (program.options?.backend ?? program.backend ?? null) === null) {
    // the backend was left to choose and NCCL is not the one here (no GPU, no libnccl): every run would be doomed
    throw new BackendUnavailableError(
      `compare: --env ${ncclVariable.name} compares NCCL settings, but the nccl backend cannot ` +
        `run here${backend !== null ? ` (the best one here is ${backend})` : ''}; collbench info says why; nothing was run`,
    );
  }
  if (ncclVariable && backend !== null && backend !== 'nccl') {
    throw UsageError.forFlag(
      `--env ${ncclVariable.name}`,
      `has no effect on the ${backend} backend (only NCCL reads NCCL_* ` +
        `variables), so every combination would run alike; compare on --backend nccl, or compare ${backend === 'gloo' ? '--gloo-algo' : '--mca'} settings`,
    );
  }
  return { argv, opts, combos, program, backend };
}

/** --reports-dir, made and kept: every run's report goes there (without it, to a temporary folder removed at the end). */
function keptReportsDirectory(opts: CompareOptions): string | null {
  if (opts.reportsDir === null) return null;
  try {
    mkdirSync(opts.reportsDir, { recursive: true });
    return resolve(opts.reportsDir);
  } catch (e) {
    throw UsageError.forFlag('--reports-dir', `cannot create ${opts.reportsDir}: ${(e as Error).message}`);
  }
}

/** The comparison's document as it stands: every run so far analysed, the verdict per size. */
function buildDoc(
  plan: ComparePlan,
  runs: CompareRuns,
  children: ChildRuns,
  startTime: Date,
  status: CompareDocument['status'],
): CompareDocument {
  const { opts, combos, program, argv } = plan;
  const a = analyze(combos, runs.results, {
    placement: opts.placement,
    timeoutSec: opts.timeoutSec,
    collective: program.collective,
    probeEvents: runs.probeEvents,
  });
  return {
    kind: COMPARE_KIND,
    schemaVersion: COMPARE_SCHEMA_VERSION,
    status,
    startTime: isoLocal(startTime),
    endTime: status === 'incomplete' ? null : isoLocal(new Date()),
    argv: ['collbench', 'compare', ...argv],
    program: {
      words: program.words,
      collective: program.collective,
      name: program.collective === 'replay' ? 'collbench replay' : `${program.collective}_perf`,
    },
    axes: opts.axes.map((x) => ({ kind: x.kind, name: x.name, values: [...x.values] })),
    runsPerCombination: opts.runs,
    placement: opts.placement,
    timeoutSec: opts.timeoutSec,
    ...analysisFields(a),
    probe: runs.probe,
    // the NCCL probe is a checked default run too: wrong results there are wrong results
    exitCode: runs.interrupted
      ? (children.signalExit() ?? 130)
      : a.exitCode === EXIT.OK && runs.probe?.status === 'wrong'
        ? EXIT.WRONG_RESULTS
        : a.exitCode,
  };
}

/** The output files as the runs come (not stdout, which gets the final document once, nor the HTML page: charts cost
 *  a moment; the page is written at the end). */
async function writeFiles(plan: ComparePlan, doc: CompareDocument): Promise<void> {
  for (const o of plan.opts.outputs) {
    if (o.path === '-' || o.flag === '--html') continue;
    writeOutputFile(o.flag, o.path, await o.render(doc));
  }
}

export async function compareCommand(argv: string[], scriptPath: string, io: IO): Promise<number> {
  const plan = planCompare(argv);
  if (plan === 'help') {
    io.out(commandHelp(COMPARE_OPTIONS));
    return EXIT.OK;
  }
  const kept = keptReportsDirectory(plan.opts);
  const startTime = new Date();
  return withChildRuns(
    scriptPath,
    kept !== null ? { dir: kept } : { prefix: 'collbench-compare-' },
    async (children) => {
      const session = new CompareRuns(
        {
          combos: plan.combos,
          program: plan.program,
          runs: plan.opts.runs,
          timeoutSec: plan.opts.timeoutSec,
          quiet: plan.opts.quiet,
        },
        children,
        kept !== null,
        io,
      );
      // A replay's words and trace, checked by the replay itself before any timed run (exit 2 on a refusal).
      if (plan.program.collective === 'replay') await checkReplayProgram(plan.program, plan.combos, children);
      // NCCL's choice per size: with --links every setting's runs carry it (the plugin's collective events); the
      // NCCL_DEBUG=TUNING run is then only the fallback, after the runs, when none of them had the plugin's rows.
      const tuningLog = plan.backend !== null && backendRecord(plan.backend).tuningLog;
      const links = plan.program.options?.links ?? false;
      if (tuningLog && !links && !session.interrupted) await session.runNcclProbe();
      // the files are rewritten after every run, so an interrupted comparison leaves what it measured
      await session.runCombinations(() => writeFiles(plan, buildDoc(plan, session, children, startTime, 'incomplete')));
      if (tuningLog && links && !session.pluginGaveChoices() && !session.interrupted) {
        session.progress(
          '--links gave no NCCL collective events (plugin not loaded?): the NCCL_DEBUG=TUNING run instead',
        );
        await session.runNcclProbe();
      }
      const doc = buildDoc(plan, session, children, startTime, session.interrupted ? 'interrupted' : 'complete');
      await writeDocument(doc, plan.opts.outputs, io, { lines: renderText(doc), besideStdout: 'stderr' });
      return doc.exitCode;
    },
  );
}
