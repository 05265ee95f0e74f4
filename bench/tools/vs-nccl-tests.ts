// collbench against NVIDIA's nccl-tests on the same GPU and libnccl (goal <= 1.02x or <= +0.3 µs per size): both run
// interleaved (side-by-side.ts) for every collective and mode, each run a fresh process, medians over rounds judged
// per size. Entry point bin/vs-nccl-tests.ts (make bench-gpu, the GPU check), run by the bundle's node.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { findBackendRecord } from '../backends/registry.js';
import { aFirst, analyseSize, markBeyondNoise, type Goal, type SizeResult } from './side-by-side.js';
import { splitTableRow } from '../report/reporters/nccl-table.js';
import { COLLECTIVES, type CollectiveName } from '../core/types.js';
import { flag, helpFlag } from '../config/flags.js';
import { parseOptions as parseTable, type CommandOptions } from '../config/option-parser.js';
import { parseSize } from '../config/sizes.js';
import { UsageError } from '../core/errors.js';
import { ENV } from '../core/environment.js';

/** One kind of run: its extra flags; each run gives an out-of-place and an in-place column. */
export const RUNS = {
  sweep: [],
  I1: ['-I', '1'],
  // nccl-tests cannot sweep from -b 0 (its warm-up loop doubles 0 forever): 2 B of float is 0 elements, a size-0 row.
  zero: ['-b', '2', '-e', '2'],
  // -C 1: the time column is the host's enqueue time per op (the clock read before the wait for completion): where the
  // excess over nccl-tests is the host side of the enqueue, it shows here as well.
  C1: ['-C', '1'],
} as const satisfies Record<string, readonly string[]>;
export type RunKind = keyof typeof RUNS;

export interface PerfRow {
  size: number;
  oopUs: number;
  ipUs: number;
}

/** The result rows of an nccl-tests-format table (collbench prints the same): size, out-of-place and in-place time. */
export function parsePerfTable(text: string): PerfRow[] {
  const rows: PerfRow[] = [];
  for (const line of text.split('\n')) {
    const r = splitTableRow(line);
    if (!r || !/^\d+$/.test(r.lead[0]!) || !/^\d+$/.test(r.lead[1]!)) continue;
    const oop = Number(r.oop[0]),
      ip = Number(r.ip[0]);
    if (!Number.isFinite(oop) || !Number.isFinite(ip)) continue;
    rows.push({ size: Number(r.lead[0]), oopUs: oop, ipUs: ip });
  }
  return rows;
}

