// resolveOptions(): the flag table's defaults, value parsing and ranges, then the cross-checks between flags, to a
// frozen ResolvedOptions. Where nccl-tests prints a note and silently changes a flag (or loops forever), a UsageError
// names the flag. Names are flag letters from the command line, field names for programmatic callers.
import ms, { type StringValue } from 'ms';
import { glooAlgoCheck } from '../collectives/descriptor.js';
import { getCollective } from '../collectives/index.js';
import { UsageError } from '../core/errors.js';
import {
  DEFAULTS,
  FLAGS,
  flagName,
  type OptionField,
  type OptionValues,
  type ResolvedOptions,
  type ValueFlag,
} from './flags.js';
import { COLLECTIVES, type BackendName, type CollectiveName } from '../core/types.js';
import { countSweepSizes, parseSize } from './sizes.js';

export { DEFAULTS };
export type { OptionField, OptionValues };

/**
 * Most sizes one sweep may have. nccl-tests has no limit (`-b 1 -e 1G -i 1` is a billion rows that
 * would never finish); we refuse before building the list rather than run out of memory.
 */
export const MAX_SWEEP_SIZES = 1_000_000;

const INT_MAX = 2 ** 31 - 1; // the native side holds these in C `int`s

type NumberLike = number | string;
type BoolLike = boolean | number | string;
type InputOf<V> = V extends boolean
  ? BoolLike
  : V extends number
    ? NumberLike
    : V extends number | null
      ? NumberLike | null
      : V extends readonly string[]
        ? string | readonly string[]
        : V extends string
          ? string
          : V extends string | null
            ? string | null
            : never;

/**
 * What a caller may set. Strings are parsed as on the command line (sizes with K/M/G, integers as
 * strtol(…, 0) reads them); omitted fields take {@link DEFAULTS}.
 */
export type OptionInput = { collective: string; program?: string } & { [K in OptionField]?: InputOf<OptionValues[K]> };

/** How messages name each field (`-f`, `--np`); fields without a name are called by field name. */
export type FieldNames = Partial<Record<OptionField, string>>;

/** How the command line names every field: `-b` for nccl-tests flags, `--np` for collbench's. */
export const FIELD_NAMES: Readonly<FieldNames> = Object.freeze(
  Object.fromEntries(FLAGS.map((f) => [f.field, flagName(f)])),
);

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

/** A value given on the command line or by a caller, as text (strings, numbers, booleans; else JSON). */
export function asText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : (JSON.stringify(value) ?? 'undefined');
}

/** `got X` text: numbers and words as they are, empty or spaced strings quoted. */
function shown(value: unknown): string {
  const s = asText(value);
  return s === '' || /\s/.test(s) ? `'${s}'` : s;
}

function listText(values: readonly (string | number)[]): string {
  return values.length <= 1 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}

function rangeText(f: ValueFlag): string {
  const min = f.min!,
    max = f.max ?? INT_MAX;
  if (max - min <= 3) {
    const values: number[] = [];
    for (let v = min; v <= max; v++) values.push(v);
    return listText(values);
  }
  return f.max === undefined ? `an integer ≥ ${min}` : `an integer between ${min} and ${max}`;
}

/** A collective name, or its `*_perf` alias, checked against COLLECTIVES. */
export function parseCollective(name: string): CollectiveName {
  const bare = name.endsWith('_perf') ? name.slice(0, -'_perf'.length) : name;
  if ((COLLECTIVES as readonly string[]).includes(bare)) return bare as CollectiveName;
  throw new UsageError(`unknown collective '${name}'; valid: ${COLLECTIVES.join(', ')}`);
}

/**
 * Seconds of a duration: a plain number is seconds (as a child reads back `--duration=7200`); otherwise the `ms`
 * package's syntax (90s, 30m, 2h, 1.5h, 1d), which the Node ecosystem knows from everywhere; NaN when neither.
 */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  if (!/^\d+(\.\d+)?\s*[a-z]+$/i.test(t)) return NaN; // ms() also reads "1e3" and negatives: not durations
  const millis = ms(t as StringValue);
  return typeof millis === 'number' ? millis / 1000 : NaN;
}

