// The flag table of the nccl-tests-compatible binaries and the command-line parser it drives.
// Letters, long names and defaults mirror nccl-tests' getopt_long table and usage text (main() in
// src/common.cu); collbench adds --np/--hosts/--backend/--quiet/--version (long forms only, so no
// letter nccl-tests may take later is used up). The table drives parsing, --help and value checks.
//
// Why not yargs here: nccl-tests users type getopt syntax, and yargs-parser splits `-dfloat` or
// `-Jout.json` into single-letter flags, treats `-J -x.json` as two flags and coerces values; a
// getopt_long work-alike over the table is short and exact (`-b8`, `-b 8`, `--minbytes=8`,
// `--minbytes 8`, `--min 8`, `-r -1`, options after positionals, `--` ends options).

import { COLLECTIVES, type CollectiveName, type ResolvedOptions } from '../core/types.js';
import { UsageError } from '../config/errors.js';
import {
  BACKENDS, DEFAULTS, parseCollective, resolveOptions,
  type FieldNames, type OptionField, type OptionInput,
} from '../config/resolve.js';
import { formatSize } from '../config/sizes.js';

export type FlagArg = 'size' | 'int' | 'name' | 'text' | 'none';

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

export interface FlagSpec {
  /** nccl-tests short letter; absent for collbench's long-only additions. */
  short?: string;
  /** Long name (nccl-tests spelling, underscores included). */
  long: string;
  /** ResolvedOptions field the value goes to; absent for --help / --version. */
  field?: OptionField;
  /** Value syntax: size (K/M/G), int (strtol base 0), name (from a list), text, none (a switch). */
  arg: FlagArg;
  /** Placeholder in --help. */
  value?: string;
  /** Meaning, one sentence (nccl-tests' usage wording where it has one). */
  help: string;
  group: FlagGroup;
  /** Default as --help shows it when it is not simply the DEFAULTS value. */
  defaultText?: string;
  /** Only the NCCL (GPU) backend implements it; other backends refuse it at run time. */
  ncclOnly?: boolean;
}