/** `# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809`, `# collbench version … backend nccl (NCCL …)`. */
export function versionLine(text: string): string {
  return (
    text
      .split('\n')
      .find((l) => /^# (nccl-tests|collbench) version/.test(l))
      ?.slice(2)
      .trim() ?? '(no version line)'
  );
}

export interface Options {
  ncclTests: string; // folder of nccl-tests' *_perf
  collbench: string; // folder of collbench's *_perf
  backend: string; // collbench's --backend
  colls: CollectiveName[];
  runs: RunKind[];
  rounds: number;
  iters: number;
  warmup: number;
  minBytes: number;
  maxBytes: number;
  goal: Goal;
  timeoutSec: number; // one program run
  deadlineSec: number; // start no round that would end after this (0: none); at least one round runs
  ncclLib: string | null; // the libnccl both use (nccl-tests through LD_LIBRARY_PATH)
  markdown: boolean;
  json: string | null;
  strict: boolean;
}

const OPTIONS = 'Options';
/** The options of vs-nccl-tests, read by the parser and help renderer of every collbench command (config/). */
const VS_FLAGS = [
  flag.text(undefined, 'nccl-tests', 'ncclTests', OPTIONS, "nccl-tests' build folder (all_reduce_perf ...); required", {
    value: '<DIR>',
  }),
  flag.text(undefined, 'collbench', 'collbench', OPTIONS, "collbench's programs", {
    value: '<DIR>',
    defaultText: "this installation's bin/",
  }),
  {
    ...flag.text(
      undefined,
      'backend',
      'backend',
      OPTIONS,
      "collbench's --backend (mpi stands in where there is no GPU)",
      { value: '<NAME>' },
    ),
    default: 'nccl' as string,
  },
  {
    ...flag.text(undefined, 'colls', 'colls', OPTIONS, 'collectives, or all', { value: '<LIST>' }),
    default: 'all_reduce,sendrecv' as string,
  },
  {
    ...flag.text(
      undefined,
      'runs',
      'runs',
      OPTIONS,
      'sweep (out-of-place and in-place), I1 (-I 1), zero (the 0-byte row), ' +
        "C1 (-C 1: the host's enqueue time per op)",
      { value: '<LIST>', defaultText: 'all' },
    ),
    default: Object.keys(RUNS).join(','),
  },
  flag.int(undefined, 'rounds', 'rounds', 3, 'round count', 1, undefined, OPTIONS, 'interleaved rounds', {
    value: '<N>',
  }),
  flag.int(undefined, 'iters', 'iters', 20, 'iteration count', 1, undefined, OPTIONS, '-n of both', { value: '<N>' }),
  flag.int(undefined, 'warmup', 'warmup', 1, 'warm-up count', 0, undefined, OPTIONS, '-w of both', { value: '<N>' }),
  {
    ...flag.text(undefined, 'min-bytes', 'minBytes', OPTIONS, 'first size; sizes double', { value: '<SIZE>' }),
    default: '8',
  },
  { ...flag.text(undefined, 'max-bytes', 'maxBytes', OPTIONS, 'last size', { value: '<SIZE>' }), default: '4M' },
  flag.number(
    'goal-ratio',
    'goalRatio',
    1.02,
    'goal ratio',
    0,
    undefined,
    OPTIONS,
    'the goal is met when collbench takes at ' + "most R times nccl-tests' time ...",
    { value: '<R>' },
  ),
  flag.number('goal-us', 'goalUs', 0.3, 'goal (us)', 0, undefined, OPTIONS, '... or at most US more', {
    value: '<US>',
  }),
  flag.text(undefined, 'nccl-lib', 'ncclLib', OPTIONS, 'the libnccl.so.2 both load', {
    value: '<PATH>',
    defaultText: "the one collbench's info finds",
  }),
  flag.int(
    undefined,
    'timeout',
    'timeoutSec',
    120,
    'timeout in seconds',
    1,
    undefined,
    OPTIONS,
    "one program run's limit",
    { value: '<S>' },
  ),
  flag.int(
    undefined,
    'deadline',
    'deadlineSec',
    0,
    'deadline in seconds',
    0,
    undefined,
    OPTIONS,
    'start no round that would ' + 'end later than S seconds after the start; 0: none',
    { value: '<S>' },
  ),
  flag.toggle('markdown', 'markdown', OPTIONS, 'the table as Markdown'),
  flag.output(undefined, 'json', 'json', OPTIONS, 'every sample'),
  flag.toggle('strict', 'strict', OPTIONS, 'exit 1 when a goal is missed'),
  helpFlag(OPTIONS),
] as const;

export const VS_OPTIONS: CommandOptions<typeof VS_FLAGS> = {
  command: 'vs-nccl-tests',
  usage: 'vs-nccl-tests --nccl-tests DIR [options]',
  about:
    "Runs collbench's and nccl-tests' *_perf programs interleaved (A B, B A, ...) on this machine and prints, per\n" +
    'collective, mode and size, both medians over the rounds, ratio, added us, spread and a 95 % interval, and the goal.',
  groups: [OPTIONS],
  flags: VS_FLAGS,
  footer: '',
};

export class BadInput extends Error {}

/** The options, or 'help'; BadInput names the bad one. `root` is the installation (its bin/ is collbench's). */
export function parseOptions(argv: string[], root: string): Options | 'help' {
  let parsed;
  try {
    parsed = parseTable(argv, VS_OPTIONS);
  } catch (e) {
    if (e instanceof UsageError) throw new BadInput(e.message.replace(/^vs-nccl-tests: /, ''));
    throw e;
  }
  const { stop, values, positionals } = parsed;
  if (stop === 'help') return 'help';
  if (positionals.length > 0) throw new BadInput(`unexpected argument '${positionals[0]}' (see --help)`);
  const ncclTests = values.ncclTests;
  if (!ncclTests) throw new BadInput("--nccl-tests DIR is required (nccl-tests' build folder)");
  const collbench = values.collbench ?? join(root, 'bin');
  const colls = (values.colls === 'all' ? [...COLLECTIVES] : values.colls.split(',')) as CollectiveName[];
  for (const c of colls)
    if (!(COLLECTIVES as readonly string[]).includes(c))
      throw new BadInput(`--colls: unknown collective '${c}' (${COLLECTIVES.join(', ')})`);
  for (const [dir, what] of [
    [ncclTests, 'nccl-tests'],
    [collbench, 'collbench'],
  ] as const) {
    for (const c of colls)
      if (!existsSync(join(dir, `${c}_perf`)))
        throw new BadInput(`--${what}: ${join(dir, `${c}_perf`)} does not exist`);
  }
  const runs = values.runs.split(',') as RunKind[];
  for (const r of runs)
    if (!(r in RUNS)) throw new BadInput(`--runs: unknown run '${r}' (${Object.keys(RUNS).join(', ')})`);
  const size = (flag: string, text: string): number => {
    try {
      return parseSize(text, flag);
    } catch (e) {
      throw new BadInput(`--${flag}: ${(e as Error).message}`);
    }
  };
  const minBytes = size('min-bytes', values.minBytes),
    maxBytes = size('max-bytes', values.maxBytes);
  if (minBytes < 1 || minBytes > maxBytes)
    throw new BadInput('--min-bytes must be >= 1 and <= --max-bytes (the 0-byte row is --runs zero)');
  const ncclLib = values.ncclLib;
  if (ncclLib !== null && !existsSync(ncclLib)) throw new BadInput(`--nccl-lib: ${ncclLib} does not exist`);
  return {
    ncclTests,
    collbench,
    backend: values.backend,
    colls,
    runs,
    rounds: values.rounds,
    iters: values.iters,
    warmup: values.warmup,
    minBytes,
    maxBytes,
    goal: { ratio: values.goalRatio, addedUs: values.goalUs },
    timeoutSec: values.timeoutSec,
    deadlineSec: values.deadlineSec,
    ncclLib,
    markdown: values.markdown,
    json: values.json,
    strict: values.strict,
  };
}

export type Tool = 'collbench' | 'nccl-tests';
/** Runs one program and returns its output, or throws naming the command and its exit. */
export type RunProgram = (tool: Tool, coll: CollectiveName, args: string[]) => string;

/** Both tools' arguments for one run kind (the same for both; collbench gets --backend besides). */
export function runArgs(o: Pick<Options, 'minBytes' | 'maxBytes' | 'iters' | 'warmup'>, kind: RunKind): string[] {
  const sweep = kind === 'zero' ? [] : ['-b', String(o.minBytes), '-e', String(o.maxBytes)];
  return [...sweep, '-f', '2', '-n', String(o.iters), '-w', String(o.warmup), '-c', '0', ...RUNS[kind]];
}

export interface Cell {
  coll: CollectiveName;
  mode: string; // 'sweep oop', 'I1 ip', 'zero oop', …
  sizes: SizeResult[];
  error: string | null;
}

export interface Collected {
  cells: Cell[];
  rounds: number; // completed
  versions: Partial<Record<Tool, string>>;
  errors: string[];
}

/**
 * The interleaved rounds: round-major (every collective and run kind in a round, A B in even rounds, B A in odd
 * ones), then per cell the sizes judged. `clock` (seconds) and the deadline stop starting rounds that would not fit.
 */
export function collect(o: Options, run: RunProgram, clock: () => number = () => performance.now() / 1000): Collected {
  const samples = new Map<string, Record<Tool, PerfRow[][]>>();
  const versions: Partial<Record<Tool, string>> = {};
  const errors: string[] = [];
  const failed = new Set<string>();
  const start = clock();
  let rounds = 0;
  for (let r = 0; r < o.rounds; r++) {
    const roundStart = clock();
    for (const coll of o.colls) {
      for (const kind of o.runs) {
        const key = `${coll} ${kind}`;
        if (failed.has(key)) continue;
        const slot = samples.get(key) ?? { collbench: [], 'nccl-tests': [] };
        samples.set(key, slot);
        const order: Tool[] = aFirst(r) ? ['collbench', 'nccl-tests'] : ['nccl-tests', 'collbench'];
        for (const tool of order) {
          try {
            const text = run(tool, coll, runArgs(o, kind));
            versions[tool] ??= versionLine(text);
            const rows = parsePerfTable(text);
            if (rows.length === 0)
              throw new Error(`${tool} ${coll}_perf ${runArgs(o, kind).join(' ')}: no result rows in its output`);
            slot[tool].push(rows);
          } catch (e) {
            errors.push((e as Error).message);
            failed.add(key);
            break;
          }
        }
      }
    }
    if (failed.size === o.colls.length * o.runs.length) break; // nothing left to run
    rounds++;
    const took = clock() - roundStart;
    if (o.deadlineSec > 0 && clock() - start + took > o.deadlineSec) break;
  }
  const cells: Cell[] = [];
  for (const coll of o.colls) {
    for (const kind of o.runs) {
      const key = `${coll} ${kind}`;
      const s = samples.get(key);
      for (const side of ['oop', 'ip'] as const) {
        const mode = `${kind} ${side}`;
        if (!s || failed.has(key) || s.collbench.length === 0) {
          cells.push({ coll, mode, sizes: [], error: failed.has(key) ? 'a run failed (see the errors)' : 'no rounds' });
          continue;
        }
        const n = Math.min(s.collbench.length, s['nccl-tests'].length);
        const a = s.collbench.slice(0, n),
          b = s['nccl-tests'].slice(0, n);
        const sizesOf = a[0]!.map((x) => x.size);
        const shape = (rs: PerfRow[]): string => rs.map((x) => x.size).join(',');
        const odd = [...a, ...b].find((rs) => shape(rs) !== sizesOf.join(','));
        if (odd) {
          cells.push({
            coll,
            mode,
            sizes: [],
            error: `the row sizes differ between runs: ${sizesOf.join(',')} vs ${shape(odd)}`,
          });
          continue;
        }
        const us = (x: PerfRow): number => (side === 'oop' ? x.oopUs : x.ipUs);
        const sizes = sizesOf.map((size, i) =>
          analyseSize(
            size,
            size,
            a.map((rs) => us(rs[i]!)),
            b.map((rs) => us(rs[i]!)),
            o.goal,
            2,
          ),
        );
        markBeyondNoise(sizes);
        cells.push({ coll, mode, sizes, error: null });
      }
    }
  }
  return { cells, rounds, versions, errors };
}

const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '-');
const verdict = (s: SizeResult): string => (s.met ? 'ok' : s.beyondNoise ? 'MISSED' : 'missed (noise)');
const span = (xs: number[]): string => `${f(Math.min(...xs))}-${f(Math.max(...xs))}`;