/** The value of one flag (its default when absent), parsed and range-checked by its kind: the one value parser of
 *  every command's options. `name` is how messages call the flag (`-b`, `compare: --repeats`). */
export function parseField(f: ValueFlag, given: unknown, name: string): unknown {
  const fail = (detail: string): never => {
    throw UsageError.forFlag(name, detail);
  };
  if (given === undefined || given === null) return f.default;
  switch (f.kind) {
    case 'int': {
      let n: number | undefined;
      if (typeof given === 'number') {
        n = Number.isSafeInteger(given) ? given : undefined;
      } else {
        const text = asText(given);
        if (f.field === 'root' && text.trim().toLowerCase() === 'all') {
          fail(`'all' is not a root (nccl-tests reads it as 0); use ${name} -1 to run every root`);
        }
        n = parseInteger(text);
        if (n === undefined && /^\s*[+-]?0\d*[89]/.test(text)) {
          fail(`${f.what} must be ${rangeText(f)}, got ${shown(text)} (a leading 0 means octal)`);
        }
      }
      if (n === undefined || n < f.min! || n > (f.max ?? INT_MAX))
        fail(`${f.what} must be ${rangeText(f)}, got ${shown(given)}`);
      return n;
    }
    case 'bool': {
      if (typeof given === 'boolean') return given;
      const n = typeof given === 'number' ? given : parseInteger(asText(given));
      if (n !== 0 && n !== 1) fail(`${f.what} must be 0 or 1, got ${shown(given)}`);
      return n === 1;
    }
    case 'switch':
      return Boolean(given);
    case 'size': {
      if (typeof given === 'string') return parseSize(given, name);
      if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 0) {
        fail(`size must be a whole number of bytes ≥ 0, got ${shown(given)}`);
      }
      return given;
    }
    case 'real': {
      const n =
        typeof given === 'number'
          ? given
          : /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(asText(given))
            ? Number(given)
            : NaN;
      const low = f.min ?? -Infinity;
      if (!Number.isFinite(n) || (f.above ? n <= low : n < low) || (f.max !== undefined && n > f.max)) {
        const range = f.above
          ? `above ${f.min}${f.max !== undefined ? ` and at most ${f.max}` : ''}`
          : f.max !== undefined
            ? `from ${f.min} to ${f.max}`
            : `≥ ${f.min}`;
        fail(`${f.what} must be a number ${range}, got ${shown(given)}`);
      }
      return n;
    }
    case 'duration': {
      const seconds = typeof given === 'number' ? given : parseDuration(asText(given));
      const inRange = f.min === undefined ? seconds > 0 : seconds >= f.min;
      if (
        !Number.isFinite(seconds) ||
        !inRange ||
        (f.max !== undefined && seconds > f.max) ||
        (f.integer && !Number.isInteger(seconds))
      ) {
        const range =
          f.min === undefined
            ? 'above 0'
            : f.max !== undefined
              ? `from ${f.min} to ${f.max} s`
              : `of at least ${f.min} s`;
        fail(
          `${f.what} must be ${f.integer ? 'whole seconds' : 'a time'} ${range}: seconds, or with a unit (90s, 30m, 2h, 1d), ` +
            `got ${shown(given)}`,
        );
      }
      return seconds;
    }
    case 'choice': {
      if (!f.choices!.includes(asText(given))) {
        const what = f.field === 'backend' ? 'backend' : f.what!;
        fail(
          `unknown ${what} ${f.field === 'backend' ? `'${asText(given)}'` : shown(given)}; valid: ${f.choices!.join(', ')}`,
        );
      }
      return given;
    }
    case 'list': {
      const items = typeof given === 'string' ? [given] : [...(given as readonly string[])];
      if (items.length === 0) fail(`needs at least one ${f.what}`);
      const out: string[] = [];
      for (const item of items) {
        // nccl-tests matches names exactly (case-sensitive); `all` is every name in nccl-tests order.
        const expanded = item === 'all' ? f.choices! : f.choices!.includes(item) ? [item] : null;
        if (expanded === null) fail(`unknown ${f.what} '${item}'; valid: ${f.choices!.join(', ')}, all`);
        for (const v of expanded!) if (!out.includes(v)) out.push(v);
      }
      return Object.freeze(out);
    }
    case 'text': {
      const problem = f.check?.(asText(given));
      if (problem) fail(problem);
      return given;
    }
  }
}