/** Every flag, in nccl-tests' usage order, then collbench's additions. */
export const FLAGS: readonly FlagSpec[] = Object.freeze([
  { short: 't', long: 'nthreads', field: 'nThreads', arg: 'int', value: '<num threads>', group: 'Ranks, devices and NCCL features',
    help: 'threads per process, each driving -g GPUs' },
  { short: 'g', long: 'ngpus', field: 'nGpus', arg: 'int', value: '<gpus per thread>', group: 'Ranks, devices and NCCL features',
    help: 'GPUs per thread; ranks = processes × threads × GPUs', ncclOnly: true },
  { short: 'b', long: 'minbytes', field: 'minBytes', arg: 'size', value: '<min size in bytes>', group: 'Sizes',
    help: 'first size of the sweep' },
  { short: 'e', long: 'maxbytes', field: 'maxBytes', arg: 'size', value: '<max size in bytes>', group: 'Sizes',
    help: 'last size of the sweep (inclusive)' },
  { short: 'i', long: 'stepbytes', field: 'stepBytes', arg: 'size', value: '<increment size>', group: 'Sizes',
    help: 'additive step, used when -f is 1' },
  { short: 'f', long: 'stepfactor', field: 'stepFactor', arg: 'int', value: '<increment factor>', group: 'Sizes',
    help: 'multiplicative step, an integer; 1 = add -i instead' },
  { short: 'n', long: 'iters', field: 'iters', arg: 'int', value: '<iteration count>', group: 'Iterations and timing',
    help: 'timed iterations per row' },
  { short: 'm', long: 'agg_iters', field: 'aggIters', arg: 'int', value: '<aggregated iteration count>', group: 'Iterations and timing',
    help: 'operations issued together (one group) per iteration' },
  { short: 'w', long: 'warmup_iters', field: 'warmupIters', arg: 'int', value: '<warmup iteration count>', group: 'Iterations and timing',
    help: 'warm-up operations per warm-up size (min, 2·min, … ≤ max)' },
  { short: 'N', long: 'run_cycles', field: 'runCycles', arg: 'int', value: '<cycle count>', group: 'Iterations and timing',
    help: 'run & print the whole sweep this many times; 0 = forever' },
  { short: 'p', long: 'parallel_init', field: 'parallelInit', arg: 'int', value: '<0/1>', group: 'Ranks, devices and NCCL features',
    help: 'threads initialise their communicators and buffers concurrently' },
  { short: 'c', long: 'check', field: 'check', arg: 'int', value: '<check iteration count>', group: 'Data and checking',
    help: 'correctness-check operations per row half; 0 = no check (#wrong shows N/A)' },
  { short: 'o', long: 'op', field: 'ops', arg: 'name', value: '<sum/prod/min/max/avg/mulsum/all>', group: 'Data and checking',
    help: 'reduction op, or all' },
  { short: 'd', long: 'datatype', field: 'dtypes', arg: 'name', value: '<nccltype/all>', group: 'Data and checking',
    help: 'datatype (int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2), or all' },
  { short: 'r', long: 'root', field: 'root', arg: 'int', value: '<root>', group: 'Data and checking',
    help: 'root rank of rooted collectives; -1 = every root in turn' },
  { short: 'z', long: 'blocking', field: 'blocking', arg: 'int', value: '<0/1/2/3>', group: 'Iterations and timing',
    help: '0 = ops back to back, 1 = wait + barrier after each op (-m), 2 = wait after each op (no barrier), ' +
      '3 = wait + barrier after each iteration (-n), timing only the part before the barrier' },
  { short: 'y', long: 'stream_null', field: 'streamNull', arg: 'int', value: '<0/1>', group: 'Ranks, devices and NCCL features',
    help: 'use the default (NULL) CUDA stream instead of created non-blocking streams', ncclOnly: true },
  { short: 'T', long: 'timeout', field: 'timeoutSec', arg: 'int', value: '<time in seconds>', group: 'Iterations and timing',
    help: 'abort and fail when one wait for completion takes longer; 0 = no limit' },
  { short: 'G', long: 'cudagraph', field: 'cudaGraph', arg: 'int', value: '<num graph launches>', group: 'Ranks, devices and NCCL features',
    help: 'capture the timed operations in a CUDA graph and launch it this many times; 0 = no graph', ncclOnly: true },
  { short: 'C', long: 'report_cputime', field: 'reportCpuTime', arg: 'int', value: '<0/1>', group: 'Iterations and timing',
    help: 'report host enqueue time (cputime) instead of completion time' },
  { short: 'S', long: 'report_timestamps', field: 'reportTimestamps', arg: 'int', value: '<0/1>', group: 'Output',
    help: 'append a local timestamp to each row' },
  { short: 'J', long: 'output_file', field: 'jsonFile', arg: 'text', value: '<file>', group: 'Output',
    help: 'also write the run as a JSON report to this file (collbench report schema, see --json-format), ' +
      'rewritten atomically after every row; - = stdout', defaultText: 'none' },
  { short: 'a', long: 'average', field: 'average', arg: 'int', value: '<0/1/2/3>', group: 'Iterations and timing',
    help: 'combine per-rank times: 0 = rank 0, 1 = average, 2 = min, 3 = max' },
  { short: 'R', long: 'local_register', field: 'localRegister', arg: 'int', value: '<0/1/2>', group: 'Ranks, devices and NCCL features',
    help: 'buffer registration: 0 = none, 1 = local (ncclCommRegister), 2 = symmetric window', ncclOnly: true },
  { short: 'x', long: 'cta_policy', field: 'ctaPolicy', arg: 'int', value: '<0/1/2>', group: 'Ranks, devices and NCCL features',
    help: 'NCCL CTA policy: 0 = default, 1 = efficiency, 2 = zero', defaultText: 'not set', ncclOnly: true },
  { short: 'D', long: 'device_implementation', field: 'deviceImpl', arg: 'int', value: '<implementation number>', group: 'Ranks, devices and NCCL features',
    help: 'use device-API kernel N instead of the NCCL host call; needs -R 2; 0 = NCCL host call', ncclOnly: true },
  { short: 'V', long: 'device_cta_count', field: 'deviceCtaCount', arg: 'int', value: '<number>', group: 'Ranks, devices and NCCL features',
    help: 'CTAs for -D kernels, 1..128', ncclOnly: true },
  { short: 'M', long: 'memory', field: 'memoryReport', arg: 'int', value: '<0/1>', group: 'Output',
    help: 'print the GPU memory usage line in the footer', ncclOnly: true },
  { short: 'u', long: 'unalign', field: 'unalign', arg: 'int', value: '<index of first element>', group: 'Data and checking',
    help: 'misalign send and receive buffers by this many elements' },
  { short: 'I', long: 'per_iter_timing', field: 'perIterTiming', arg: 'int', value: '<0/1>', group: 'Iterations and timing',
    help: 'time every iteration and add i_min i_max i_p99 i_cv% columns (best with -z 0, 2 or 3)' },
  { short: 'K', long: 'per_iter_skip', field: 'perIterSkip', arg: 'int', value: '<count>', group: 'Iterations and timing',
    help: 'leave the first samples out of the -I statistics; 0..n-1, needs -I 1' },
  { short: 'h', long: 'help', arg: 'none', group: 'Other', help: 'print this help and exit' },
  // collbench additions
  { long: 'np', field: 'np', arg: 'int', value: '<N>', group: 'collbench launch',
    help: 're-run this command with N ranks: under mpirun, or (--backend gloo) as N local processes', defaultText: 'this process only' },
  { long: 'hosts', field: 'hosts', arg: 'text', value: '<h1,h2:4>', group: 'collbench launch',
    help: 'mpirun host list, host[:slots],…; needs --np', defaultText: 'local host' },
  { long: 'backend', field: 'backend', arg: 'name', value: `<${BACKENDS.join('|')}>`, group: 'collbench launch',
    help: 'communication library to use', defaultText: 'best available' },
  { long: 'quiet', field: 'quiet', arg: 'none', group: 'Output',
    help: 'no progress bar on stderr (it is drawn only when stderr is a terminal)' },
  { long: 'json-format', field: 'jsonFormat', arg: 'name', value: '<collbench|nccl-tests>', group: 'Output',
    help: 'layout of the -J file: collbench (versioned schema, schema/collbench-report.v1.schema.json) or ' +
      'nccl-tests (its -J "version": 3 layout, for tools such as analyze_perf_json.py)' },
  { long: 'csv', field: 'csvFile', arg: 'text', value: '<file>', group: 'Output',
    help: 'write one CSV line per row half (columns with units); - = stdout', defaultText: 'none' },
  { long: 'md', field: 'mdFile', arg: 'text', value: '<file>', group: 'Output',
    help: 'write the run as a Markdown document; - = stdout', defaultText: 'none' },
  { long: 'junit', field: 'junitFile', arg: 'text', value: '<file>', group: 'Output',
    help: 'write JUnit XML: one test case per row half, failed by #wrong > 0 or a failed threshold; - = stdout',
    defaultText: 'none' },
  { long: 'html', field: 'htmlFile', arg: 'text', value: '<file>', group: 'Output',
    help: 'write a self-contained HTML page with busbw and time charts (per-rank heatmap with -I 1); - = stdout',
    defaultText: 'none' },
  { long: 'format', field: 'format', arg: 'name', value: '<nccl-tests|pretty>', group: 'Output',
    help: 'the live table: nccl-tests text table, or pretty boxed tables per sweep. When a report goes to ' +
      'stdout (-), the table goes to stderr instead' },
  { long: 'gloo-algo', field: 'glooAlgo', arg: 'name', value: '<algorithm>', group: 'collbench launch',
    help: 'gloo all_reduce algorithm: default (Gloo\'s choice), ring, bcube (new API), legacy_ring, ' +
      'legacy_ring_chunked, legacy_halving_doubling, legacy_bcube (legacy classes); reduce_scatter takes ' +
      'default, ring, bcube or legacy_halving_doubling; needs --backend gloo' },
  { long: 'gloo-store', field: 'glooStore', arg: 'text', value: '<file:DIR|redis://HOST:PORT>', group: 'collbench launch',
    help: 'gloo rendezvous store: a directory every rank sees, or a Redis server', defaultText: 'a private directory (--np), else per launcher' },
  { long: 'gloo-iface', field: 'glooIface', arg: 'text', value: '<iface|address>', group: 'collbench launch',
    help: 'network interface name or local address for Gloo\'s TCP transport', defaultText: 'loopback on one host, else the host name' },
  { long: 'nccl-lib', field: 'ncclLib', arg: 'text', value: '<path>', group: 'collbench launch',
    help: 'libnccl.so.2 (or its directory) for the nccl backend', ncclOnly: true,
    defaultText: 'COLLBENCH_NCCL_LIB, then libnccl.so.2 from the system loader, then Python site-packages' },
  { long: 'version', arg: 'none', group: 'Other', help: 'print the version and exit' },
] satisfies FlagSpec[]);

