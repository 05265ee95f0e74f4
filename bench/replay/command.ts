// `collbench replay TRACE…`: replays what a real job issued (NCCL call logs, execution traces, flight-recorder dumps)
// on this cluster's backends. The trace is read and checked once before any rank starts; the job is launched with its
// rank count, every rank times the same steps (runs.ts) and rank 0 prints the table and writes -J / --csv.
import { commandHelp, parseOptions, type CommandOptions } from '../config/option-parser.js';
import { splitRunFlags } from '../config/run-options.js';
import { EXIT, UsageError } from '../core/errors.js';
import { FLAGS, flag, helpFlag, inGroup, runFlag, type ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { launchRanks } from '../engine/launch-ranks.js';
import { preflight } from '../engine/preflight.js';
import { relayVerdict } from '../launch/verdict-relay.js';
import { launcherRank } from '../launch/launcher.js';
import { isoLocal } from '../report/exporters/json.js';
import { checkOutputPaths, documentJson, outputFiles, writeDocument, type DocumentOutput } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { VERSION } from '../version.js';
import { TraceError, type ReplayTrace } from './calls.js';
import type { ReplayDocument } from '../report/replay-document.js';
import { buildDocument, planLines, renderCsv, renderText } from './document.js';
import { readTrace } from './read.js';
import { timeReplay } from './runs.js';
import { planReplay, type ReplayPlan } from './steps.js';

type RunFlag = Extract<
  (typeof FLAGS)[number],
  {
    field:
      'np' | 'hosts' | 'oversubscribe' | 'backend' | 'glooAlgo' | 'glooStore' | 'glooIface' | 'ncclLib' | 'timeoutSec';
  }
>;
const RUN_GROUP = 'Run options (as for runs)';
const RUN_FIELDS_TAKEN = [
  'np',
  'hosts',
  'oversubscribe',
  'backend',
  'glooAlgo',
  'glooStore',
  'glooIface',
  'ncclLib',
  'timeoutSec',
];
const RUN_FLAGS = FLAGS.filter((f): f is RunFlag => RUN_FIELDS_TAKEN.includes(f.field));
const CHECKS = 'Checks',
  MEASURE = 'Measurement',
  OUTPUT = 'Output';
const REPLAY_FLAGS = [
  flag.toggle(
    'skip-unknown',
    'skipUnknown',
    CHECKS,
    'replay the rest of a trace that holds operations collbench does not know (listed)',
  ),
  flag.toggle(
    'shrink',
    'shrink',
    CHECKS,
    "replay a trace of more ranks than the job on the job's ranks: ranks 0..np-1's sequences, " +
      "world groups cut to np (as PARAM's --auto-shrink); refused without it",
  ),
  {
    ...runFlag('iters'),
    default: 20,
    group: MEASURE,
    help: 'timed iterations of the whole sequence (and of each step alone)',
  },
  { ...runFlag('warmupIters'), default: 5, group: MEASURE, help: 'untimed iterations before them' },
  { ...runFlag('check'), group: MEASURE, help: 'count wrong elements of every step once (0 = no check)' },
  flag.toggle(
    'gaps',
    'gaps',
    MEASURE,
    'keep the recorded time between calls (flight-recorder dumps record it) as busy waits',
  ),
  flag.toggle('dry-run', 'dryRun', MEASURE, 'read and check the trace, print its steps and exit; runs nothing'),
  flag.output(
    'J',
    'json',
    'json',
    OUTPUT,
    'the result as JSON (kind "collbench-replay", with ops[]; schema/collbench-replay.v1.schema.json); - = stdout',
  ),
  flag.output(undefined, 'csv', 'csv', OUTPUT, 'one line per step; - = stdout'),
  flag.force(OUTPUT, 'replace output files that already exist'),
  flag.quiet(OUTPUT),
  helpFlag(OUTPUT),
] as const;
const REPLAY_TABLE = [...REPLAY_FLAGS, ...inGroup(RUN_FLAGS, RUN_GROUP)] as const;

export const REPLAY_OPTIONS: CommandOptions<typeof REPLAY_TABLE> = {
  command: 'replay',
  usage: 'collbench replay TRACE... [options] [run options]',
  about: `  Replays the collectives a real job issued, step by step, on this cluster's backends. TRACE is files or folders:
  NCCL call logs (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL; one per rank or merged), PyTorch execution traces (Chakra
  JSON, .json or .json.gz, one per rank, schema 1.0.x or 1.1.x) or flight-recorder dumps (pickle or JSON, one per
  rank). Every rank's sequence must match (collective, size, datatype, group at each step); the job runs with the
  trace's rank count (as --np). Groups smaller than the world (tensor/data parallel) run on real sub-communicators,
  created once before the timed loop. collbench compare SETTINGS -- collbench replay TRACE... compares settings.`,
  groups: [CHECKS, MEASURE, OUTPUT, RUN_GROUP],
  flags: REPLAY_TABLE,
  footer:
    'Exit status: 0, 7 wrong elements found, 2 bad or inconsistent trace, and as for runs: 3 backend error, 4 timeout, 5 environment.',
};

/** The replay's own fields, -n/-w/-c among them (its defaults differ from a run's, so they travel as its own words);
 *  the launch flags go through the run's parser and come back to the children as run arguments. */
const OWN_FIELDS = new Set<string>(REPLAY_FLAGS.flatMap((f) => (f.kind === 'action' ? [] : [f.field])));

export interface ReplayArgs {
  traces: string[];
  skipUnknown: boolean;
  shrink: boolean;
  iters: number;
  warmupIters: number;
  check: boolean;
  gaps: boolean;
  dryRun: boolean;
  json: string | null;
  csv: string | null;
  force: boolean;
  quiet: boolean;
  /** The replay's own words as typed, traces first (for the children under --np). */
  own: string[];
  run: ResolvedOptions;
  npGiven: boolean;
}

export function parseReplayArgs(argv: readonly string[]): ReplayArgs | 'help' {
  const { stop, positionals, values: v, ordered, given } = parseOptions(argv, REPLAY_OPTIONS);
  if (stop === 'help') return 'help';
  if (!positionals.length) throw new UsageError('replay: give the trace: files or folders (see --help)');
  const { own, run } = splitRunFlags('replay', ordered, REPLAY_TABLE, OWN_FIELDS);
  return {
    traces: positionals,
    skipUnknown: v.skipUnknown,
    shrink: v.shrink,
    iters: v.iters,
    warmupIters: v.warmupIters,
    check: v.check > 0,
    gaps: v.gaps,
    dryRun: v.dryRun,
    json: v.json,
    csv: v.csv,
    force: v.force,
    quiet: v.quiet,
    own: [...positionals, ...own],
    run,
    npGiven: given.has('np'),
  };
}

function documentOutputs(a: ReplayArgs): DocumentOutput<ReplayDocument>[] {
  return [
    { flag: '-J', path: a.json, render: documentJson },
    { flag: '--csv', path: a.csv, render: renderCsv },
  ];
}
const outputs = (a: ReplayArgs): { flag: string; path: string }[] => outputFiles(documentOutputs(a));

/** Reads and checks the trace for `nranks` ranks (null: its own); a bad trace becomes the command's usage error. */
async function readAndPlan(a: ReplayArgs, nranks: number | null): Promise<{ trace: ReplayTrace; plan: ReplayPlan }> {
  try {
    const trace = await readTrace(a.traces);
    const plan = planReplay(trace, { nranks, skipUnknown: a.skipUnknown, shrink: a.shrink });
    refuseLegacyOnGroups(a, plan);
    return { trace, plan };
  } catch (e) {
    if (e instanceof TraceError) throw new UsageError(`replay: ${e.message}`);
    throw e;
  }
}

/** Gloo's legacy algorithm classes (--gloo-algo legacy_*) run on the world only: a group's all_reduce or
 *  reduce_scatter under them is refused here, in one line, before any rank starts (the backend refuses it too). */
function refuseLegacyOnGroups(a: ReplayArgs, plan: ReplayPlan): void {
  if (!a.run.glooAlgo?.startsWith('legacy_')) return;
  const step = plan.steps.find(
    (s) => s.group.size < plan.nranks && (s.collective === 'all_reduce' || s.collective === 'reduce_scatter'),
  );
  if (step)
    throw UsageError.forFlag(
      '--gloo-algo',
      `${a.run.glooAlgo} runs on the world only (Gloo's legacy classes), but step ${step.index} ` +
        `(${step.collective}) runs on groups of ${step.group.size} of the ${plan.nranks} ranks; give ring, bcube or default`,
    );
}

export async function replayCommand(
  argv: string[],
  scriptPath: string,
  io: IO,
  onTimeout?: () => never,
): Promise<number> {
  const a = parseReplayArgs(argv);
  if (a === 'help') {
    io.out(commandHelp(REPLAY_OPTIONS));
    return EXIT.OK;
  }
  const env = process.env;
  const launched = launcherRank(env) !== null;
  // Read and checked here once, before any rank starts, for the job's rank count.
  const { trace, plan } = await readAndPlan(a, a.run.np);
  if (a.dryRun) {
    for (const line of planLines(plan, trace.format, trace.files.length)) io.out(line);
    return EXIT.OK;
  }
  if (!launched) {
    // Not under a launcher: start the job with the trace's rank count (or --np's, checked above), as --np does.
    const np = a.run.np ?? plan.nranks;
    checkOutputPaths(outputs(a), { force: a.force });
    if (np > 1 || a.npGiven) {
      const run = { ...a.run, np };
      return launchRanks(
        run,
        {
          program: [process.execPath, ...process.execArgv, scriptPath],
          programNamesCollective: false,
          typed: [scriptPath, 'replay', ...argv],
          childArgs: (runArgs) => ['replay', ...a.own, ...runArgs],
          outputs: outputs(a),
        },
        preflight(run),
      );
    }
  } else if (launcherRank(env) === 0) checkOutputPaths(outputs(a), { force: a.force });
  return relayVerdict(await runReplay(a, trace, io, [scriptPath, 'replay', ...argv], env, onTimeout), env);
}

/** One rank's part: plan for the job's world, time it (runs.ts), rank 0 renders and writes the outputs. */
async function runReplay(
  a: ReplayArgs,
  trace: ReplayTrace,
  io: IO,
  argv: string[],
  env: NodeJS.ProcessEnv,
  onTimeout?: () => never,
): Promise<number> {
  const startTime = isoLocal(new Date());
  const planFor = (nranks: number): ReplayPlan => {
    try {
      return planReplay(trace, { nranks, skipUnknown: a.skipUnknown, shrink: a.shrink });
    } catch (e) {
      if (e instanceof TraceError) throw new UsageError(`replay: ${e.message}`);
      throw e;
    }
  };
  const m = await timeReplay(
    a.run,
    { iters: a.iters, warmupIters: a.warmupIters, check: a.check, gaps: a.gaps, quiet: a.quiet },
    planFor,
    io,
    { env, onTimeout },
  );
  const wrong = m.wrong.reduce((x, w) => x + w, 0);
  const exitCode = wrong > 0 ? EXIT.WRONG_RESULTS : EXIT.OK;
  if (!m.root) return exitCode;
  const typed = env[ARGV_ENV] ? (JSON.parse(env[ARGV_ENV]) as string[]) : argv;
  const doc = buildDocument({
    plan: m.plan,
    format: trace.format,
    files: trace.files,
    stepUs: m.stepUs,
    iterationUs: m.iterationUs,
    gapUs: m.gapUs,
    wrong: m.wrong,
    check: a.check,
    firstWrong: m.firstWrong,
    iters: a.iters,
    warmupIters: a.warmupIters,
    gaps: a.gaps,
    version: VERSION,
    startTime,
    argv: typed,
    backend: { name: m.info.backend, version: m.info.libraryVersionShort },
    hosts: m.hosts,
    exitCode,
  });
  await writeDocument(doc, documentOutputs(a), io, { lines: renderText(doc), besideStdout: 'none' });
  return exitCode;
}