/** The first flag that only other backends implement and that is set to something other than its default. */
export function unsupportedFlag(o: ResolvedOptions, backend: BackendName): ValueFlag | null {
  // nccl-tests' letters only: collbench's long-only backend flags were checked against --backend when resolved
  // (--nccl-lib without --backend is a preference that a fallback to a CPU backend may ignore).
  return (
    FLAGS.find(
      (f) => f.short && f.backends && !(f.backends as readonly string[]).includes(backend) && o[f.field] !== f.default,
    ) ?? null
  );
}

/** Throws UsageError when a flag of another backend is set (`-G/--cudagraph (CUDA graphs) needs the nccl backend; …`):
 *  never silently ignored. */
export function refuseUnsupportedFlags(o: ResolvedOptions, backend: BackendName, why: string): void {
  const f = unsupportedFlag(o, backend);
  if (f === null) return;
  throw new UsageError(`${flagLabel(f)} needs the ${f.backends!.join(' or ')} backend; the ${backend} backend ${why}`);
}

/** How messages name a flag: `-G/--cudagraph (CUDA graphs)`. */
export function flagLabel(f: ValueFlag): string {
  return `${f.short ? `-${f.short}/` : ''}--${f.long}${f.about ? ` (${f.about})` : ''}`;
}

/**
 * Validates `input` and returns the frozen options of one run. Throws UsageError, whose message
 * starts with the offending flag as `names` spells it (`-f: step factor must be …`).
 */
export function resolveOptions(input: OptionInput, names: FieldNames = {}): ResolvedOptions {
  const name = (field: OptionField): string => names[field] ?? field;
  const collective = parseCollective(input.collective);
  const values: Record<string, unknown> = {};
  const given = input as Record<string, unknown>;
  for (const f of FLAGS) values[f.field] = parseField(f, given[f.field], name(f.field));
  // --target-rsd judges the per-iteration samples: it turns -I on (an explicit -I 0 is refused below).
  if (values.targetRsdPct !== null && given.perIterTiming === undefined) values.perIterTiming = true;
  const o = Object.freeze({ collective, program: input.program ?? `${collective}_perf`, ...values }) as ResolvedOptions;
  crossCheck(o, input, name);
  (getCollective(collective).validate ?? glooAlgoCheck(['default']))(o, name);
  return o;
}

