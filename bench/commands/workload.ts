// `collbench workload ddp|fsdp …`: benchmarks the collectives a training step really issues — DDP's gradient-bucket
// all-reduces for each bucket cap, FSDP's per-unit all-gathers and reduce-scatters for each wrap granularity — through
// the native timed loop (benchSequence: the whole step back to back, optionally with busy gaps standing in for the
// compute), interleaving the configurations over several repeats, and recommends one with its margin over the others.
// Every rank builds the same plan from the same arguments; `--np` re-executes this command under the launcher, as runs do.
import { readFileSync } from 'node:fs';
import { tokenize, parseCommandLine, type OptionSpec } from '../config/parse.js';
import { EXIT, UsageError } from '../core/errors.js';
import { FLAGS, type ResolvedOptions } from '../core/flags.js';
import { DTYPE_BYTES, DTYPES, type DTypeName } from '../core/types.js';
import { launcherRank } from '../launch/environment.js';
import { writeFileAtomic } from '../report/atomic-write.js';
import { isoLocal } from '../report/exporters/json.js';
import { errorText, schemaErrors } from '../report/json-schemas.js';
import { checkOutputPaths } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { VERSION } from '../version.js';
import { recommend, summarize } from '../workload/analyze.js';
import { DDP_DEFAULT_CAP_MB, DDP_FIRST_BUCKET_BYTES } from '../workload/ddp.js';
import { buildDocument, renderCsv, renderHtml, renderText, type WorkloadDocument, type WorkloadSettings } from '../workload/document.js';
import { modelFromEntries, syntheticModel, type Model, type ParamEntry } from '../workload/model.js';
import { ddpPlan, fsdpPlan, type WorkloadKind, type WorkloadPlan } from '../workload/plan.js';
import type { IO } from '../core/io.js';
import { launchRanks } from '../engine/launch-ranks.js';
import { timeWorkload } from '../engine/workload.js';

export const WORKLOAD_USAGE = `USAGE: collbench workload ddp|fsdp (--params N | --param-sizes FILE) [options] [run options]
  Times the collectives one training step issues, back to back through the native timed loop, for several
  configurations interleaved over --repeats, and recommends the fastest with its margin over each other one
  (bootstrap interval of the ratio of medians, one-sided Mann-Whitney, Holm-corrected).
  ddp:  one all_reduce per gradient bucket, buckets filled in reverse parameter order up to the cap, the first
        bucket capped at --first-bucket-mb (PyTorch's reducer: compute_bucket_assignment_by_size).
  fsdp: FULL_SHARD: all_gather of every unit forward; backward, all_gather again (prefetched) and reduce_scatter
        per unit, last first; a unit = --unit-layers consecutive blocks, plus the root (embedding, final norm).
Model:
  --params N            parameter count of a synthetic decoder-only transformer (7e9, 7B, 125M)
  --layers L            its block count (default cbrt(N)/60: 1e9 -> 17, 7e9 -> 32)
  --param-sizes FILE    the model's own parameters instead (JSON, schema/collbench-param-sizes.v1.schema.json)
  --dtype T             gradient/parameter datatype: bf16 (default), fp16, fp32, fp64 or a -d name
Configurations:
  --bucket-mb LIST      ddp bucket caps in MB (bucket_cap_mb; default 10,25,50,100,256)
  --first-bucket-mb X   ddp first bucket cap (default ${DDP_FIRST_BUCKET_BYTES / 2 ** 20})
  --unit-layers LIST    fsdp blocks per unit (default 1,2,4)
  --world N             fsdp sharding world (default and only allowed value for a run: the job's rank count;
                        any value with --dry-run)
Measurement:
  --repeats R           interleaved repeats of every configuration (default 5; at least 2)
  -n, --iters S         timed steps per repeat (default 10)
  -w, --warmup_iters W  untimed steps before them (default 2)
  --compute-ms T        stand-in compute per step (busy wait spread over the calls in proportion to their bytes);
                        also times the step with it and reports how much communication it hid (default 0)
  -c, --check 0|1       count wrong elements once per call of the first repeat (default 1)
  --dry-run             print the sequences (calls, sizes) and exit; runs nothing
Output:
  -J, --json FILE       the result as JSON (kind "collbench-workload", schema/collbench-workload.v1.schema.json); - = stdout
  --csv FILE            one line per configuration; - = stdout
  --html FILE           one page with the time-per-step chart
  --force               replace output files that already exist
  --quiet               no progress lines on stderr
Run options: --backend, --np, --hosts, --gloo-*, --nccl-lib, -T, -t, -g as for runs.
Exit status: 0, 7 wrong elements found, 2 bad input, and as for runs: 3 backend error, 4 timeout, 5 environment.`;

