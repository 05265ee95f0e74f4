// The command-line parser of every collbench command: a getopt_long work-alike driven by a table of option
// specs (the run flags come from the flag table, bench/core/flags.ts; subcommands pass their own), and the
// run command's parse: program name → collective, tokens → resolveOptions(), -h → help text. Pure: no I/O.
//
// Why not yargs: nccl-tests users type getopt syntax, and yargs-parser splits `-dfloat` or `-Jout.json` into
// single-letter flags, treats `-J -x.json` as two flags and coerces values; this parser is short and exact
// (`-b8`, `-b 8`, `--minbytes=8`, `--minbytes 8`, `--min 8`, `-r -1`, options after positionals, `--` ends
// options).
import { UsageError } from '../core/errors.js';
import { ACTIONS, FLAGS, GROUPS, flagName, type FlagSpec, type OptionField, type ValueFlag } from '../core/flags.js';
import { BACKEND_LABELS, COLLECTIVES, type CollectiveName } from '../core/types.js';
import type { ResolvedOptions } from '../core/flags.js';
import { asText, DEFAULTS, FIELD_NAMES, parseCollective, resolveOptions, type OptionInput } from './resolve.js';
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
    if (spec.stops) { tokens.stop = spec.key; return true; }
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
          throw new UsageError(`${what}ambiguous option '--${typed}': could be ${matches.map((f) => `--${f.long}`).join(', ')}`);
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

/** The run command's options: every flag of the table, then -h and --version. */
export const RUN_OPTIONS: readonly OptionSpec[] = Object.freeze([
  ...FLAGS.map((f): OptionSpec => ({ short: f.short, long: f.long, takesValue: f.kind !== 'switch', value: f.value, key: f.field })),
  ...ACTIONS.map((f): OptionSpec => ({ short: f.short, long: f.long, takesValue: false, key: f.action, stops: true })),
]);

export type ParsedCommand =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'run'; options: ResolvedOptions };

const PERF_RE = /^(.+?)_perf(?:_[A-Za-z0-9]+)?$/; // nccl-tests NAME_SUFFIX builds: all_reduce_perf_mpi

/** Binary name as run (`/usr/bin/all_reduce_perf`, `collbench.js`) → bare name. */
export function programBase(program: string): string {
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
  if ((COLLECTIVES as readonly string[]).includes(m[1]!)) return parseCollective(m[1]!);
  throw new UsageError(`unknown collective binary '${programBase(program)}'; valid: ${COLLECTIVES.map((c) => `${c}_perf`).join(', ')}`);
}

function defaultText(spec: FlagSpec): string | null {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.kind === 'action' || spec.kind === 'switch') return null;
  const value = DEFAULTS[spec.field as OptionField];
  if (spec.kind === 'size') return formatSize(value as number);
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
    for (const spec of [...FLAGS, ...ACTIONS].filter((f) => f.group === group)) {
      const head = `  ${spec.short ? `-${spec.short}, ` : '    '}--${spec.long}${spec.value ? ` ${spec.value}` : ''}`;
      const def = defaultText(spec);
      const only = spec.backends ? ` [${spec.backends.map((b) => BACKEND_LABELS[b]).join(', ')}]` : '';
      const body = `${spec.help}${only}${def !== null ? ` (default: ${def})` : ''}`;
      const pad = head.length + 2 <= HELP_COLUMN ? ' '.repeat(HELP_COLUMN - head.length) : `\n${' '.repeat(HELP_COLUMN)}`;
      out.push(`${head}${pad}${wrap(body, HELP_COLUMN, HELP_WIDTH)}`);
    }
  }
  out.push('', '[NCCL] = NCCL (GPU) backend only, [gloo] = gloo backend only; other backends refuse it.');
  if (!isPerf) out.push(`Other commands: ${base} help <command> (${base} help x lists them); environment variables: ${base} help env.`);
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
  const tokens = tokenize(argv, RUN_OPTIONS);
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

/** A flag's value as the command line writes it (`--long=value`), or null when it is the default. */
function flagArgument(f: ValueFlag, value: unknown): string | null {
  if (value === f.default || value === null) return null;
  switch (f.kind) {
    case 'switch': return value ? `--${f.long}` : null;
    case 'bool': return `--${f.long}=${value ? 1 : 0}`;
    case 'list': {
      const items = value as readonly string[];
      const def = f.default as readonly string[];
      if (items.length === def.length && items.every((v, i) => v === def[i])) return null;
      if (items.length === f.choices!.length && items.every((v, i) => v === f.choices![i])) return `--${f.long}=all`;
      if (items.length === 1) return `--${f.long}=${items[0]}`;
      throw new Error(`${flagName(f)}: ${items.join(',')} cannot be written as one command-line value`);
    }
    default: return `--${f.long}=${asText(value)}`;
  }
}

/**
 * The command line of a child that runs these very options (what --np starts under mpirun or as local
 * processes): the collective word (unless the program's name says it), then every flag that is not at its
 * default, in long form, leaving out the `omit` fields (the launch's own --np, --hosts). Built from the
 * parsed options, never by editing the typed words, so a child reads exactly what the parent resolved.
 */
export function childArguments(options: ResolvedOptions, programNamesCollective: boolean,
  omit: readonly OptionField[] = ['np', 'hosts']): string[] {
  const out: string[] = programNamesCollective ? [] : [options.collective];
  for (const f of FLAGS) {
    if (omit.includes(f.field)) continue;
    const arg = flagArgument(f, options[f.field]);
    if (arg !== null) out.push(arg);
  }
  return out;
}
