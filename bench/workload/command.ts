// `collbench workload ddp|fsdp …`: benchmarks the collectives a training step issues (DDP's bucket all-reduces per
// bucket cap, FSDP's all-gathers and reduce-scatters per wrap granularity) through the native timed loop, the
// configurations interleaved over repeats, and recommends one. `--np` re-executes it under the launcher, as runs do.
import { commandHelp, parseOptions, valueList, type CommandOptions } from '../config/option-parser.js';
import { splitRunFlags } from '../config/run-options.js';
import { EXIT, UsageError } from '../core/errors.js';
import { FLAGS, flag, helpFlag, inGroup, runFlag, type PassOnFlag, type ResolvedOptions } from '../config/flags.js';
import { DTYPE_BYTES, DTYPES, type DTypeName } from '../core/types.js';
import { launcherRank } from '../launch/launcher.js';
import { isoLocal } from '../report/exporters/json.js';
import { checkOutputPaths, documentJson, outputFiles, writeDocument, type DocumentOutput } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { VERSION } from '../version.js';
import { recommend, summarize } from './analyze.js';
import { DDP_DEFAULT_CAP_MB, DDP_FIRST_BUCKET_BYTES } from './ddp.js';
import {
  buildDocument,
  renderCsv,
  renderHtml,
  renderText,
  type WorkloadDocument,
  type WorkloadSettings,
} from './document.js';
import { loadModel } from './model.js';
import { ddpPlan, fsdpPlan, planLines, type WorkloadKind, type WorkloadPlan } from './plan.js';
import type { IO } from '../core/io.js';
import { launchRanks } from '../engine/launch-ranks.js';
import { preflight } from '../engine/preflight.js';
import { timeWorkload } from './runs.js';
import { relayVerdict } from '../launch/verdict-relay.js';

/** The run flags a workload takes (those marked passOn in the flag table, and -T); the rest of a run's flags do not
 *  apply. */
type RunFlag = PassOnFlag | Extract<(typeof FLAGS)[number], { field: 'timeoutSec' }>;
const RUN_GROUP = 'Run options (as for runs)';
const RUN_FLAGS = FLAGS.filter((f): f is RunFlag => 'passOn' in f || f.field === 'timeoutSec');
const MODEL = 'Model',
  CONFIGS = 'Configurations',
  MEASURE = 'Measurement',
  OUTPUT = 'Output';