/** The run flags a workload takes (launch, checking, timing limits); the rest of a run's flags do not apply. */
const RUN_FIELDS = new Set(['np', 'hosts', 'backend', 'glooAlgo', 'glooStore', 'glooIface', 'ncclLib', 'timeoutSec', 'check',
  'iters', 'warmupIters', 'nThreads', 'nGpus']);
const OWN: readonly OptionSpec[] = [
  { long: 'params', takesValue: true, key: 'params', value: '<count>' },
  { long: 'layers', takesValue: true, key: 'layers', value: '<blocks>' },
  { long: 'param-sizes', takesValue: true, key: 'paramSizes', value: '<file>' },
  { long: 'dtype', takesValue: true, key: 'dtype', value: '<type>' },
  { long: 'bucket-mb', takesValue: true, key: 'bucketMb', value: '<list>' },
  { long: 'first-bucket-mb', takesValue: true, key: 'firstBucketMb', value: '<MB>' },
  { long: 'unit-layers', takesValue: true, key: 'unitLayers', value: '<list>' },
  { long: 'world', takesValue: true, key: 'world', value: '<ranks>' },
  { long: 'repeats', takesValue: true, key: 'repeats', value: '<count>' },
  { long: 'compute-ms', takesValue: true, key: 'computeMs', value: '<ms>' },
  { long: 'dry-run', takesValue: false, key: 'dryRun' },
  { short: 'J', long: 'json', takesValue: true, key: 'json', value: '<file>' },
  { long: 'csv', takesValue: true, key: 'csv', value: '<file>' },
  { long: 'html', takesValue: true, key: 'html', value: '<file>' },
  { long: 'force', takesValue: false, key: 'force' },
  { long: 'quiet', takesValue: false, key: 'quiet' },
  { short: 'h', long: 'help', takesValue: false, key: 'help', stops: true },
];
const OWN_KEYS = new Set(OWN.map((o) => o.key));
const SPECS: readonly OptionSpec[] = [
  ...OWN,
  ...FLAGS.filter((f) => RUN_FIELDS.has(f.field)).map((f): OptionSpec => ({ short: f.short, long: f.long, takesValue: f.kind !== 'switch', value: f.value, key: f.field })),
];

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
  if (!(n >= 1) || !Number.isFinite(n)) throw UsageError.forFlag(flag, `expected a parameter count such as 7e9, 7B or 125M, got '${text}'`);
  return Math.round(n);
}

/** A number from the command line: a whole number >= `min` (default 1), or a number above 0 (>= `min` when given). */
function positive(text: string, flag: string, integer: boolean, min?: number): number {
  const n = Number(text);
  const low = min ?? (integer ? 1 : 0);
  const ok = text.trim() !== '' && Number.isFinite(n) && (integer ? Number.isInteger(n) : true) && (min === undefined && !integer ? n > 0 : n >= low);
  if (!ok) throw UsageError.forFlag(flag, `expected ${integer ? 'a whole number' : 'a number'} ${min === undefined && !integer ? 'above 0' : `>= ${low}`}, got '${text}'`);
  return n;
}

function numberList(text: string, flag: string, integer: boolean): number[] {
  const items = text.split(',').map((t) => positive(t, flag, integer));
  if (new Set(items).size !== items.length) throw UsageError.forFlag(flag, `lists a value twice: '${text}'`);
  return items;
}

