// Command lines for fuzzing, built from the real flag table (every letter and long name, getopt's spellings,
// values of the right kind, of the wrong kind, and garbage), from a seeded generator so a failure is
// reproducible: COLLBENCH_FUZZ_SEED=<seed printed in the test name>.
import { ACTIONS, FLAGS } from '../../bench/config/flags.js';
import { seededRandom } from '../../bench/numbers/stats.js';

export function fuzzSeed(): number {
  return Number(process.env.COLLBENCH_FUZZ_SEED ?? 20261123);
}

/** A seeded generator (numbers/stats.ts seededRandom), so a failure is reproducible from the printed seed. */
export const rng = seededRandom;

const GARBAGE = [
  '',
  ' ',
  '-',
  '--',
  '---',
  '-1',
  '0',
  '0x',
  '08',
  '1.5',
  '1e3',
  '9'.repeat(30),
  '-9223372036854775809',
  'NaN',
  'all',
  'none',
  '\u0000',
  '\n',
  'é',
  '😀',
  '--=',
  '-=',
  '=',
  '$(rm -rf /)',
  '`id`',
  ';',
  '|',
  '&&',
  '../x',
  '/dev/null',
  'file:',
  'redis://',
  'redis://h:99999',
  'h1,,h2',
  'h:0',
  '1K',
  '1KB',
  '1T',
  '64G',
  '-b',
  '--np',
  'run',
];

function valueFor(kind: string, choices: readonly string[] | undefined, r: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  if (r() < 0.3) return pick(GARBAGE);
  switch (kind) {
    case 'size':
      return pick(['8', '1K', '128K', '1M', '32M', '1G', '0', String(Math.floor(r() * 1e9))]);
    case 'int':
      return pick(['-1', '0', '1', '2', '3', '4', '20', '0x10', '010', '128', '2147483647', '2147483648']);
    case 'bool':
      return pick(['0', '1', '2']);
    case 'real':
      return pick(['0', '0.5', '1', '2.5', '100', '101', '-1', '1e2', '.5', 'NaN']);
    case 'duration':
      return pick(['90s', '30m', '2h', '1d', '0', '7200', '-5s', '1e3', 'soon', '2 h']);
    case 'choice':
    case 'list':
      return pick([...(choices ?? []), 'all']);
    default:
      return pick(['out.json', '-', 'file:/tmp/x', 'redis://h0:6379', 'eth0', 'h1,h2:4', '/tmp/libnccl.so.2']);
  }
}

/** One argument vector: a few flags in any of getopt's spellings, sometimes a stray word. */
export function vector(r: () => number): string[] {
  const argv: string[] = [];
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const n = Math.floor(r() * 6);
  for (let i = 0; i < n; i++) {
    const roll = r();
    if (roll < 0.05) {
      argv.push(pick(GARBAGE));
      continue;
    }
    if (roll < 0.07) {
      argv.push(pick(ACTIONS).long === 'help' ? '-h' : '--version');
      continue;
    }
    const f = pick(FLAGS);
    const takes = f.kind !== 'switch';
    const value = valueFor(f.kind, 'choices' in f ? f.choices : undefined, r);
    const spelling = r();
    if (!takes) argv.push(`--${f.long}`);
    else if (f.short && spelling < 0.3) argv.push(`-${f.short}`, value);
    else if (f.short && spelling < 0.5) argv.push(`-${f.short}${value}`);
    else if (spelling < 0.75) argv.push(`--${f.long}=${value}`);
    else if (spelling < 0.85)
      argv.push(`--${f.long.slice(0, Math.max(1, Math.floor(f.long.length * r())))}`, value); // a prefix
    else argv.push(`--${f.long}`, value);
  }
  return argv;
}