/** How error messages name each field: `-b` for nccl-tests flags, `--np` for collbench's. */
export const FIELD_NAMES: Readonly<FieldNames> = Object.freeze(Object.fromEntries(
  FLAGS.filter((f) => f.field !== undefined).map((f) => [f.field, f.short ? `-${f.short}` : `--${f.long}`]),
));

export type ParsedCommand =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'run'; options: ResolvedOptions };

const byShort = new Map(FLAGS.filter((f) => f.short).map((f) => [f.short!, f]));
const byLong = new Map(FLAGS.map((f) => [f.long, f]));

interface Tokens {
  stop?: 'help' | 'version';
  values: Map<OptionField, string | true>;
  positionals: string[];
}

/** getopt_long over FLAGS, with GNU permutation (options may follow positionals). */
function tokenize(argv: readonly string[]): Tokens {
  const values = new Map<OptionField, string | true>();
  const positionals: string[] = [];

  // Returns true when the flag ends parsing (-h / --version, the two without a field), as
  // nccl-tests prints its usage as soon as getopt reaches -h.
  const take = (spec: FlagSpec, value: string | true): boolean => {
    if (spec.field === undefined) return true;
    values.set(spec.field, value);
    return false;
  };
  const stopOf = (spec: FlagSpec): 'help' | 'version' => (spec.long === 'help' ? 'help' : 'version');

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const typed = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      let spec = byLong.get(typed);
      if (!spec) {
        // getopt_long accepts any unambiguous prefix of a long name.
        const matches = typed === '' ? [] : FLAGS.filter((f) => f.long.startsWith(typed));
        if (matches.length > 1) {
          throw new UsageError(`ambiguous option '--${typed}': could be ${matches.map((f) => `--${f.long}`).join(', ')}`);
        }
        if (matches.length === 0) throw new UsageError(`unknown option '--${typed}' (see --help)`);
        spec = matches[0];
      }
      let value: string | true = true;
      if (spec.arg === 'none') {
        if (eq >= 0) throw UsageError.forFlag(`--${spec.long}`, 'takes no value');
      } else if (eq >= 0) {
        value = arg.slice(eq + 1);
      } else if (i + 1 < argv.length) {
        value = argv[++i]; // a required argument is the next word, even if it starts with '-'
      } else {
        throw UsageError.forFlag(`--${spec.long}`, `missing value ${spec.value ?? ''}`.trimEnd());
      }
      if (take(spec, value)) return { stop: stopOf(spec), values, positionals };
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      // A cluster: switches may be grouped (`-h`), a letter that takes a value ends the cluster
      // with the rest of the word (`-b8`, `-r-1`) or, if nothing is left, the next word.
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j];
        const spec = byShort.get(letter);
        if (!spec) throw new UsageError(`unknown option '-${letter}' (see --help)`);
        if (spec.arg === 'none') {
          if (take(spec, true)) return { stop: stopOf(spec), values, positionals };
          continue;
        }
        let value: string;
        if (j + 1 < arg.length) value = arg.slice(j + 1);
        else if (i + 1 < argv.length) value = argv[++i];
        else throw UsageError.forFlag(`-${letter}`, `missing value ${spec.value ?? ''}`.trimEnd());
        if (take(spec, value)) return { stop: stopOf(spec), values, positionals };
        break;
      }
      continue;
    }
    positionals.push(arg);
  }
  return { values, positionals };
}