export function parseWorkloadArgs(argv: readonly string[]): WorkloadArgs | 'help' {
  const t = tokenize(argv, SPECS, 'workload: ');
  if (t.stop === 'help') return 'help';
  const [kind, ...extra] = t.positionals;
  if (kind !== 'ddp' && kind !== 'fsdp') throw new UsageError(`workload: expected ddp or fsdp, got ${kind === undefined ? 'nothing' : `'${kind}'`} (see --help)`);
  if (extra.length) throw new UsageError(`workload: unexpected argument '${extra[0]}'`);
  const get = (k: string): string | null => { const v = t.values.get(k); return typeof v === 'string' ? v : null; };
  const has = (k: string): boolean => t.values.has(k);
  if (has('params') === has('paramSizes')) throw new UsageError('workload: give the model as --params N or --param-sizes FILE (one of them)');
  if (has('layers') && !has('params')) throw UsageError.forFlag('--layers', 'applies to the synthetic model (--params) only');
  const only = (k: string, flag: string, wanted: WorkloadKind): void => {
    if (has(k) && kind !== wanted) throw UsageError.forFlag(flag, `applies to workload ${wanted} only`);
  };
  only('bucketMb', '--bucket-mb', 'ddp');
  only('firstBucketMb', '--first-bucket-mb', 'ddp');
  only('unitLayers', '--unit-layers', 'fsdp');
  only('world', '--world', 'fsdp');
  const dtypeText = get('dtype') ?? 'bf16';
  const dtype = DTYPE_ALIASES[dtypeText] ?? (DTYPES as readonly string[]).find((d) => d === dtypeText) as DTypeName | undefined;
  if (!dtype) throw UsageError.forFlag('--dtype', `unknown datatype '${dtypeText}' (bf16, fp16, fp32, fp64, or ${DTYPES.join(', ')})`);
  // The run flags go through the run's own parser, so they mean exactly what they mean for a run.
  const runWords: string[] = [];
  for (const { key, value } of t.ordered) {
    if (OWN_KEYS.has(key)) continue;
    const flag = FLAGS.find((f) => f.field === key)!;
    runWords.push(value === true ? `--${flag.long}` : `--${flag.long}=${value}`);
  }
  const parsed = parseCommandLine(['all_reduce', ...runWords], 'collbench');
  if (parsed.kind !== 'run') throw new UsageError('workload: see --help');
  const run = parsed.options;
  const repeats = get('repeats') === null ? 5 : positive(get('repeats')!, '--repeats', true, 2);
  const own: string[] = [kind];
  for (const { key, value } of t.ordered) {
    if (!OWN_KEYS.has(key)) continue;
    const spec = OWN.find((o) => o.key === key)!;
    own.push(value === true ? `--${spec.long}` : `--${spec.long}=${value}`);
  }
  return {
    kind, dtype, repeats, own, run,
    params: has('params') ? parseCount(get('params')!, '--params') : null,
    layers: has('layers') ? positive(get('layers')!, '--layers', true) : null,
    paramSizes: get('paramSizes'),
    bucketMb: has('bucketMb') ? numberList(get('bucketMb')!, '--bucket-mb', false) : [10, DDP_DEFAULT_CAP_MB, 50, 100, 256],
    firstBucketMb: has('firstBucketMb') ? positive(get('firstBucketMb')!, '--first-bucket-mb', false) : DDP_FIRST_BUCKET_BYTES / 2 ** 20,
    unitLayers: has('unitLayers') ? numberList(get('unitLayers')!, '--unit-layers', true) : [1, 2, 4],
    world: has('world') ? positive(get('world')!, '--world', true) : null,
    steps: has('iters') ? run.iters : 10,
    warmupSteps: has('warmupIters') ? run.warmupIters : 2,
    computeMs: has('computeMs') ? positive(get('computeMs')!, '--compute-ms', false, 0) : 0,
    check: run.check > 0,
    dryRun: has('dryRun'), force: has('force'), quiet: has('quiet'),
    json: get('json'), csv: get('csv'), html: get('html'),
  };
}

/** The model the arguments describe (the same on every rank). */
export function loadModel(a: Pick<WorkloadArgs, 'params' | 'layers' | 'paramSizes'>): Model {
  if (a.params !== null) return syntheticModel(a.params, a.layers ?? undefined);
  const file = a.paramSizes!;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw UsageError.forFlag('--param-sizes', `${file}: ${(e as Error).message}`);
  }
  const errors = schemaErrors('collbench-param-sizes.v1', doc);
  if (errors.length) {
    // The deepest error says most (`/3/numel: must be >= 1` rather than `/3: must be integer` of the other branch).
    const e = errors.filter((x) => x.keyword !== 'oneOf').sort((x, y) => y.instancePath.length - x.instancePath.length)[0] ?? errors[0]!;
    throw UsageError.forFlag('--param-sizes', `${file}: ${e.instancePath || '/'}: ${errorText(e)} (schema/collbench-param-sizes.v1.schema.json)`);
  }
  const entries = Array.isArray(doc) ? doc as ParamEntry[] : (doc as { params: ParamEntry[] }).params;
  return modelFromEntries(entries, file);
}

export function buildPlan(a: WorkloadArgs, world: number): WorkloadPlan {
  const model = loadModel(a);
  const bytes = DTYPE_BYTES[a.dtype];
  return a.kind === 'ddp' ? ddpPlan(model, a.dtype, bytes, world, a.bucketMb, a.firstBucketMb)
    : fsdpPlan(model, a.dtype, bytes, world, a.unitLayers);
}

/** --dry-run: every configuration's sequence. */
export function planLines(plan: WorkloadPlan): string[] {
  const out = [`# collbench workload ${plan.kind}: ${plan.model.source}; ${plan.dtype}; world ${plan.world}`];
  for (const c of plan.configurations) {
    const total = c.ops.reduce((x, o) => x + o.bytes, 0);
    out.push(`# ${plan.varies} ${c.label}: ${c.ops.length} calls, ${total} bytes per step`);
    c.ops.forEach((o, i) => { out.push(`${String(i).padStart(5)}  ${o.collective.padEnd(14)} ${String(o.bytes).padStart(14)}  ${o.what}`); });
  }
  return out;
}

