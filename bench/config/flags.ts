// The one flag table: every option of a run as one record (letter, long name, field, kind, default, range, help,
// group, backends); the options type, parser, --help, range checks and GPU-only refusals derive from it. Letters,
// names and defaults mirror nccl-tests' getopt_long table; collbench's additions take long names only.
import {
  BACKEND_NAMES,
  DTYPES,
  GLOO_ALGOS,
  JSON_FORMATS,
  OPS,
  TABLE_FORMATS,
  type BackendName,
  type CollectiveName,
} from '../core/types.js';

export const GROUPS = [
  'Sizes',
  'Iterations and timing',
  'Data and checking',
  'Output',
  'Ranks, devices and NCCL features',
  'collbench launch',
  'Other',
] as const;
export type FlagGroup = (typeof GROUPS)[number];

/**
 * How the value is written and read: `int` (strtol base 0 syntax, a range), `bool` (an int that is 0 or 1),
 * `size` (bytes with K/M/G), `real` (a decimal number above `min`, at most `max`), `duration` (seconds, or with a
 * unit: 90s, 30m, 2h, 1d), `choice` (one name of a list), `list` (names of a list, or `all`), `text` (a string kept
 * as given, or null), `switch` (no value), `action` (-h, --version: ends parsing).
 */
export type FlagKind = 'int' | 'bool' | 'size' | 'real' | 'duration' | 'choice' | 'list' | 'text' | 'switch' | 'action';

interface FlagCommon {
  /** nccl-tests short letter; absent for collbench's long-only additions. */
  short?: string;
  /** Long name (nccl-tests spelling, underscores included). */
  long: string;
  /** Placeholder in --help. */
  value?: string;
  /** Meaning, one sentence (nccl-tests' usage wording where it has one). */
  help: string;
  /** The --help section it is listed in (a run's: GROUPS; another command's: that command's own groups). */
  group: string;
  /** Default as --help shows it when it is not simply the default value. */
  defaultText?: string;
  /** Backends that implement it (absent: every backend). Others refuse a value other than the default. */
  backends?: readonly BackendName[];
  /** How a refusal names what the flag does, e.g. "CUDA graphs". */
  about?: string;
  /** A long-only backend flag that needs no --backend: a preference that a fallback to another backend ignores
   *  (--nccl-lib). Other long-only backend flags need their backend named. */
  preference?: boolean;
  /** Says how ranks are started, never what is measured: the commands that start runs (accept, workload) take it
   *  and pass it on to every run (PASS_ON_FLAGS). */
  passOn?: boolean;
}

/** A flag that sets field F of the options to a value of type V. */
export interface ValueFlag<F extends string = string, V = unknown> extends FlagCommon {
  kind: Exclude<FlagKind, 'action'>;
  field: F;
  default: V;
  /** int, real, duration: the value's name in messages and its range (int max absent: INT_MAX, the native side's
   *  `int`; duration min absent: above 0). */
  what?: string;
  min?: number;
  max?: number;
  /** real: the value must be above `min` (not equal to it). */
  above?: boolean;
  /** duration: whole seconds only. */
  integer?: boolean;
  /** choice / list: the valid names. */
  choices?: readonly string[];
  /** May be given several times; every value is kept, in order (compare's --env, report's --label). */
  repeat?: boolean;
  /** text: the value's own syntax check; returns what is wrong, or null. */
  check?: (text: string) => string | null;
}

export interface ActionFlag extends FlagCommon {
  kind: 'action';
  action: 'help' | 'version';
}

export type FlagSpec = ValueFlag | ActionFlag;

