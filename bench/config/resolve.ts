// resolveOptions(): defaults, value parsing, range checks and cross-checks → frozen ResolvedOptions.
// Defaults and ranges mirror nccl-tests' main() in src/common.cu; where nccl-tests prints a note and
// silently changes a flag (or loops forever) we refuse with a UsageError that names the flag.
// Used by the CLI (names = flag letters) and by programmatic callers (names = field names).

import {
  COLLECTIVES, DTYPES, GLOO_ALGOS, JSON_FORMATS, OPS, TABLE_FORMATS,
  type CollectiveName, type DTypeName, type GlooAlgo, type JsonFormat, type OpName, type ResolvedOptions, type TableFormat,
} from '../core/types.js';
import { UsageError } from './errors.js';
import { countSweepSizes, MIB, parseSize } from './sizes.js';

/** Fields that options set (everything but what the program name decides). */
export type OptionField = Exclude<keyof ResolvedOptions, 'collective' | 'program'>;
export type OptionValues = Omit<ResolvedOptions, 'collective' | 'program'>;

/** nccl-tests defaults (src/common.cu globals), plus collbench's additions. */
export const DEFAULTS: Readonly<OptionValues> = Object.freeze({
  nThreads: 1,
  nGpus: 1,
  minBytes: 32 * MIB,
  maxBytes: 32 * MIB,
  stepBytes: 1 * MIB,
  stepFactor: 1,
  iters: 20,
  aggIters: 1,
  warmupIters: 1,
  runCycles: 1,
  parallelInit: 0,
  check: 1,
  ops: Object.freeze(['sum']) as OpName[],
  dtypes: Object.freeze(['float']) as DTypeName[],
  root: 0,
  blocking: 0,
  streamNull: 0,
  timeoutSec: 0,
  cudaGraph: 0,
  reportCpuTime: false,
  reportTimestamps: false,
  jsonFile: null,
  average: 1,
  localRegister: 0,
  ctaPolicy: -1,
  deviceImpl: 0,
  deviceCtaCount: 16,
  memoryReport: false,
  unalign: 0,
  perIterTiming: false,
  perIterSkip: 0,
  np: null,
  hosts: null,
  backend: null,
  quiet: false,
  jsonFormat: 'collbench',
  csvFile: null,
  mdFile: null,
  junitFile: null,
  htmlFile: null,
  format: 'nccl-tests',
  glooAlgo: 'default',
  glooStore: null,
  glooIface: null,
  ncclLib: null,
});

export const BACKENDS = ['mpi', 'gloo', 'nccl'] as const;
export type BackendName = (typeof BACKENDS)[number];

/**
 * Most sizes one sweep may have. nccl-tests has no limit (`-b 1 -e 1G -i 1` is a billion rows that
 * would never finish); we refuse before building the list rather than run out of memory.
 */
export const MAX_SWEEP_SIZES = 1_000_000;

const INT_MAX = 2 ** 31 - 1; // the native side holds these in C `int`s

type NumberLike = number | string;
type BoolLike = boolean | number | string;

/**
 * What a caller may set. Strings are parsed as on the command line (sizes with K/M/G, integers as
 * strtol(…, 0) reads them); omitted fields take {@link DEFAULTS}.
 */
export interface OptionInput {
  collective: string;
  program?: string;
  nThreads?: NumberLike; nGpus?: NumberLike;
  minBytes?: NumberLike; maxBytes?: NumberLike; stepBytes?: NumberLike; stepFactor?: NumberLike;
  iters?: NumberLike; aggIters?: NumberLike; warmupIters?: NumberLike; runCycles?: NumberLike;
  parallelInit?: NumberLike; check?: NumberLike;
  ops?: string | readonly string[]; dtypes?: string | readonly string[];
  root?: NumberLike; blocking?: NumberLike; streamNull?: NumberLike; timeoutSec?: NumberLike;
  cudaGraph?: NumberLike; reportCpuTime?: BoolLike; reportTimestamps?: BoolLike;
  jsonFile?: string | null; average?: NumberLike; localRegister?: NumberLike; ctaPolicy?: NumberLike;
  deviceImpl?: NumberLike; deviceCtaCount?: NumberLike; memoryReport?: BoolLike; unalign?: NumberLike;
  perIterTiming?: BoolLike; perIterSkip?: NumberLike;
  np?: NumberLike | null; hosts?: string | null; backend?: string | null; quiet?: boolean;
  jsonFormat?: string; csvFile?: string | null; mdFile?: string | null; junitFile?: string | null;
  htmlFile?: string | null; format?: string;
  glooAlgo?: string; glooStore?: string | null; glooIface?: string | null;
  ncclLib?: string | null;
}