function outputs(a: WorkloadArgs): { flag: string; path: string }[] {
  return [['-J', a.json], ['--csv', a.csv], ['--html', a.html]]
    .filter((x): x is [string, string] => x[1] !== null && x[1] !== '-').map(([flag, path]) => ({ flag, path }));
}

/** `onTimeout`: what ends the process when -T expires and the backend has no job-wide abort (cli/main.ts decides). */
export async function workloadCommand(argv: string[], scriptPath: string, io: IO, onTimeout?: () => never): Promise<number> {
  const a = parseWorkloadArgs(argv);
  if (a === 'help') { io.out(WORKLOAD_USAGE); return EXIT.OK; }
  if (a.dryRun) {
    const world = a.world ?? a.run.np ?? 1;
    for (const line of planLines(buildPlan(a, world))) io.out(line);
    return EXIT.OK;
  }
  loadModel(a); // a bad model file fails here, once, before any rank starts
  const env = process.env;
  if (a.run.np !== null) {
    if (a.world !== null && a.world !== a.run.np) throw UsageError.forFlag('--world', `${a.world} differs from --np ${a.run.np}: a run shards over its own ranks (use --dry-run to see other worlds)`);
    checkOutputPaths(outputs(a), { force: a.force });
    return launchRanks(a.run, {
      program: [process.execPath, ...process.execArgv, scriptPath], programNamesCollective: false,
      typed: [scriptPath, 'workload', ...argv], childArgs: (runArgs) => ['workload', ...a.own, ...runArgs], outputs: outputs(a),
    });
  }
  const launched = launcherRank(env);
  if (launched === null || launched === 0) checkOutputPaths(outputs(a), { force: a.force });
  return runWorkload(a, io, [scriptPath, 'workload', ...argv], env, onTimeout);
}

/** One rank's part: the engine times every configuration (engine/workload.ts); rank 0 summarises, recommends and
 *  writes the outputs. */
async function runWorkload(a: WorkloadArgs, io: IO, argv: string[], env: NodeJS.ProcessEnv, onTimeout?: () => never): Promise<number> {
  const startTime = isoLocal(new Date());
  const planFor = (nranks: number): WorkloadPlan => {
    if (a.world !== null && a.world !== nranks)
      throw UsageError.forFlag('--world', `${a.world} differs from the job's ${nranks} ranks: a run shards over its own ranks (use --dry-run to see other worlds)`);
    return buildPlan(a, nranks);
  };
  const { plan, samples, hosts, info, root } = await timeWorkload(a.run,
    { dtype: a.dtype, repeats: a.repeats, steps: a.steps, warmupSteps: a.warmupSteps, computeMs: a.computeMs, check: a.check, quiet: a.quiet },
    planFor, io, { env, onTimeout });
  const wrong = samples.flat().reduce((x, s) => x + s.wrong, 0);
  const exitCode = wrong > 0 ? EXIT.WRONG_RESULTS : EXIT.OK;
  if (!root) return exitCode;
  const summaries = summarize(plan, info.nranks, samples);
  const settings: WorkloadSettings = {
    varies: plan.varies, repeats: a.repeats, steps: a.steps, warmupSteps: a.warmupSteps, computeMs: a.computeMs, check: a.check,
    ...(plan.kind === 'ddp' ? { firstBucketMb: a.firstBucketMb } : {}),
  };
  const typed = env[ARGV_ENV] ? JSON.parse(env[ARGV_ENV]) as string[] : argv;
  const doc = buildDocument({
    plan, settings, summaries, samples, recommendation: recommend(summaries), version: VERSION, startTime, argv: typed,
    backend: { name: info.backend, version: info.libraryVersionShort }, nranks: info.nranks, hosts, exitCode,
  });
  await writeOutputs(a, doc, io);
  return exitCode;
}

async function writeOutputs(a: WorkloadArgs, doc: WorkloadDocument, io: IO): Promise<void> {
  const toStdout = [a.json, a.csv, a.html].includes('-');
  if (!toStdout) for (const line of renderText(doc)) io.out(line);
  const emit = (path: string | null, text: string): void => {
    if (path === null) return;
    if (path === '-') io.out(text.replace(/\n$/, ''));
    else writeFileAtomic(path, text);
  };
  emit(a.json, JSON.stringify(doc, null, 2) + '\n');
  emit(a.csv, renderCsv(doc));
  if (a.html !== null) emit(a.html, await renderHtml(doc));
}