const PERF_RE = /^(.+?)_perf(?:_[A-Za-z0-9]+)?$/; // nccl-tests NAME_SUFFIX builds: all_reduce_perf_mpi

/** Binary name as run (`/usr/bin/all_reduce_perf`, `collbench.js`) → bare name. */
function programBase(program: string): string {
  const base = program.split(/[\\/]/).pop() ?? program;
  return base.replace(/\.(?:[cm]?js|ts|exe)$/i, '');
}

/**
 * The collective a `<name>_perf` binary runs, or null for any other name (the `collbench` front
 * end, which takes the collective as its first word). A `*_perf` name with an unknown collective
 * is a UsageError.
 */
export function collectiveFromProgram(program: string): CollectiveName | null {
  const m = PERF_RE.exec(programBase(program));
  if (!m) return null;
  if ((COLLECTIVES as readonly string[]).includes(m[1])) return m[1] as CollectiveName;
  throw new UsageError(`unknown collective binary '${programBase(program)}'; valid: ${COLLECTIVES.map((c) => `${c}_perf`).join(', ')}`);
}

function defaultText(spec: FlagSpec): string | null {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.field === undefined || spec.arg === 'none') return null;
  const value = DEFAULTS[spec.field];
  if (spec.arg === 'size') return formatSize(value as number);
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'boolean') return value ? '1' : '0';
  return value === null ? null : String(value);
}