/** How messages name each field (`-f`, `--np`); fields without a name are called by field name. */
export type FieldNames = Partial<Record<OptionField, string>>;

// strtol(s, NULL, 0) minus its silent garbage: sign, then 0x hex, 0 octal or decimal, nothing else.
const INT_RE = /^\s*([+-]?)(?:0[xX]([0-9a-fA-F]+)|0([0-7]*)|([1-9]\d*))\s*$/;

/**
 * Parses an integer the way nccl-tests' strtol(…, 0) does — `20`, `0x14`, `024` (octal), `-1` —
 * but returns undefined for anything strtol would only partly read (`abc`, `1.5`, `08`, `20x`).
 */
export function parseInteger(text: string): number | undefined {
  const m = INT_RE.exec(text);
  if (!m) return undefined;
  const [, sign, hex, oct, dec] = m;
  const magnitude =
    hex !== undefined ? parseInt(hex, 16) : oct !== undefined ? (oct === '' ? 0 : parseInt(oct, 8)) : Number(dec);
  if (!Number.isSafeInteger(magnitude)) return undefined;
  return sign === '-' ? (magnitude === 0 ? 0 : -magnitude) : magnitude;
}

/** `got X` text: numbers and words as they are, empty or spaced strings quoted. */
function shown(value: unknown): string {
  const s = String(value);
  return s === '' || /\s/.test(s) ? `'${s}'` : s;
}

function listText(values: readonly (string | number)[]): string {
  return values.length <= 1 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}

interface IntRule { what: string; min: number; max?: number }

/** Single-field integer rules: what the value is called and its valid range (nccl-tests usage). */
const INT_RULES: Partial<Record<OptionField, IntRule>> = {
  nThreads: { what: 'thread count', min: 1 },
  nGpus: { what: 'GPUs per thread', min: 1 },
  stepFactor: { what: 'step factor', min: 1 },
  iters: { what: 'iteration count', min: 1 },
  aggIters: { what: 'aggregated iteration count', min: 1 },
  warmupIters: { what: 'warm-up iteration count', min: 0 },
  runCycles: { what: 'cycle count (0 = forever)', min: 0 },
  parallelInit: { what: 'parallel init', min: 0, max: 1 },
  check: { what: 'check iteration count', min: 0 },
  root: { what: 'root (-1 = every root)', min: -1 },
  blocking: { what: 'blocking mode', min: 0, max: 3 },
  streamNull: { what: 'stream_null', min: 0, max: 1 },
  timeoutSec: { what: 'timeout in seconds (0 = off)', min: 0 },
  cudaGraph: { what: 'CUDA graph launch count', min: 0 },
  average: { what: 'average mode', min: 0, max: 3 },
  localRegister: { what: 'registration mode', min: 0, max: 2 },
  ctaPolicy: { what: 'CTA policy (-1 = unset)', min: -1, max: 2 },
  deviceImpl: { what: 'device implementation', min: 0 },
  deviceCtaCount: { what: 'device CTA count', min: 1, max: 128 },
  unalign: { what: 'misalignment in elements', min: 0 },
  perIterSkip: { what: 'per-iteration skip', min: 0 },
  np: { what: 'rank count', min: 1 },
};

const BOOL_WHAT: Partial<Record<OptionField, string>> = {
  reportCpuTime: 'report_cputime',
  reportTimestamps: 'report_timestamps',
  memoryReport: 'memory report',
  perIterTiming: 'per-iteration timing',
};

function rangeText(rule: IntRule): string {
  const max = rule.max ?? INT_MAX;
  if (max - rule.min <= 3) {
    const values: number[] = [];
    for (let v = rule.min; v <= max; v++) values.push(v);
    return listText(values);
  }
  return rule.max === undefined ? `an integer ≥ ${rule.min}` : `an integer between ${rule.min} and ${rule.max}`;
}

/** A collective name, or its `*_perf` alias, checked against COLLECTIVES. */
export function parseCollective(name: string): CollectiveName {
  const bare = name.endsWith('_perf') ? name.slice(0, -'_perf'.length) : name;
  if ((COLLECTIVES as readonly string[]).includes(bare)) return bare as CollectiveName;
  throw new UsageError(`unknown collective '${name}'; valid: ${COLLECTIVES.join(', ')}`);
}