const DTYPE_NAMES = ['bf16', 'fp16', 'fp32', 'fp64', ...DTYPES] as const;
const WORKLOAD_FLAGS = [
  flag.text(
    undefined,
    'params',
    'params',
    MODEL,
    'parameter count of a synthetic decoder-only transformer (7e9, 7B, 125M)',
    { value: '<count>' },
  ),
  {
    ...flag.int(undefined, 'layers', 'layers', 0, 'block count', 1, undefined, MODEL, 'its block count', {
      value: '<blocks>',
      defaultText: 'cbrt(N)/60: 1e9 -> 17, 7e9 -> 32',
    }),
    default: null as number | null,
  },
  flag.text(
    undefined,
    'param-sizes',
    'paramSizes',
    MODEL,
    "the model's own parameters instead (JSON, " + 'schema/collbench-param-sizes.v1.schema.json)',
    { value: '<file>' },
  ),
  flag.choice(
    'dtype',
    'dtype',
    DTYPE_NAMES,
    'bf16',
    'datatype',
    MODEL,
    'gradient/parameter datatype: bf16, fp16, fp32, fp64 or a -d name',
    { value: '<type>' },
  ),
  flag.text(undefined, 'bucket-mb', 'bucketMb', CONFIGS, 'ddp bucket caps in MB (bucket_cap_mb)', {
    value: '<list>',
    defaultText: `10,${DDP_DEFAULT_CAP_MB},50,100,256`,
  }),
  {
    ...flag.real(
      'first-bucket-mb',
      'firstBucketMb',
      'first bucket cap (MB)',
      0,
      undefined,
      CONFIGS,
      'ddp first bucket cap',
      { value: '<MB>' },
    ),
    default: (DDP_FIRST_BUCKET_BYTES / 2 ** 20) as number,
  },
  flag.text(undefined, 'unit-layers', 'unitLayers', CONFIGS, 'fsdp blocks per unit', {
    value: '<list>',
    defaultText: '1,2,4',
  }),
  {
    ...flag.int(
      undefined,
      'world',
      'world',
      0,
      'world size',
      1,
      undefined,
      CONFIGS,
      'fsdp sharding world (the only value ' + "allowed for a run: the job's rank count; any value with --dry-run)",
      { value: '<ranks>', defaultText: "the job's rank count" },
    ),
    default: null as number | null,
  },
  flag.int(
    undefined,
    'repeats',
    'repeats',
    5,
    'repeat count',
    2,
    undefined,
    MEASURE,
    'interleaved repeats of every configuration',
    { value: '<count>' },
  ),
  { ...runFlag('iters'), default: 10, group: MEASURE, help: 'timed steps per repeat' },
  { ...runFlag('warmupIters'), default: 2, group: MEASURE, help: 'untimed steps before them' },
  flag.number(
    'compute-ms',
    'computeMs',
    0,
    'compute time (ms)',
    0,
    undefined,
    MEASURE,
    'stand-in compute per step (busy wait ' +
      'spread over the calls in proportion to their bytes); also times the step with it and reports how much communication it hid',
    { value: '<ms>' },
  ),
  {
    ...runFlag('check'),
    group: MEASURE,
    help: 'count wrong elements once per call of the first repeat (0 = no check)',
  },
  flag.toggle('dry-run', 'dryRun', MEASURE, 'print the sequences (calls, sizes) and exit; runs nothing'),
  flag.output(
    'J',
    'json',
    'json',
    OUTPUT,
    'the result as JSON (kind "collbench-workload", schema/collbench-workload.v1.schema.json); ' + '- = stdout',
  ),
  flag.output(undefined, 'csv', 'csv', OUTPUT, 'one line per configuration; - = stdout'),
  flag.output(undefined, 'html', 'html', OUTPUT, 'one page with the time-per-step chart'),
  flag.force(OUTPUT, 'replace output files that already exist'),
  flag.quiet(OUTPUT),
  helpFlag(OUTPUT),
] as const;
const WORKLOAD_TABLE = [...WORKLOAD_FLAGS, ...inGroup(RUN_FLAGS, RUN_GROUP)] as const;

export const WORKLOAD_OPTIONS: CommandOptions<typeof WORKLOAD_TABLE> = {
  command: 'workload',
  usage: 'collbench workload ddp|fsdp (--params N | --param-sizes FILE) [options] [run options]',
  about: `  Times the collectives one training step issues, back to back through the native timed loop, for several
  configurations interleaved over --repeats, and recommends the fastest with its margin over each other one
  (bootstrap interval of the ratio of medians, one-sided Mann-Whitney, Holm-corrected).
  ddp:  one all_reduce per gradient bucket, buckets filled in reverse parameter order up to the cap, the first
        bucket capped at --first-bucket-mb (PyTorch's reducer: compute_bucket_assignment_by_size).
  fsdp: FULL_SHARD: all_gather of every unit forward; backward, all_gather again (prefetched) and reduce_scatter
        per unit, last first; a unit = --unit-layers consecutive blocks, plus the root (embedding, final norm).`,
  groups: [MODEL, CONFIGS, MEASURE, OUTPUT, RUN_GROUP],
  flags: WORKLOAD_TABLE,
  footer:
    'Exit status: 0, 7 wrong elements found, 2 bad input, and as for runs: 3 backend error, 4 timeout, 5 environment.',
};

/** One item of --bucket-mb (a cap in MB, above 0) and of --unit-layers (a block count, at least 1). */
const BUCKET_MB = flag.real('bucket-mb', 'bucketMb', 'bucket cap (MB)', 0, undefined, CONFIGS, '');
const UNIT_LAYERS = flag.int(undefined, 'unit-layers', 'unitLayers', 1, 'blocks per unit', 1, undefined, CONFIGS, '');
/** The workload's own fields; the others (-n, -w, -c among them) are run flags, handed to the run's parser. */
const RUN_FIELDS = new Set<string>(FLAGS.map((f) => f.field));
const OWN_FIELDS = new Set<string>(
  WORKLOAD_FLAGS.flatMap((f) => (f.kind === 'action' || RUN_FIELDS.has(f.field) ? [] : [f.field])),
);

const DTYPE_ALIASES: Record<string, DTypeName> = { bf16: 'bfloat16', fp16: 'half', fp32: 'float', fp64: 'double' };