type Extra = Omit<FlagCommon, 'long' | 'help' | 'group'> & Pick<ValueFlag, 'check' | 'choices' | 'min' | 'max'>;
const int = <F extends string>(
  short: string | undefined,
  long: string,
  field: F,
  dflt: number,
  what: string,
  min: number,
  max: number | undefined,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, number> => ({ kind: 'int', short, long, field, default: dflt, what, min, max, group, help, ...extra });
const bool = <F extends string>(
  short: string,
  long: string,
  field: F,
  what: string,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, boolean> => ({ kind: 'bool', short, long, field, default: false, what, group, help, ...extra });
const size = <F extends string>(
  short: string,
  long: string,
  field: F,
  dflt: number,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, number> => ({ kind: 'size', short, long, field, default: dflt, group, help, ...extra });
const choice = <F extends string, C extends string>(
  long: string,
  field: F,
  choices: readonly C[],
  dflt: C,
  what: string,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, C> => ({ kind: 'choice', long, field, choices, default: dflt, what, group, help, ...extra });
const list = <F extends string, C extends string>(
  short: string,
  long: string,
  field: F,
  choices: readonly C[],
  dflt: C,
  what: string,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, C[]> => ({
  kind: 'list',
  short,
  long,
  field,
  choices,
  default: Object.freeze([dflt]) as C[],
  what,
  group,
  help,
  ...extra,
});
const text = <F extends string>(
  short: string | undefined,
  long: string,
  field: F,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, string | null> => ({ kind: 'text', short, long, field, default: null, group, help, ...extra });
const real = <F extends string>(
  long: string,
  field: F,
  what: string,
  min: number,
  max: number | undefined,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, number | null> => ({
  kind: 'real',
  long,
  field,
  default: null,
  what,
  min,
  max,
  above: true,
  group,
  help,
  ...extra,
});
const duration = <F extends string>(
  long: string,
  field: F,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, number | null> => ({
  kind: 'duration',
  long,
  field,
  default: null,
  what: 'duration',
  group,
  help,
  ...extra,
});
const toggle = <F extends string>(
  long: string,
  field: F,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, boolean> => ({ kind: 'switch', long, field, default: false, group, help, ...extra });
/** A number from `min` to `max` (both included) with a default: the other commands' thresholds and counts. */
const number = <F extends string>(
  long: string,
  field: F,
  dflt: number,
  what: string,
  min: number,
  max: number | undefined,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, number> => ({ kind: 'real', long, field, default: dflt, what, min, max, group, help, ...extra });
/** A text option that may be repeated; every value is kept, in order. */
const repeated = <F extends string>(
  long: string,
  field: F,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, string[]> => ({
  kind: 'text',
  long,
  field,
  default: Object.freeze([]) as unknown as string[],
  repeat: true,
  group,
  help,
  ...extra,
});
/** `got X` text in a check's message: empty or spaced values quoted. */
const quoted = (v: string): string => (v === '' || /\s/.test(v) ? `'${v}'` : v);
/** An output file name: any path, or - for stdout where the command allows it; never empty. */
export const outputFileCheck = (v: string): string | null => (v.trim() === '' ? 'output file name is empty' : null);
/** A Redis password never comes from the command line (ps shows it, reports record argv). */
export const REDIS_PASSWORD_IN_URL =
  'a Redis user or password does not belong in the store address (ps and the reports show ' +
  'the command line): give redis://HOST:PORT and put the password in COLLBENCH_GLOO_REDIS_PASSWORD (or REDISCLI_AUTH)';
/** An output file of a command (-J, --csv, --md, --html, --junit, …): `<file>`, checked by outputFileCheck. */
const output = <F extends string>(
  short: string | undefined,
  long: string,
  field: F,
  group: string,
  help: string,
  extra: Extra = {},
): ValueFlag<F, string | null> =>
  text(short, long, field, group, help, { value: '<file>', check: outputFileCheck, ...extra });
/** --force of a command that writes files: `what` says what it replaces and what happens without it. */
const force = (
  group: string,
  what = 'replace output files that already exist (without it they are refused before any run)',
): ValueFlag<'force', boolean> => toggle('force', 'force', group, what);
/** --quiet of a command that prints progress lines on stderr. */
const quiet = (group: string, what = 'no progress lines on stderr'): ValueFlag<'quiet', boolean> =>
  toggle('quiet', 'quiet', group, what);
/** The constructors of option records, for every command's table: the run's below, the subcommands' beside their code. */
export const flag = Object.freeze({
  int,
  bool,
  size,
  choice,
  list,
  text,
  real,
  number,
  duration,
  toggle,
  repeated,
  output,
  force,
  quiet,
  timeout: timeoutFlag,
});

/** Longest --timeout of the subcommands (compare's limit before the shared table): 7 days. */
export const MAX_TIMEOUT_SEC = 7 * 24 * 3600;

/**
 * The one --timeout of the subcommands (compare, accept, locate, workload): a duration (seconds, or 90s, 30m, 2h, 1d),
 * whole seconds, 0 = no limit, at most 7 days. Each command says what it limits and its default. A run's -T is
 * nccl-tests' int (the flag table).
 */
export function timeoutFlag<V extends number | null>(
  dflt: V,
  group: string,
  help: string,
  extra: Omit<Extra, 'backends' | 'about' | 'preference'> = {},
): ValueFlag<'timeoutSec', V extends number ? number : number | null> {
  return {
    kind: 'duration',
    long: 'timeout',
    field: 'timeoutSec',
    default: dflt,
    what: 'timeout',
    min: 0,
    max: MAX_TIMEOUT_SEC,
    integer: true,
    value: '<time>',
    group,
    help: `${help}; seconds or with a unit (90s, 30m, 2h), 0 = no limit`,
    ...extra,
  } as unknown as ValueFlag<'timeoutSec', V extends number ? number : number | null>;
}

/** -h/--help of a command: prints its help and exits (the rest of the command line is not read). */
export function helpFlag(group: string): ActionFlag {
  return { kind: 'action', short: 'h', long: 'help', action: 'help', group, help: 'print this help and exit' };
}

/** An option record of a command's own table, typed by its field and value (the flag table's shape). */
export const option = <F extends string, V>(f: ValueFlag<F, V>): ValueFlag<F, V> => f;

const MIB = 1024 * 1024;
const NCCL: readonly BackendName[] = ['nccl'];
const GLOO: readonly BackendName[] = ['gloo'];
const RANKS = 'Ranks, devices and NCCL features';
const TIMING = 'Iterations and timing';
const DATA = 'Data and checking';
const LAUNCH = 'collbench launch';

/** Marks a run flag that the commands starting runs pass on (FlagCommon.passOn), in its type too. */
const passOn = <T extends ValueFlag>(f: T): T & { passOn: true } => ({ ...f, passOn: true });

/** Every flag, in nccl-tests' usage order, then collbench's additions. */
export const FLAGS = Object.freeze([
  passOn(
    int(
      't',
      'nthreads',
      'nThreads',
      1,
      'thread count',
      1,
      undefined,
      RANKS,
      'threads per process, each driving -g GPUs',
      { value: '<num threads>', backends: NCCL, about: 'threads driving GPUs' },
    ),
  ),
  passOn(
    int(
      'g',
      'ngpus',
      'nGpus',
      1,
      'GPUs per thread',
      1,
      undefined,
      RANKS,
      'GPUs per thread; ranks = processes × threads × GPUs',
      { value: '<gpus per thread>', backends: NCCL, about: 'GPUs per thread' },
    ),
  ),
  size('b', 'minbytes', 'minBytes', 32 * MIB, 'Sizes', 'first size of the sweep', { value: '<min size in bytes>' }),
  size('e', 'maxbytes', 'maxBytes', 32 * MIB, 'Sizes', 'last size of the sweep (inclusive)', {
    value: '<max size in bytes>',
  }),
  size('i', 'stepbytes', 'stepBytes', 1 * MIB, 'Sizes', 'additive step, used when -f is 1', {
    value: '<increment size>',
  }),
  int(
    'f',
    'stepfactor',
    'stepFactor',
    1,
    'step factor',
    1,
    undefined,
    'Sizes',
    'multiplicative step, an integer; 1 = add -i instead',
    { value: '<increment factor>' },
  ),
  int('n', 'iters', 'iters', 20, 'iteration count', 1, undefined, TIMING, 'timed iterations per row', {
    value: '<iteration count>',
  }),
  int(
    'm',
    'agg_iters',
    'aggIters',
    1,
    'aggregated iteration count',
    1,
    undefined,
    TIMING,
    'operations issued together (one group) per iteration',
    { value: '<aggregated iteration count>' },
  ),
  int(
    'w',
    'warmup_iters',
    'warmupIters',
    1,
    'warm-up iteration count',
    0,
    undefined,
    TIMING,
    'warm-up operations per warm-up size (min, 2·min, … ≤ max)',
    { value: '<warmup iteration count>' },
  ),
  int(
    'N',
    'run_cycles',
    'runCycles',
    1,
    'cycle count (0 = forever)',
    0,
    undefined,
    TIMING,
    'run & print the whole sweep this many times; 0 = forever',
    { value: '<cycle count>' },
  ),
  int(
    'p',
    'parallel_init',
    'parallelInit',
    0,
    'parallel init',
    0,
    1,
    RANKS,
    'threads initialise their communicators and buffers concurrently',
    { value: '<0/1>', backends: NCCL },
  ),
  int(
    'c',
    'check',
    'check',
    1,
    'check iteration count',
    0,
    undefined,
    DATA,
    'correctness-check operations per row half; 0 = no check (#wrong shows N/A)',
    { value: '<check iteration count>' },
  ),
  list('o', 'op', 'ops', OPS, 'sum', 'op', DATA, 'reduction op, or all', {
    value: '<sum/prod/min/max/avg/mulsum/all>',
  }),
  list(
    'd',
    'datatype',
    'dtypes',
    DTYPES,
    'float',
    'datatype',
    DATA,
    'datatype (int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2), or all',
    { value: '<nccltype/all>' },
  ),
  int(
    'r',
    'root',
    'root',
    0,
    'root (-1 = every root)',
    -1,
    undefined,
    DATA,
    'root rank of rooted collectives; -1 = every root in turn',
    { value: '<root>' },
  ),
  int(
    'z',
    'blocking',
    'blocking',
    0,
    'blocking mode',
    0,
    3,
    TIMING,
    '0 = ops back to back, 1 = wait + barrier after each op (-m), 2 = wait after each op (no barrier), ' +
      '3 = wait + barrier after each iteration (-n), timing only the part before the barrier',
    { value: '<0/1/2/3>' },
  ) as ValueFlag<'blocking', 0 | 1 | 2 | 3>,
  int(
    'y',
    'stream_null',
    'streamNull',
    0,
    'stream_null',
    0,
    1,
    RANKS,
    'use the default (NULL) CUDA stream instead of created non-blocking streams',
    { value: '<0/1>', backends: NCCL, about: 'CUDA streams' },
  ),
  // nccl-tests' -T: an int read as strtol(…, 0) reads it (not --timeout's duration of the subcommands), any size.
  {
    ...int(
      'T',
      'timeout',
      'timeoutSec',
      0,
      'timeout in seconds (0 = off)',
      0,
      undefined,
      TIMING,
      'abort and fail when one wait for completion takes longer; 0 = no limit; not given = a default watchdog: ' +
        "max(120 s, 10 × the wait's expected time from its size and the slowest bandwidth measured)",
      { value: '<time in seconds>', defaultText: 'default watchdog' },
    ),
    default: null,
  } as ValueFlag<'timeoutSec', number | null>,
  int(
    'G',
    'cudagraph',
    'cudaGraph',
    0,
    'CUDA graph launch count',
    0,
    undefined,
    RANKS,
    'capture the timed operations in a CUDA graph and launch it this many times; 0 = no graph',
    { value: '<num graph launches>', backends: NCCL, about: 'CUDA graphs' },
  ),
  bool(
    'C',
    'report_cputime',
    'reportCpuTime',
    'report_cputime',
    TIMING,
    'report host enqueue time (cputime) instead of completion time',
    { value: '<0/1>' },
  ),
  bool(
    'S',
    'report_timestamps',
    'reportTimestamps',
    'report_timestamps',
    'Output',
    'append a local timestamp to each row',
    { value: '<0/1>' },
  ),
  output(
    'J',
    'output_file',
    'jsonFile',
    'Output',
    'also write the run as a JSON report to this file (collbench report schema, see --json-format), ' +
      'rewritten atomically after every row; - = stdout',
    { defaultText: 'none' },
  ),
  int(
    'a',
    'average',
    'average',
    1,
    'average mode',
    0,
    3,
    TIMING,
    'combine per-rank times: 0 = rank 0, 1 = average, 2 = min, 3 = max',
    { value: '<0/1/2/3>' },
  ) as ValueFlag<'average', 0 | 1 | 2 | 3>,
  int(
    'R',
    'local_register',
    'localRegister',
    0,
    'registration mode',
    0,
    2,
    RANKS,
    'buffer registration: 0 = none, 1 = local (ncclCommRegister), 2 = symmetric window',
    { value: '<0/1/2>', backends: NCCL, about: 'NCCL buffer registration' },
  ),
  int(
    'x',
    'cta_policy',
    'ctaPolicy',
    -1,
    'CTA policy (-1 = unset)',
    -1,
    2,
    RANKS,
    'NCCL CTA policy: 0 = default, 1 = efficiency, 2 = zero',
    { value: '<0/1/2>', defaultText: 'not set', backends: NCCL, about: 'NCCL CTA policy' },
  ),
  int(
    'D',
    'device_implementation',
    'deviceImpl',
    0,
    'device implementation',
    0,
    4,
    RANKS,
    "all_reduce (sum) through collbench's own NCCL device-API kernel instead of ncclAllReduce: 1 = LSA, 2 = LSA " +
      'vectorized, 3 = multimem, 4 = multimem vectorized; needs -R 2 and NCCL 2.28 or newer; 0 = NCCL host call',
    { value: '<implementation number>', backends: NCCL, about: 'NCCL device API' },
  ),
  int('V', 'device_cta_count', 'deviceCtaCount', 16, 'device CTA count', 1, 128, RANKS, 'CTAs for -D kernels, 1..128', {
    value: '<number>',
    backends: NCCL,
    about: 'CTAs of NCCL device-API kernels',
  }),
  bool('M', 'memory', 'memoryReport', 'memory report', 'Output', 'print the GPU memory usage line in the footer', {
    value: '<0/1>',
    backends: NCCL,
    about: 'GPU memory report',
  }),
  int(
    'u',
    'unalign',
    'unalign',
    0,
    'misalignment in elements',
    0,
    undefined,
    DATA,
    'misalign send and receive buffers by this many elements',
    { value: '<index of first element>' },
  ),
  bool(
    'I',
    'per_iter_timing',
    'perIterTiming',
    'per-iteration timing',
    TIMING,
    'time every iteration and add i_min i_max i_p99 i_cv% columns (best with -z 0, 2 or 3)',
    { value: '<0/1>' },
  ),
  int(
    'K',
    'per_iter_skip',
    'perIterSkip',
    0,
    'per-iteration skip',
    0,
    undefined,
    TIMING,
    'leave the first samples out of the -I statistics; 0..n-1, needs -I 1',
    { value: '<count>' },
  ),
  // collbench additions
  real(
    'target-rsd',
    'targetRsdPct',
    'target relative standard deviation (%)',
    0,
    100,
    TIMING,
    'per row half, double the iterations (from -n) until the relative standard deviation of the mean time ' +
      '(cv of the per-iteration samples / sqrt(n)) is at most this many percent, or the half would pass 10 s; turns on ' +
      '-I 1; the spread reached is reported',
    { value: '<percent>', defaultText: 'off' },
  ),
  duration(
    'duration',
    'durationSec',
    TIMING,
    'soak: repeat the sweep (as -N 0) until this much time has passed, e.g. 90s, 30m, 2h; every rank stops after ' +
      'the same row',
    { value: '<time>', defaultText: 'off' },
  ),
  real(
    'warn-busbw',
    'warnBusBw',
    'warning threshold of bus bandwidth (GB/s)',
    0,
    undefined,
    'Output',
    'health threshold: a warning line for every cycle (-N, --duration) whose average busbw is below it, and exit 7 ' +
      'at the end if any was',
    { value: '<GB/s>', defaultText: 'off' },
  ),
  text(
    undefined,
    'prom',
    'promFile',
    'Output',
    'write Prometheus text-format metrics (node_exporter textfile collector), rewritten atomically after every cycle',
    {
      value: '<file.prom>',
      defaultText: 'none',
      check: (v) =>
        v.trim() === ''
          ? 'output file name is empty'
          : v === '-'
            ? 'Prometheus metrics go to a file, not stdout'
            : null,
    },
  ),
  passOn({
    ...int(
      undefined,
      'np',
      'np',
      0,
      'rank count',
      1,
      undefined,
      LAUNCH,
      're-run this command with N ranks: under mpirun, or (--backend gloo) as N local processes',
      { value: '<N>', defaultText: 'this process only' },
    ),
    default: null,
  } as ValueFlag<'np', number | null>),
  passOn(
    text(undefined, 'hosts', 'hosts', LAUNCH, 'mpirun host list, host[:slots],…; needs --np', {
      value: '<h1,h2:4>',
      defaultText: 'local host',
      check: (v) => {
        // mpirun --host syntax: host[:slots],… (slots ≥ 1)
        const bad = v.split(',').find((e) => !/^[^\s,:]+(?::[1-9]\d*)?$/.test(e));
        return bad === undefined
          ? null
          : `invalid host entry ${quoted(bad)} in ${quoted(v)}; expected host[:slots],… e.g. h1,h2:4`;
      },
    }),
  ),
  passOn(
    toggle(
      'oversubscribe',
      'oversubscribe',
      LAUNCH,
      'start more --np ranks than this host has cores (or --hosts ' +
        'gives slots); without it such a --np is refused (exit 2): every rank competes for the cores and the timings mean little',
    ),
  ),
  passOn({
    ...choice('backend', 'backend', BACKEND_NAMES, 'nccl', 'backend', LAUNCH, 'communication library to use', {
      value: `<${BACKEND_NAMES.join('|')}>`,
      defaultText: 'best available',
    }),
    default: null,
  } as ValueFlag<'backend', BackendName | null>),
  quiet('Output', 'no progress bar on stderr (it is drawn only when stderr is a terminal)'),
  choice(
    'json-format',
    'jsonFormat',
    JSON_FORMATS,
    'collbench',
    'JSON format',
    'Output',
    'layout of the -J file: collbench (versioned schema, schema/collbench-report.v2.schema.json) or ' +
      'nccl-tests (its -J "version": 3 layout, for tools such as analyze_perf_json.py)',
    { value: '<collbench|nccl-tests>' },
  ),
  output(undefined, 'csv', 'csvFile', 'Output', 'write one CSV line per row half (columns with units); - = stdout', {
    defaultText: 'none',
  }),
  output(undefined, 'md', 'mdFile', 'Output', 'write the run as a Markdown document; - = stdout', {
    defaultText: 'none',
  }),
  output(
    undefined,
    'junit',
    'junitFile',
    'Output',
    'write JUnit XML: one test case per row half, failed by #wrong > 0 or a failed threshold; - = stdout',
    { defaultText: 'none' },
  ),
  output(
    undefined,
    'html',
    'htmlFile',
    'Output',
    'write a self-contained HTML page with busbw and time charts (per-rank heatmap with -I 1); - = stdout',
    { defaultText: 'none' },
  ),
  force(
    'Output',
    'replace output files that already exist (-J, --csv, --md, --junit, --html); without it an existing file is ' +
      'refused before the run starts (exit 2), so a run never silently overwrites an earlier result',
  ),
  choice(
    'format',
    'format',
    TABLE_FORMATS,
    'nccl-tests',
    'table format',
    'Output',
    'the live table: nccl-tests text table, or pretty boxed tables per sweep. When a report goes to ' +
      'stdout (-), the table goes to stderr instead',
    { value: '<nccl-tests|pretty>' },
  ),
  passOn(
    choice(
      'gloo-algo',
      'glooAlgo',
      GLOO_ALGOS,
      'default',
      'Gloo all_reduce algorithm',
      LAUNCH,
      "gloo all_reduce algorithm: default (Gloo's choice), ring, bcube (new API), legacy_ring, " +
        'legacy_ring_chunked, legacy_halving_doubling, legacy_bcube (legacy classes); reduce_scatter takes ' +
        'default, ring, bcube or legacy_halving_doubling; needs --backend gloo',
      { value: '<algorithm>', backends: GLOO },
    ),
  ),
  passOn(
    text(
      undefined,
      'gloo-store',
      'glooStore',
      LAUNCH,
      'gloo rendezvous store: a directory every rank sees, or a Redis server',
      {
        value: '<file:DIR|redis://HOST:PORT>',
        defaultText: 'a private directory (--np), else per launcher',
        backends: GLOO,
        check: (v) =>
          /^redis:\/\/.*@/.test(v)
            ? REDIS_PASSWORD_IN_URL
            : /^file:.+$/.test(v) || /^redis:\/\/[^\s:/]+(?::\d{1,5})?$/.test(v)
              ? null
              : `invalid store ${quoted(v)}; expected file:DIR (a directory every rank sees) or redis://HOST:PORT`,
      },
    ),
  ),
  passOn(
    text(
      undefined,
      'gloo-iface',
      'glooIface',
      LAUNCH,
      "network interface name or local address for Gloo's TCP transport",
      {
        value: '<iface|address>',
        defaultText: 'loopback on one host, else the host name',
        backends: GLOO,
        check: (v) => (/^[^\s]+$/.test(v) ? null : `invalid interface or address ${quoted(v)}`),
      },
    ),
  ),
  toggle(
    'links',
    'links',
    'Output',
    "load collbench's NCCL profiler plugin (NCCL_PROFILER_PLUGIN) and name a slow link from NCCL's own proxy-step " +
      'timings: # slow link and # nccl algo lines, JSON links (docs/links.md); when NCCL_PROFILER_PLUGIN is already set, ' +
      'one line says so and the run goes on without links',
    { backends: NCCL },
  ),
  passOn(
    text(undefined, 'nccl-lib', 'ncclLib', LAUNCH, 'libnccl.so.2 (or its directory) for the nccl backend', {
      value: '<path>',
      backends: NCCL,
      preference: true,
      check: (v) => (v.trim() === '' ? 'library path is empty' : null),
      defaultText: 'COLLBENCH_NCCL_LIB, then libnccl.so.2 from the system loader, then Python site-packages',
    }),
  ),
] as const);

/** The run flags marked passOn: how ranks are started (launcher, hosts, backend and its transport, threads and GPUs
 *  per process), which `collbench accept` and `collbench workload` take and pass on to every run. */
export type PassOnFlag = Extract<(typeof FLAGS)[number], { passOn: true }>;
export const PASS_ON_FLAGS: readonly PassOnFlag[] = FLAGS.filter(
  (f): f is PassOnFlag => 'passOn' in f && f.passOn === true,
);

/** The run's flag that sets `field`, for a command that takes it with its own default or help (replay, workload). */
type RunFlagOf<F> = Extract<(typeof FLAGS)[number], { field: F }>;
export const runFlag = <F extends (typeof FLAGS)[number]['field']>(field: F): RunFlagOf<F> =>
  FLAGS.find((f) => f.field === field) as RunFlagOf<F>;

/** Run flags a command takes as they are, listed in its --help under `group` (accept, replay, workload). */
export const inGroup = <F extends FlagSpec>(flags: readonly F[], group: string): F[] =>
  flags.map((f) => ({ ...f, group }));

/** -h and --version: they end parsing, as nccl-tests prints its usage as soon as getopt reaches -h. */
export const ACTIONS: readonly ActionFlag[] = Object.freeze([
  { kind: 'action', short: 'h', long: 'help', action: 'help', group: 'Other', help: 'print this help and exit' },
  { kind: 'action', long: 'version', action: 'version', group: 'Other', help: 'print the version and exit' },
]);

type AnyValueFlag = (typeof FLAGS)[number];

/** The options that flags set, field by field, typed from the table. */
export type OptionValues = {
  readonly [K in AnyValueFlag as K['field']]: K extends ValueFlag<string, infer V> ? V : never;
};
export type OptionField = keyof OptionValues;

/** Options after parsing and validation: the single input of a run (frozen). */
export type ResolvedOptions = OptionValues & {
  readonly collective: CollectiveName;
  /** e.g. "all_reduce_perf", printed in the preamble. */
  readonly program: string;
};

/** Each field's default (nccl-tests' src/common.cu globals, plus collbench's additions). */
export const DEFAULTS: OptionValues = Object.freeze(
  Object.fromEntries(FLAGS.map((f) => [f.field, f.default])),
) as unknown as OptionValues;

/** How messages name a flag: `-b` for nccl-tests flags, `--np` for collbench's. */
export function flagName(f: FlagCommon): string {
  return f.short ? `-${f.short}` : `--${f.long}`;
}
