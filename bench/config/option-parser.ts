// The options of every collbench command from one kind of table (flags.ts records): one getopt_long work-alike
// (prefixes, `-b8`, `--minbytes=8`, options after positionals, `--`), one value parser (resolve.ts parseField) and one
// help renderer. Why not yargs: docs/developing.md.
import { UsageError } from '../core/errors.js';
import type { ActionFlag, FlagSpec, ValueFlag } from './flags.js';
import { BACKEND_LABELS } from '../core/types.js';
import { asText, parseField } from './resolve.js';
import { formatSize } from './sizes.js';

/** One option a command takes: its letter and long name, whether it takes a value, the key it is stored under. */
export interface OptionSpec {
  short?: string;
  long: string;
  /** false: a switch (`--quiet`); true: takes a value (`-b 8`, `-b8`, `--minbytes=8`, `--minbytes 8`). */
  takesValue: boolean;
  /** Placeholder shown in a "missing value" message. */
  value?: string;
  key: string;
  /** Ends parsing (-h, --version): the rest of the command line is not read. */
  stops?: boolean;
}

export interface Tokens {
  /** The key of the option that ended parsing (-h, --version), if any. */
  stop?: string;
  /** Last value per key. */
  values: Map<string, string | true>;
  /** Every option in the order given (for repeatable options). */
  ordered: { key: string; value: string | true }[];
  positionals: string[];
}

/**
 * getopt_long over `specs`, with GNU permutation (options may follow positionals): switches may be grouped
 * (`-qh`); a letter that takes a value ends its cluster with the rest of the word (`-b8`, `-r-1`) or, if
 * nothing is left, the next word, even one starting with '-'; a long name may be any unambiguous prefix.
 * `what` prefixes error messages (`compare: `).
 */
export function tokenize(argv: readonly string[], specs: readonly OptionSpec[], what = ''): Tokens {
  const byShort = new Map(specs.filter((f) => f.short).map((f) => [f.short!, f]));
  const byLong = new Map(specs.map((f) => [f.long, f]));
  const tokens: Tokens = { values: new Map(), ordered: [], positionals: [] };
  const take = (spec: OptionSpec, value: string | true): boolean => {
    if (spec.stops) {
      tokens.stop = spec.key;
      return true;
    }
    tokens.values.set(spec.key, value);
    tokens.ordered.push({ key: spec.key, value });
    return false;
  };
  const missing = (flag: string, spec: OptionSpec): UsageError =>
    UsageError.forFlag(`${what}${flag}`, `missing value ${spec.value ?? ''}`.trimEnd());

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      tokens.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const typed = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      let spec = byLong.get(typed);
      if (!spec) {
        const matches = typed === '' ? [] : specs.filter((f) => f.long.startsWith(typed));
        if (matches.length > 1) {
          throw new UsageError(
            `${what}ambiguous option '--${typed}': could be ${matches.map((f) => `--${f.long}`).join(', ')}`,
          );
        }
        if (matches.length === 0) throw new UsageError(`${what}unknown option '--${typed}' (see --help)`);
        spec = matches[0]!;
      }
      let value: string | true = true;
      if (!spec.takesValue) {
        if (eq >= 0) throw UsageError.forFlag(`${what}--${spec.long}`, 'takes no value');
      } else if (eq >= 0) {
        value = arg.slice(eq + 1);
      } else if (i + 1 < argv.length) {
        value = argv[++i]!;
      } else {
        throw missing(`--${spec.long}`, spec);
      }
      if (take(spec, value)) return tokens;
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j]!;
        const spec = byShort.get(letter);
        if (!spec) throw new UsageError(`${what}unknown option '-${letter}' (see --help)`);
        if (!spec.takesValue) {
          if (take(spec, true)) return tokens;
          continue;
        }
        let value: string;
        if (j + 1 < arg.length) value = arg.slice(j + 1);
        else if (i + 1 < argv.length) value = argv[++i]!;
        else throw missing(`-${letter}`, spec);
        if (take(spec, value)) return tokens;
        break;
      }
      continue;
    }
    tokens.positionals.push(arg);
  }
  return tokens;
}

/** The tokenizer's view of a table: value flags store under their field, actions (-h, --version) stop parsing. */
export function optionSpecs(flags: readonly FlagSpec[]): OptionSpec[] {
  return flags.map((f): OptionSpec =>
    f.kind === 'action'
      ? { short: f.short, long: f.long, takesValue: false, key: f.action, stops: true }
      : { short: f.short, long: f.long, takesValue: f.kind !== 'switch', value: f.value, key: f.field },
  );
}

/** A command's options: its name (which prefixes every message), its help text around the table, and the table. */
export interface CommandOptions<L extends readonly FlagSpec[] = readonly FlagSpec[]> {
  /** `compare`: messages say `compare: --repeats: …`. */
  command: string;
  /** The USAGE line(s), without `USAGE: `. */
  usage: string;
  /** What the command does (lines of text, shown under USAGE). */
  about: string;
  /** The --help sections, in order; every flag's group is one of them. */
  groups: readonly string[];
  flags: L;
  /** Text after the table (exit status, notes). */
  footer: string;
}