const HELP_WIDTH = 100;
const HELP_COLUMN = 44;

function wrap(text: string, indent: number, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** --help text: nccl-tests' flags with their letters and long names, grouped, with defaults. */
export function helpText(program: string, collective: CollectiveName | null): string {
  const base = programBase(program);
  const isPerf = PERF_RE.test(base);
  const usage = isPerf
    ? `USAGE: ${base} [options]`
    : `USAGE: ${base} [run] ${collective ?? '<collective>'} [options]`;
  const out: string[] = [usage];
  if (!isPerf && collective === null) out.push(`  collectives: ${COLLECTIVES.join(' ')} (or their *_perf names)`);
  out.push('  Flags are those of nccl-tests (getopt syntax: -b8, -b 8, --minbytes=8, --minbytes 8).');
  out.push('  Sizes take a K, M or G suffix, 1024-based (128K, 1.5G, 1GB); integers may be 0x hex.');
  for (const group of GROUPS) {
    out.push('', `${group}:`);
    for (const spec of FLAGS.filter((f) => f.group === group)) {
      const head = `  ${spec.short ? `-${spec.short}, ` : '    '}--${spec.long}${spec.value ? ` ${spec.value}` : ''}`;
      const def = defaultText(spec);
      const body = `${spec.help}${spec.ncclOnly ? ' [NCCL]' : ''}${def !== null ? ` (default: ${def})` : ''}`;
      const pad = head.length + 2 <= HELP_COLUMN ? ' '.repeat(HELP_COLUMN - head.length) : `\n${' '.repeat(HELP_COLUMN)}`;
      out.push(`${head}${pad}${wrap(body, HELP_COLUMN, HELP_WIDTH)}`);
    }
  }
  out.push('', '[NCCL] = NCCL (GPU) backend only; other backends refuse it.');
  return `${out.join('\n')}\n`;
}

/**
 * Parses the arguments of one invocation (`argv` without node and script). `program` is the name it
 * was run as: `<collective>_perf` runs that collective; any other name (`collbench`) takes the
 * collective as first word: `collbench all_reduce -b 8`, `collbench run all_reduce -b 8`.
 * Throws UsageError for anything wrong; the result's options are frozen.
 */
export function parseCommandLine(argv: readonly string[], program: string): ParsedCommand {
  const perfCollective = collectiveFromProgram(program);
  const tokens = tokenize(argv);
  const positionals = [...tokens.positionals];

  let collective: CollectiveName | null = perfCollective;
  if (perfCollective === null) {
    if (positionals[0] === 'run') positionals.shift();
    const word = positionals.shift();
    if (word !== undefined) {
      try {
        collective = parseCollective(word);
      } catch (err) {
        if (tokens.stop === undefined) throw err; // --help / --version still win over a bad word
      }
    }
  }
  if (tokens.stop === 'help') return { kind: 'help', text: helpText(program, collective) };
  if (tokens.stop === 'version') return { kind: 'version' };

  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (see --help)`);
  if (collective === null) {
    throw new UsageError(`missing collective: ${programBase(program)} [run] <collective> [options]; valid: ${COLLECTIVES.join(', ')}`);
  }

  const input: OptionInput = {
    collective,
    program: perfCollective !== null ? programBase(program) : `${collective}_perf`,
  };
  const set = input as unknown as Record<string, string | boolean>;
  for (const [field, value] of tokens.values) set[field] = value;
  return { kind: 'run', options: resolveOptions(input, FIELD_NAMES) };
}