/** The side-by-side table (text, or Markdown for the GPU check's report) and the summary lines after it. */
export function render(c: Collected, o: Pick<Options, 'goal' | 'markdown'>): string {
  const head = [
    'coll',
    'mode',
    'size',
    'collbench_us',
    'nccl-tests_us',
    'ratio',
    'added_us',
    'ratio_ci95',
    'ratio_p25-p75',
    'collbench_min-max',
    'nccl-tests_min-max',
    'goal',
  ];
  const rows: string[][] = [];
  for (const cell of c.cells) {
    if (cell.error) {
      rows.push([cell.coll, cell.mode, '-', '-', '-', '-', '-', '-', '-', '-', '-', cell.error]);
      continue;
    }
    for (const s of cell.sizes) {
      rows.push([
        cell.coll,
        cell.mode,
        String(s.size),
        f(s.aMedian),
        f(s.bMedian),
        f(s.ratio, 3),
        f(s.addedUs),
        `${f(s.ciLo)}-${f(s.ciHi)}`,
        `${f(s.ratioP25)}-${f(s.ratioP75)}`,
        span(s.aUs),
        span(s.bUs),
        verdict(s),
      ]);
    }
  }
  const all = c.cells.flatMap((x) => x.sizes);
  const missed = c.cells.flatMap((x) => x.sizes.filter((s) => !s.met).map((s) => `${x.coll}/${x.mode}/${s.size}`));
  const noise = c.cells.flatMap((x) =>
    x.sizes.filter((s) => s.beyondNoise).map((s) => `${x.coll}/${x.mode}/${s.size}`),
  );
  const lines: string[] = [];
  if (o.markdown) {
    lines.push(
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${r.join(' | ')} |`),
    );
  } else {
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]): string =>
      r.map((x, i) => (i < 2 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ');
    lines.push(line(head), ...rows.map(line));
  }
  lines.push(
    '',
    `goal (collbench median <= ${o.goal.ratio} x nccl-tests' or <= +${o.goal.addedUs} us) met at ${all.length - missed.length}/${all.length} ` +
      `sizes over ${c.rounds} round(s); missed beyond noise (one-sided Mann-Whitney against the allowance, Holm per collective and mode): ${noise.length}`,
  );
  if (missed.length) lines.push(`missed: ${missed.join(' ')}`);
  for (const e of c.errors) lines.push(`error: ${e.length > 400 ? `${e.slice(0, 400)}…` : e}`);
  return lines.join('\n');
}

/** Where collbench finds libnccl (`collbench info --json`), so that nccl-tests loads the same one; null if none. */
function collbenchNcclLib(collbenchDir: string, env: NodeJS.ProcessEnv): string | null {
  const r = spawnSync(join(collbenchDir, 'collbench'), ['info', '--json'], { encoding: 'utf8', env, timeout: 60_000 });
  try {
    const info = JSON.parse(r.stdout) as { backends: { name: string; nccl?: { path?: string } }[] };
    return info.backends.find((b) => b.nccl?.path)?.nccl?.path ?? null;
  } catch {
    return null;
  }
}

/** Runs the comparison with real programs; the exit code (0, 1 when a run failed or --strict and a goal missed). */
export function main(o: Options, out: (s: string) => void): number {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (o.ncclLib) env[ENV.NCCL_LIB] = o.ncclLib;
  const lib = findBackendRecord(o.backend)?.gpu ? (o.ncclLib ?? collbenchNcclLib(o.collbench, env)) : null;
  const ntEnv: NodeJS.ProcessEnv = { ...env };
  // nccl-tests links libnccl.so.2 and libcudart.so.13 by name: the libnccl collbench loads, CUDA's own lib64 last.
  const cudaLib = join(env.CUDA_HOME ?? '/usr/local/cuda', 'lib64');
  ntEnv.LD_LIBRARY_PATH = [lib && dirname(lib), env.LD_LIBRARY_PATH, existsSync(cudaLib) ? cudaLib : null]
    .filter(Boolean)
    .join(':');
  const run: RunProgram = (tool, coll, args) => {
    const exe = join(tool === 'collbench' ? o.collbench : o.ncclTests, `${coll}_perf`);
    const argv = tool === 'collbench' ? ['--backend', o.backend, ...args] : args;
    const r = spawnSync(exe, argv, {
      encoding: 'utf8',
      env: tool === 'collbench' ? env : ntEnv,
      timeout: o.timeoutSec * 1000,
      killSignal: 'SIGKILL',
      maxBuffer: 1 << 26,
    });
    if (r.error || r.status !== 0) {
      const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}`;
      throw new Error(
        `${exe} ${argv.join(' ')}: ${why}: ${(r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' | ')}`,
      );
    }
    return r.stdout;
  };
  const t0 = Date.now();
  const started = new Date().toISOString();
  const c = collect(o, run);
  const pre = o.markdown ? '' : '# ';
  out(
    `${pre}collbench (--backend ${o.backend}) vs nccl-tests, float sum, ${o.minBytes}..${o.maxBytes} B, -n ${o.iters} -w ${o.warmup} -c 0, ` +
      `${c.rounds} interleaved round(s) (A B, B A, ...), each run a fresh process; ${started}, ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  out(
    `${pre}collbench: ${c.versions.collbench ?? '-'}; nccl-tests: ${c.versions['nccl-tests'] ?? '-'}; libnccl: ${lib ?? "(the loader's)"}`,
  );
  out(
    `${pre}modes: sweep = ${runArgs(o, 'sweep').join(' ')}; I1 = + -I 1; zero = ${runArgs(o, 'zero').join(' ')} (0 float elements); C1 = + -C 1 (enqueue time); ` +
      "oop/ip = out-of-place/in-place column; times are the tools' own time column (us per op)",
  );
  out('');
  out(render(c, o));
  if (o.json)
    writeFileSync(
      o.json,
      `${JSON.stringify({ kind: 'collbench-vs-nccl-tests', started, options: o, ...c }, null, 1)}\n`,
    );
  if (c.errors.length) return 1;
  return o.strict && c.cells.some((x) => x.sizes.some((s) => !s.met)) ? 1 : 0;
}