export interface WorkloadArgs {
  kind: WorkloadKind;
  params: number | null;
  layers: number | null;
  paramSizes: string | null;
  dtype: DTypeName;
  bucketMb: number[];
  firstBucketMb: number;
  unitLayers: number[];
  world: number | null;
  repeats: number;
  steps: number;
  warmupSteps: number;
  computeMs: number;
  check: boolean;
  dryRun: boolean;
  json: string | null;
  csv: string | null;
  html: string | null;
  force: boolean;
  quiet: boolean;
  /** The workload's own words as typed (for the children under --np). */
  own: string[];
  run: ResolvedOptions;
}

const SCALE: Record<string, number> = { '': 1, K: 1e3, M: 1e6, B: 1e9, G: 1e9, T: 1e12 };

/** A parameter count: 7e9, 7000000000, 7B, 125M, 1.5T. */
export function parseCount(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?(?:e\d+)?)([KMBGT]?)$/i.exec(text.trim());
  const n = m ? Number(m[1]) * SCALE[m[2]!.toUpperCase()]! : Number.NaN;
  if (!(n >= 1) || !Number.isFinite(n))
    throw UsageError.forFlag(flag, `expected a parameter count such as 7e9, 7B or 125M, got '${text}'`);
  return Math.round(n);
}

export function parseWorkloadArgs(argv: readonly string[]): WorkloadArgs | 'help' {
  const { stop, positionals, values: v, given, ordered } = parseOptions(argv, WORKLOAD_OPTIONS);
  if (stop === 'help') return 'help';
  const [kind, ...extra] = positionals;
  if (kind !== 'ddp' && kind !== 'fsdp')
    throw new UsageError(
      `workload: expected ddp or fsdp, got ${kind === undefined ? 'nothing' : `'${kind}'`} (see --help)`,
    );
  if (extra.length) throw new UsageError(`workload: unexpected argument '${extra[0]}'`);
  const has = (field: string): boolean => given.has(field);
  if (has('params') === has('paramSizes'))
    throw new UsageError('workload: give the model as --params N or --param-sizes FILE (one of them)');
  if (has('layers') && !has('params'))
    throw UsageError.forFlag('workload: --layers', 'applies to the synthetic model (--params) only');
  const only = (field: string, flagName: string, wanted: WorkloadKind): void => {
    if (has(field) && kind !== wanted)
      throw UsageError.forFlag(`workload: ${flagName}`, `applies to workload ${wanted} only`);
  };
  only('bucketMb', '--bucket-mb', 'ddp');
  only('firstBucketMb', '--first-bucket-mb', 'ddp');
  only('unitLayers', '--unit-layers', 'fsdp');
  only('world', '--world', 'fsdp');
  const dtype = DTYPE_ALIASES[v.dtype] ?? (v.dtype as DTypeName);
  const { own, run } = splitRunFlags('workload', ordered, WORKLOAD_TABLE, OWN_FIELDS);
  return {
    kind,
    dtype,
    repeats: v.repeats,
    own: [kind, ...own],
    run,
    params: v.params === null ? null : parseCount(v.params, 'workload: --params'),
    layers: v.layers,
    paramSizes: v.paramSizes,
    bucketMb:
      v.bucketMb === null
        ? [10, DDP_DEFAULT_CAP_MB, 50, 100, 256]
        : (valueList(BUCKET_MB, v.bucketMb, 'workload: --bucket-mb') as number[]),
    firstBucketMb: v.firstBucketMb,
    unitLayers:
      v.unitLayers === null ? [1, 2, 4] : (valueList(UNIT_LAYERS, v.unitLayers, 'workload: --unit-layers') as number[]),
    world: v.world,
    steps: v.iters,
    warmupSteps: v.warmupIters,
    computeMs: v.computeMs,
    check: v.check > 0,
    dryRun: v.dryRun,
    force: v.force,
    quiet: v.quiet,
    json: v.json,
    csv: v.csv,
    html: v.html,
  };
}

/** The model the arguments describe (the same on every rank). */
export function buildPlan(a: WorkloadArgs, world: number): WorkloadPlan {
  const model = loadModel(a.params, a.layers, a.paramSizes);
  const bytes = DTYPE_BYTES[a.dtype];
  return a.kind === 'ddp'
    ? ddpPlan(model, a.dtype, bytes, world, a.bucketMb, a.firstBucketMb)
    : fsdpPlan(model, a.dtype, bytes, world, a.unitLayers);
}