/** The values a table gives, field by field, typed from its records. */
export type ValuesOf<L extends readonly FlagSpec[]> = {
  readonly [K in Extract<L[number], ValueFlag> as K['field']]: K extends ValueFlag<string, infer V> ? V : never;
};

export interface ParsedOptions<V = Record<string, unknown>> {
  /** The action that ended parsing (-h: 'help'), if any. */
  stop?: ActionFlag['action'];
  /** Every field of the table: the parsed value given last, else the default (repeatable flags: every value, in order). */
  values: V;
  /** The fields given on the command line. */
  given: ReadonlySet<string>;
  /** Every option given, in order, with its parsed value. */
  ordered: { field: string; value: unknown }[];
  positionals: string[];
}

/**
 * Reads a command line with a command's table: getopt_long syntax and prefix rule (tokenize), every value parsed and
 * range-checked by its kind. A bad value is a UsageError naming the command and the option (`compare: --repeats: …`).
 */
export function parseOptions<L extends readonly FlagSpec[]>(
  argv: readonly string[],
  spec: { command: string; flags: L },
): ParsedOptions<ValuesOf<L>> {
  const tokens = tokenize(argv, optionSpecs(spec.flags), `${spec.command}: `);
  const byField = new Map(spec.flags.filter((f): f is ValueFlag => f.kind !== 'action').map((f) => [f.field, f]));
  const ordered = tokens.ordered.map(({ key, value }) => {
    const f = byField.get(key)!;
    return { field: key, value: parseField(f, value, `${spec.command}: --${f.long}`) };
  });
  const values: Record<string, unknown> = {};
  for (const [field, f] of byField) {
    const mine = ordered.filter((o) => o.field === field).map((o) => o.value);
    values[field] = f.repeat ? mine : mine.length > 0 ? mine[mine.length - 1] : f.default;
  }
  return {
    stop: tokens.stop as ActionFlag['action'] | undefined,
    values: values as ValuesOf<L>,
    given: new Set(ordered.map((o) => o.field)),
    ordered,
    positionals: tokens.positionals,
  };
}

/** A comma-separated list of values, each read as the option `item` is (its kind and range); no value twice. */
export function valueList(item: ValueFlag, text: string, name: string): unknown[] {
  const items = text.split(',').map((t) => parseField(item, t, name));
  if (new Set(items).size !== items.length) throw UsageError.forFlag(name, `lists a value twice: '${text}'`);
  return items;
}

/** The default as --help shows it, or null when there is none to show. */
function defaultText(f: FlagSpec): string | null {
  if (f.defaultText !== undefined) return f.defaultText;
  if (f.kind === 'action' || f.kind === 'switch' || f.repeat) return null;
  const value = f.default;
  if (f.kind === 'size') return formatSize(value as number);
  if (f.kind === 'duration' && typeof value === 'number') return `${value} s`;
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'boolean') return value ? '1' : '0';
  return value === null ? null : asText(value);
}

const HELP_WIDTH = 100;
/** Where the help column starts at most; a command whose flags are all shorter starts it earlier. */
const HELP_COLUMN = 44;

export function wrap(text: string, indent: number, width: number): string {
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

/**
 * The one help renderer: per group, each flag as `  -b, --minbytes <size>   meaning [NCCL] (default: 32M)`, wrapped at
 * 100 columns. A flag only some backends implement says which ([NCCL], [gloo]).
 */
export function flagHelp(flags: readonly FlagSpec[], groups: readonly string[]): string[] {
  const head = (f: FlagSpec): string =>
    `  ${f.short ? `-${f.short}, ` : '    '}--${f.long}${f.value ? ` ${f.value}` : ''}`;
  const column = Math.min(HELP_COLUMN, Math.max(...flags.map((f) => head(f).length + 2)));
  const out: string[] = [];
  for (const group of groups) {
    const members = flags.filter((f) => f.group === group);
    if (members.length === 0) continue;
    out.push('', `${group}:`);
    for (const f of members) {
      const def = defaultText(f);
      const only = f.backends ? ` [${f.backends.map((b) => BACKEND_LABELS[b]).join(', ')}]` : '';
      const body = `${f.help}${only}${def !== null ? ` (default: ${def})` : ''}`;
      const h = head(f);
      const pad = h.length + 2 <= column ? ' '.repeat(column - h.length) : `\n${' '.repeat(column)}`;
      out.push(`${h}${pad}${wrap(body, column, HELP_WIDTH)}`);
    }
  }
  return out;
}

/** `<command> --help`: USAGE, what it does, the table by group, the footer. */
export function commandHelp(spec: CommandOptions): string {
  return [`USAGE: ${spec.usage}`, spec.about, ...flagHelp(spec.flags, spec.groups), '', spec.footer]
    .filter((l, i, all) => !(l === '' && all[i + 1] === ''))
    .join('\n')
    .replace(/\n+$/, '');
}