/** Checks between flags (one flag's meaning depends on another). */
function crossCheck(o: ResolvedOptions, input: OptionInput, name: (f: OptionField) => string): void {
  const fail = (field: OptionField, detail: string): never => {
    throw UsageError.forFlag(name(field), detail);
  };

  if (input.jsonFormat !== undefined && o.jsonFile === null)
    fail('jsonFormat', `needs ${name('jsonFile')} FILE (the JSON file it shapes)`);

  // collbench's backend-specific flags need that backend named (nccl-tests' GPU letters are refused by the
  // backend that runs, unsupportedFlag(), since nccl-tests' users expect them to parse everywhere).
  for (const f of FLAGS) {
    if (!f.backends || f.short || given(input, f.field) === undefined) continue;
    if (o.backend === null ? f.preference : (f.backends as readonly string[]).includes(o.backend)) continue;
    fail(
      f.field,
      f.preference
        ? `needs the ${f.backends.join(' or ')} backend, not ${o.backend}`
        : `needs ${name('backend')} ${f.backends.join(' or ')}`,
    );
  }
  // Gloo's legacy classes (all_reduce legacy_*, reduce_scatter's ReduceScatterHalvingDoubling) keep byte
  // counts in an `int`.
  if (o.glooAlgo.startsWith('legacy_') && o.maxBytes > INT_MAX) {
    fail(
      'maxBytes',
      `${o.maxBytes} bytes exceed what Gloo's legacy ` +
        `${o.collective === 'reduce_scatter' ? 'ReduceScatterHalvingDoubling' : o.glooAlgo} takes (2 GiB - 1)`,
    );
  }
  if (o.hosts !== null && o.np === null)
    fail('hosts', `needs ${name('np')} N (the number of ranks to start on those hosts)`);
  if (o.oversubscribe && o.np === null)
    fail('oversubscribe', `needs ${name('np')} N (it allows more ranks than cores)`);

  // ---- size sweep (nccl-tests: min > max is an error; a sweep that cannot advance loops forever)
  const maxNote =
    input.maxBytes === undefined ? ` (the default of ${name('maxBytes')}; give ${name('maxBytes')} too)` : '';
  if (o.minBytes > o.maxBytes)
    fail('minBytes', `min size ${o.minBytes} is larger than max size ${o.maxBytes}${maxNote}`);
  if (o.minBytes < o.maxBytes) {
    if (o.stepFactor > 1 && o.minBytes === 0) {
      fail(
        'minBytes',
        `min size 0 never grows with ${name('stepFactor')} ${o.stepFactor} (0 × ${o.stepFactor} = 0); start at 1 or more`,
      );
    }
    if (o.stepFactor <= 1 && o.stepBytes === 0) {
      fail(
        'stepBytes',
        `step 0 never advances from ${o.minBytes} to ${o.maxBytes}; give ${name('stepBytes')} > 0 or ${name('stepFactor')} > 1`,
      );
    }
  }
  const nSizes = countSweepSizes(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes);
  if (nSizes > MAX_SWEEP_SIZES) {
    fail(
      'stepBytes',
      `the sweep ${o.minBytes}..${o.maxBytes} in steps of ${o.stepBytes} has ${nSizes} sizes ` +
        `(limit ${MAX_SWEEP_SIZES}); use a larger ${name('stepBytes')} or ${name('stepFactor')} > 1`,
    );
  }

  // ---- combinations nccl-tests "fixes" by changing a flag behind the user's back: refuse instead,
  // so a run either does what was asked or does not start.
  if (o.perIterTiming && o.cudaGraph > 0) {
    fail(
      'perIterTiming',
      `per-iteration timing cannot be combined with CUDA graphs (${name('cudaGraph')} ${o.cudaGraph}): ` +
        'a replayed graph has no per-iteration events (nccl-tests silently disables -I)',
    );
  }
  if (o.blocking === 3 && o.cudaGraph > 0) {
    fail(
      'blocking',
      `blocking mode 3 cannot be combined with CUDA graphs (${name('cudaGraph')} ${o.cudaGraph}): ` +
        'it waits and barriers between iterations, which a captured graph cannot (nccl-tests silently uses 0)',
    );
  }
  if (o.perIterSkip > o.iters - 1) {
    fail(
      'perIterSkip',
      `per-iteration skip must be between 0 and ${o.iters - 1} (${name('iters')} ${o.iters} minus 1), got ${o.perIterSkip}`,
    );
  }
  if (o.targetRsdPct !== null && !o.perIterTiming) {
    fail('targetRsdPct', `needs per-iteration timing, which it turns on; drop ${name('perIterTiming')} 0`);
  }
  if (o.targetRsdPct !== null && o.cudaGraph > 0) {
    fail(
      'targetRsdPct',
      `cannot be combined with CUDA graphs (${name('cudaGraph')} ${o.cudaGraph}): a replayed graph has no per-iteration samples`,
    );
  }
  if (o.perIterSkip > 0 && !o.perIterTiming)
    fail('perIterSkip', `per-iteration skip needs per-iteration timing (${name('perIterTiming')} 1)`);
  if (o.deviceImpl > 0 && o.localRegister !== 2) {
    fail(
      'deviceImpl',
      `device implementation ${o.deviceImpl} needs symmetric buffer registration (${name('localRegister')} 2)`,
    );
  }
}

function given(input: OptionInput, field: OptionField): unknown {
  const v = (input as Record<string, unknown>)[field];
  return v === null ? undefined : v;
}