/**
 * Validates `input` and returns the frozen options of one run. Throws UsageError, whose message
 * starts with the offending flag as `names` spells it (`-f: step factor must be …`).
 */
export function resolveOptions(input: OptionInput, names: FieldNames = {}): ResolvedOptions {
  const name = (field: OptionField): string => names[field] ?? field;
  const fail = (field: OptionField, detail: string): never => {
    throw UsageError.forFlag(name(field), detail);
  };

  const int = (field: OptionField): number => {
    const rule = INT_RULES[field]!;
    const value = input[field as keyof OptionInput] as NumberLike | null | undefined;
    if (value === undefined || value === null) return DEFAULTS[field] as number;
    let n: number | undefined;
    if (typeof value === 'number') {
      n = Number.isSafeInteger(value) ? value : undefined;
    } else {
      if (field === 'root' && value.trim().toLowerCase() === 'all') {
        fail(field, `'all' is not a root (nccl-tests reads it as 0); use ${name(field)} -1 to run every root`);
      }
      n = parseInteger(value);
      if (n === undefined && /^\s*[+-]?0\d*[89]/.test(value)) {
        fail(field, `${rule.what} must be ${rangeText(rule)}, got ${shown(value)} (a leading 0 means octal)`);
      }
    }
    if (n === undefined || n < rule.min || n > (rule.max ?? INT_MAX)) {
      fail(field, `${rule.what} must be ${rangeText(rule)}, got ${shown(value)}`);
    }
    return n!;
  };

  const bool = (field: OptionField): boolean => {
    const value = input[field as keyof OptionInput] as BoolLike | undefined;
    if (value === undefined) return DEFAULTS[field] as boolean;
    if (typeof value === 'boolean') return value;
    const n = typeof value === 'number' ? value : parseInteger(value);
    if (n !== 0 && n !== 1) fail(field, `${BOOL_WHAT[field]} must be 0 or 1, got ${shown(value)}`);
    return n === 1;
  };

  const size = (field: 'minBytes' | 'maxBytes' | 'stepBytes'): number => {
    const value = input[field];
    if (value === undefined) return DEFAULTS[field];
    if (typeof value === 'string') return parseSize(value, name(field));
    if (!Number.isSafeInteger(value) || value < 0) {
      fail(field, `size must be a whole number of bytes ≥ 0, got ${shown(value)}`);
    }
    return value;
  };

  function list<T extends string>(field: 'ops' | 'dtypes', valid: readonly T[], what: string): T[] {
    const value = input[field];
    if (value === undefined) return [...(DEFAULTS[field] as readonly string[] as readonly T[])];
    const given = typeof value === 'string' ? [value] : [...value];
    if (given.length === 0) fail(field, `needs at least one ${what}`);
    const out: T[] = [];
    for (const item of given) {
      // nccl-tests matches names exactly (case-sensitive); `all` is every name in nccl-tests order.
      const expanded = item === 'all' ? valid : (valid as readonly string[]).includes(item) ? [item as T] : null;
      if (expanded === null) fail(field, `unknown ${what} '${item}'; valid: ${valid.join(', ')}, all`);
      for (const v of expanded!) if (!out.includes(v)) out.push(v);
    }
    return out;
  }

  const collective = parseCollective(input.collective);

  const nThreads = int('nThreads');
  const nGpus = int('nGpus');
  const minBytes = size('minBytes');
  const maxBytes = size('maxBytes');
  const stepBytes = size('stepBytes');
  const stepFactor = int('stepFactor');
  const iters = int('iters');
  const aggIters = int('aggIters');
  const warmupIters = int('warmupIters');
  const runCycles = int('runCycles');
  const parallelInit = int('parallelInit');
  const check = int('check');
  const ops = list('ops', OPS, 'op');
  const dtypes = list('dtypes', DTYPES, 'datatype');
  const root = int('root');
  const blocking = int('blocking') as ResolvedOptions['blocking'];
  const streamNull = int('streamNull');
  const timeoutSec = int('timeoutSec');
  const cudaGraph = int('cudaGraph');
  const reportCpuTime = bool('reportCpuTime');
  const reportTimestamps = bool('reportTimestamps');
  const average = int('average') as ResolvedOptions['average'];
  const localRegister = int('localRegister');
  const ctaPolicy = int('ctaPolicy');
  const deviceImpl = int('deviceImpl');
  const deviceCtaCount = int('deviceCtaCount');
  const memoryReport = bool('memoryReport');
  const unalign = int('unalign');
  const perIterTiming = bool('perIterTiming');
  const perIterSkip = int('perIterSkip');
  const np = input.np === undefined || input.np === null ? null : int('np');
  const quiet = input.quiet ?? DEFAULTS.quiet;

  // -J is kept as given (nccl-tests picks the format from the extension later); only refuse "".
  const jsonFile = input.jsonFile ?? null;
  if (jsonFile !== null && jsonFile.trim() === '') fail('jsonFile', 'output file name is empty');

  // Report files: kept as given ('-' = stdout); outputs.ts checks paths and clashes before the run.
  const file = (field: 'csvFile' | 'mdFile' | 'junitFile' | 'htmlFile'): string | null => {
    const v = input[field] ?? null;
    if (v !== null && v.trim() === '') fail(field, 'output file name is empty');
    return v;
  };
  const csvFile = file('csvFile'), mdFile = file('mdFile'), junitFile = file('junitFile'), htmlFile = file('htmlFile');
  const jsonFormat = (input.jsonFormat ?? DEFAULTS.jsonFormat) as JsonFormat;
  if (!(JSON_FORMATS as readonly string[]).includes(jsonFormat)) {
    fail('jsonFormat', `unknown JSON format ${shown(jsonFormat)}; valid: ${JSON_FORMATS.join(', ')}`);
  }
  if (input.jsonFormat !== undefined && jsonFile === null) {
    fail('jsonFormat', `needs ${name('jsonFile')} FILE (the JSON file it shapes)`);
  }
  const format = (input.format ?? DEFAULTS.format) as TableFormat;
  if (!(TABLE_FORMATS as readonly string[]).includes(format)) {
    fail('format', `unknown table format ${shown(format)}; valid: ${TABLE_FORMATS.join(', ')}`);
  }

  const backend = input.backend ?? null;
  if (backend !== null && !(BACKENDS as readonly string[]).includes(backend)) {
    fail('backend', `unknown backend '${backend}'; valid: ${BACKENDS.join(', ')}`);
  }

  // ---- gloo backend flags: only with --backend gloo (never silently ignored by another backend)
  const glooAlgo = (input.glooAlgo ?? DEFAULTS.glooAlgo) as GlooAlgo;
  if (!(GLOO_ALGOS as readonly string[]).includes(glooAlgo)) {
    fail('glooAlgo', `unknown Gloo all_reduce algorithm ${shown(glooAlgo)}; valid: ${GLOO_ALGOS.join(', ')}`);
  }
  const glooStore = input.glooStore ?? null;
  if (glooStore !== null && !/^file:.+$/.test(glooStore) && !/^redis:\/\/[^\s:/]+(?::\d{1,5})?$/.test(glooStore)) {
    fail('glooStore', `invalid store ${shown(glooStore)}; expected file:DIR (a directory every rank sees) or redis://HOST:PORT`);
  }
  const glooIface = input.glooIface ?? null;
  if (glooIface !== null && !/^[^\s]+$/.test(glooIface)) {
    fail('glooIface', `invalid interface or address ${shown(glooIface)}`);
  }
  for (const [field, given] of [['glooAlgo', input.glooAlgo], ['glooStore', glooStore], ['glooIface', glooIface]] as const) {
    if (given !== undefined && given !== null && backend !== 'gloo') fail(field, `needs ${name('backend')} gloo`);
  }
  // all_reduce: every algorithm; reduce_scatter: the all-reduce underneath, or Gloo's legacy class.
  const algos: readonly string[] = collective === 'all_reduce' ? GLOO_ALGOS
    : collective === 'reduce_scatter' ? ['default', 'ring', 'bcube', 'legacy_halving_doubling'] : ['default'];
  if (!algos.includes(glooAlgo)) {
    fail('glooAlgo', algos.length === 1 ? `chooses all_reduce and reduce_scatter algorithms; ${collective} has one Gloo implementation`
      : `${collective} takes ${algos.join(', ')}, not ${glooAlgo}`);
  }

  // ---- nccl backend: the library to dlopen (a file or its directory; checked when it is loaded)
  const ncclLib = input.ncclLib ?? null;
  if (ncclLib !== null && ncclLib.trim() === '') fail('ncclLib', 'library path is empty');
  if (ncclLib !== null && backend !== null && backend !== 'nccl') fail('ncclLib', `needs the nccl backend, not ${backend}`);

  const hosts = input.hosts ?? null;
  if (hosts !== null) {
    // mpirun --host syntax: host[:slots],… (slots ≥ 1).
    const entries = hosts.split(',');
    const bad = entries.find((e) => !/^[^\s,:]+(?::[1-9]\d*)?$/.test(e));
    if (bad !== undefined) {
      fail('hosts', `invalid host entry ${shown(bad)} in ${shown(hosts)}; expected host[:slots],… e.g. h1,h2:4`);
    }
    if (np === null) fail('hosts', `needs ${name('np')} N (the number of ranks to start on those hosts)`);
  }

  // ---- size sweep (nccl-tests: min > max is an error; a sweep that cannot advance loops forever)
  const maxNote = input.maxBytes === undefined ? ` (the default of ${name('maxBytes')}; give ${name('maxBytes')} too)` : '';
  if (minBytes > maxBytes) {
    fail('minBytes', `min size ${minBytes} is larger than max size ${maxBytes}${maxNote}`);
  }
  if (minBytes < maxBytes) {
    if (stepFactor > 1 && minBytes === 0) {
      fail('minBytes', `min size 0 never grows with ${name('stepFactor')} ${stepFactor} (0 × ${stepFactor} = 0); start at 1 or more`);
    }
    if (stepFactor <= 1 && stepBytes === 0) {
      fail('stepBytes', `step 0 never advances from ${minBytes} to ${maxBytes}; give ${name('stepBytes')} > 0 or ${name('stepFactor')} > 1`);
    }
  }
  const nSizes = countSweepSizes(minBytes, maxBytes, stepFactor, stepBytes);
  if (nSizes > MAX_SWEEP_SIZES) {
    fail('stepBytes', `the sweep ${minBytes}..${maxBytes} in steps of ${stepBytes} has ${nSizes} sizes ` +
      `(limit ${MAX_SWEEP_SIZES}); use a larger ${name('stepBytes')} or ${name('stepFactor')} > 1`);
  }

  // ---- combinations nccl-tests "fixes" by changing a flag behind the user's back: refuse instead,
  // so a run either does what was asked or does not start.
  if (perIterTiming && cudaGraph > 0) {
    fail('perIterTiming', `per-iteration timing cannot be combined with CUDA graphs (${name('cudaGraph')} ${cudaGraph}): ` +
      'a replayed graph has no per-iteration events (nccl-tests silently disables -I)');
  }
  if (blocking === 3 && cudaGraph > 0) {
    fail('blocking', `blocking mode 3 cannot be combined with CUDA graphs (${name('cudaGraph')} ${cudaGraph}): ` +
      'it waits and barriers between iterations, which a captured graph cannot (nccl-tests silently uses 0)');
  }
  if (perIterSkip > iters - 1) {
    fail('perIterSkip', `per-iteration skip must be between 0 and ${iters - 1} (${name('iters')} ${iters} minus 1), got ${perIterSkip}`);
  }
  if (perIterSkip > 0 && !perIterTiming) {
    fail('perIterSkip', `per-iteration skip needs per-iteration timing (${name('perIterTiming')} 1)`);
  }
  if (deviceImpl > 0 && localRegister !== 2) {
    fail('deviceImpl', `device implementation ${deviceImpl} needs symmetric buffer registration (${name('localRegister')} 2)`);
  }

  const resolved: ResolvedOptions = {
    collective,
    program: input.program ?? `${collective}_perf`,
    nThreads, nGpus, minBytes, maxBytes, stepBytes, stepFactor, iters, aggIters, warmupIters, runCycles,
    parallelInit, check,
    ops: Object.freeze(ops) as OpName[],
    dtypes: Object.freeze(dtypes) as DTypeName[],
    root, blocking, streamNull, timeoutSec, cudaGraph, reportCpuTime, reportTimestamps, jsonFile, average,
    localRegister, ctaPolicy, deviceImpl, deviceCtaCount, memoryReport, unalign, perIterTiming, perIterSkip,
    np, hosts, backend, quiet, jsonFormat, csvFile, mdFile, junitFile, htmlFile, format,
    glooAlgo, glooStore, glooIface, ncclLib,
  };
  return Object.freeze(resolved);
}