function documentOutputs(a: WorkloadArgs): DocumentOutput<WorkloadDocument>[] {
  return [
    { flag: '-J', path: a.json, render: documentJson },
    { flag: '--csv', path: a.csv, render: renderCsv },
    { flag: '--html', path: a.html, render: renderHtml },
  ];
}
const outputs = (a: WorkloadArgs): { flag: string; path: string }[] => outputFiles(documentOutputs(a));

/** `onTimeout`: what ends the process when -T expires and the backend has no job-wide abort (cli/main.ts decides). */
export async function workloadCommand(
  argv: string[],
  scriptPath: string,
  io: IO,
  onTimeout?: () => never,
): Promise<number> {
  const a = parseWorkloadArgs(argv);
  if (a === 'help') {
    io.out(commandHelp(WORKLOAD_OPTIONS));
    return EXIT.OK;
  }
  if (a.dryRun) {
    const world = a.world ?? a.run.np ?? 1;
    for (const line of planLines(buildPlan(a, world))) io.out(line);
    return EXIT.OK;
  }
  loadModel(a.params, a.layers, a.paramSizes); // a bad model file fails here, once, before any rank starts
  const env = process.env;
  if (a.run.np !== null) {
    if (a.world !== null && a.world !== a.run.np)
      throw UsageError.forFlag(
        '--world',
        `${a.world} differs from --np ${a.run.np}: a run shards over its own ranks (use --dry-run to see other worlds)`,
      );
    checkOutputPaths(outputs(a), { force: a.force });
    return launchRanks(
      a.run,
      {
        program: [process.execPath, ...process.execArgv, scriptPath],
        programNamesCollective: false,
        typed: [scriptPath, 'workload', ...argv],
        childArgs: (runArgs) => ['workload', ...a.own, ...runArgs],
        outputs: outputs(a),
      },
      preflight(a.run),
    );
  }
  const launched = launcherRank(env);
  if (launched === null || launched === 0) checkOutputPaths(outputs(a), { force: a.force });
  return relayVerdict(await runWorkload(a, io, [scriptPath, 'workload', ...argv], env, onTimeout), env);
}

/** One rank's part: the engine times every configuration (workload/runs.ts); rank 0 summarises, recommends and
 *  writes the outputs. */
async function runWorkload(
  a: WorkloadArgs,
  io: IO,
  argv: string[],
  env: NodeJS.ProcessEnv,
  onTimeout?: () => never,
): Promise<number> {
  const startTime = isoLocal(new Date());
  const planFor = (nranks: number): WorkloadPlan => {
    if (a.world !== null && a.world !== nranks)
      throw UsageError.forFlag(
        '--world',
        `${a.world} differs from the job's ${nranks} ranks: a run shards over its own ranks (use --dry-run to see other worlds)`,
      );
    return buildPlan(a, nranks);
  };
  const { plan, samples, hosts, info, root } = await timeWorkload(
    a.run,
    {
      dtype: a.dtype,
      repeats: a.repeats,
      steps: a.steps,
      warmupSteps: a.warmupSteps,
      computeMs: a.computeMs,
      check: a.check,
      quiet: a.quiet,
    },
    planFor,
    io,
    { env, onTimeout },
  );
  const wrong = samples.flat().reduce((x, s) => x + s.wrong, 0);
  const exitCode = wrong > 0 ? EXIT.WRONG_RESULTS : EXIT.OK;
  if (!root) return exitCode;
  const summaries = summarize(plan, info.nranks, samples);
  const settings: WorkloadSettings = {
    varies: plan.varies,
    repeats: a.repeats,
    steps: a.steps,
    warmupSteps: a.warmupSteps,
    computeMs: a.computeMs,
    check: a.check,
    ...(plan.kind === 'ddp' ? { firstBucketMb: a.firstBucketMb } : {}),
  };
  const typed = env[ARGV_ENV] ? (JSON.parse(env[ARGV_ENV]) as string[]) : argv;
  const doc = buildDocument({
    plan,
    settings,
    summaries,
    samples,
    recommendation: recommend(summaries),
    version: VERSION,
    startTime,
    argv: typed,
    backend: { name: info.backend, version: info.libraryVersionShort },
    nranks: info.nranks,
    hosts,
    exitCode,
  });
  await writeDocument(doc, documentOutputs(a), io, { lines: renderText(doc), besideStdout: 'none' });
  return exitCode;
}
