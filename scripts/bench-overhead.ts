// Benchmark (not a test): is the time collbench reports the engine's own? Runs collbench and a plain loop of the
// same MPI/Gloo calls on the same buffers (native/test/plain_mpi_loop.c, plain_gloo_loop.cc) interleaved round by
// round, launched alike, per backend × ranks × collective, and prints per size both medians, ratio, added µs, spread,
// outliers and the goal (≤ 5 % or ≤ 0.10 µs), and whether a miss is beyond the run-to-run noise (Mann-Whitney against
// the goal's allowance, Holm across a cell's sizes: numbers/stats.ts); optionally IMB-MPI1 beside, or in its place
// (--native-loop) its own loop without Node (native/test/native_loop.cc) or (--control) the plain loop again, which
// measures how often the goal is missed by chance on this machine; --with-control runs that A/A comparison in the
// same rounds as the main one, so both face the same machine. Options: --help (USAGE below).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, hostname, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { aFirst, analyseSize, linearQuantile, markBeyondNoise, type SizeResult } from '../bench/tools/side-by-side.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COLLS = ['all_reduce', 'all_gather', 'alltoall', 'broadcast', 'reduce_scatter', 'sendrecv'] as const;
type Coll = (typeof COLLS)[number];
type Backend = 'mpi' | 'gloo';
const GOAL_RATIO = 1.05,
  GOAL_ADDED_US = 0.1,
  OUTLIER_FACTOR = 2;

// ---- options ---------------------------------------------------------------------------------------------

const USAGE = `usage: node --import tsx scripts/bench-overhead.ts [options]
  --rounds N            interleaved rounds per backend x ranks x collective (default 7, at least 1)
  --iters N             timed iterations per row, both tools (-n; default 100)
  --gloo-iters N        the same for gloo at 2+ ranks, whose ops take 0.3-5 ms here (default 20)
  --warmup N            warm-up iterations per warm-up size, both tools (-w; default 5)
  --start-delay-ms N    the reference loops sleep N ms before they start (-s), about as long as collbench's
                        start-up (Node, the module), so both time their ops as long after exec (default 300;
                        0: at once). On some machines memory-bound ops run 5-10 % slower a few hundred ms
                        after exec, even in a process that only slept
  --backends LIST       mpi,gloo (default both)
  --ranks LIST          rank counts (default 1,2); 1 = a plain process, more = mpirun -np N
  --colls LIST          ${COLLS.join(',')} (default all)
  --min-bytes SIZE      first size (default 8)
  --max-bytes SIZE      last size, sizes double (default 4M)
  --json FILE           write every sample and verdict as JSON
  --yield 0|1           OMPI_MCA_mpi_yield_when_idle for both tools (default: inherited)
  --thread-level L      MPI thread level of the plain MPI loop: single|funneled|serialized|multiple
                        (default serialized, what collbench requests)
  --thread-level-cost   instead of collbench: the plain MPI loop at multiple vs at --thread-level
                        (default serialized), same table (mpi only)
  --native-loop         instead of collbench: its own timed loop and backend driven from C++, no Node
                        (native/test/native_loop.cc: native_mpi_loop, native_gloo_loop), vs the plain loop:
                        what the loop itself adds
  --control             instead of collbench: the plain loop again (an A/A run): how many sizes miss the goal,
                        and how many significantly, when nothing differs but chance
  --with-control        besides collbench (or --native-loop, --thread-level-cost), run the plain loop a second
                        time in every round (order rotating over the three) and judge it against the plain loop
                        too: the A/A misses on the same machine in the same minutes, per cell and in the summary
  --imb PATH            also run Intel MPI Benchmarks IMB-MPI1 at 2 ranks: PATH is the executable or an
                        mpi-benchmarks source tree (built with mpicc/mpicxx into a temporary directory)
  --imb-off-cache       pass -off_cache -1 to IMB-MPI1
  --native-dir DIR      take collbench's modules and the plain loops from DIR (default build/Release);
                        either way they are copied once, so a rebuild during the run does not touch it
  --strict              exit 1 when a goal is missed (default: report only)`;

function parseSize(text: string): number {
  const m = /^(\d+)([kKmMgG]?)$/.exec(text);
  if (!m) fail(`bad size '${text}' (digits with an optional K, M or G)`);
  return Number(m[1]) * ({ '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase()] ?? 1);
}

function positiveInt(text: string, what: string, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) fail(`--${what}: expected an integer >= ${min}, got '${text}'`);
  return n;
}

function fail(message: string): never {
  console.error(`bench-overhead: ${message}\n${USAGE}`);
  process.exit(2);
}

const { values: argv } = (() => {
  try {
    return parseArgs({
      options: {
        rounds: { type: 'string', default: '7' },
        iters: { type: 'string', default: '100' },
        'gloo-iters': { type: 'string', default: '20' },
        warmup: { type: 'string', default: '5' },
        'start-delay-ms': { type: 'string', default: '300' },
        backends: { type: 'string', default: 'mpi,gloo' },
        ranks: { type: 'string', default: '1,2' },
        colls: { type: 'string', default: COLLS.join(',') },
        'min-bytes': { type: 'string', default: '8' },
        'max-bytes': { type: 'string', default: '4M' },
        json: { type: 'string' },
        yield: { type: 'string' },
        'thread-level': { type: 'string' },
        'thread-level-cost': { type: 'boolean', default: false },
        'native-loop': { type: 'boolean', default: false },
        control: { type: 'boolean', default: false },
        'with-control': { type: 'boolean', default: false },
        imb: { type: 'string' },
        'imb-off-cache': { type: 'boolean', default: false },
        strict: { type: 'boolean', default: false },
        'native-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    });
  } catch (e) {
    return fail((e as Error).message);
  }
})();
if (argv.help) {
  console.log(USAGE);
  process.exit(0);
}

const opts = {
  rounds: positiveInt(argv.rounds, 'rounds'),
  iters: positiveInt(argv.iters, 'iters'),
  glooIters: positiveInt(argv['gloo-iters'], 'gloo-iters'),
  warmup: positiveInt(argv.warmup, 'warmup', 0),
  startDelayMs: positiveInt(argv['start-delay-ms'], 'start-delay-ms', 0),
  backends: argv.backends.split(',').map((b) => {
    if (b !== 'mpi' && b !== 'gloo') fail(`--backends: unknown backend '${b}'`);
    return b as Backend;
  }),
  ranks: argv.ranks.split(',').map((r) => positiveInt(r, 'ranks')),
  colls: argv.colls.split(',').map((c) => {
    if (!(COLLS as readonly string[]).includes(c)) fail(`--colls: unknown collective '${c}' (${COLLS.join(', ')})`);
    return c as Coll;
  }),
  minBytes: parseSize(argv['min-bytes']),
  maxBytes: parseSize(argv['max-bytes']),
  json: argv.json ?? null,
  yieldWhenIdle: argv.yield ?? null,
  threadLevel: argv['thread-level'] ?? 'serialized',
  threadLevelCost: argv['thread-level-cost'],
  nativeLoop: argv['native-loop'],
  control: argv.control,
  withControl: argv['with-control'],
  imb: argv.imb ?? null,
  imbOffCache: argv['imb-off-cache'],
};
if (opts.minBytes < 1 || opts.minBytes > opts.maxBytes) fail('--min-bytes must be >= 1 and <= --max-bytes');
if (opts.imb !== null && !existsSync(opts.imb)) fail(`--imb: ${resolve(opts.imb)} does not exist`);
if (opts.imbOffCache && opts.imb === null) fail('--imb-off-cache: needs --imb PATH');
if (opts.imb !== null && !(opts.backends.includes('mpi') && opts.ranks.includes(2)))
  fail('--imb: runs beside the MPI cells at 2 ranks; add mpi to --backends and 2 to --ranks');
if (opts.yieldWhenIdle !== null && !['0', '1'].includes(opts.yieldWhenIdle)) fail('--yield: 0 or 1');
if (!['single', 'funneled', 'serialized', 'multiple'].includes(opts.threadLevel)) {
  fail('--thread-level: single, funneled, serialized or multiple');
}
if ([opts.threadLevelCost, opts.nativeLoop, opts.control].filter(Boolean).length > 1) {
  fail('--thread-level-cost, --native-loop and --control: give one');
}
if (opts.withControl && opts.control) fail('--with-control: already an A/A run with --control; give one');
if (opts.threadLevelCost) opts.backends = opts.backends.filter((b) => b === 'mpi');

const SIZES: number[] = [];
for (let s = opts.minBytes; s <= opts.maxBytes; s *= 2) SIZES.push(s);

// ---- launching -------------------------------------------------------------------------------------------

// One build for the whole run: the modules and plain loops are copied once, so a rebuild during the run (make, other
// work on this tree) neither breaks nor mixes it; collbench finds its modules through COLLBENCH_NATIVE_DIR.
const snapshot = mkdtempSync(join(tmpdir(), 'collbench-overhead-build-'));
process.on('exit', () => rmSync(snapshot, { recursive: true, force: true }));
for (const backend of opts.backends) {
  for (const file of [
    `collbench_${backend}.node`,
    `plain_${backend}_loop`,
    ...(opts.nativeLoop ? [`native_${backend}_loop`] : []),
  ]) {
    const src = join(argv['native-dir'] ?? join(root, 'build', 'Release'), file);
    if (!existsSync(src)) fail(`${src} is missing: build first (npx cmake-js compile -d native -O build)`);
    cpSync(src, join(snapshot, file));
  }
}

/** The environment both tools of a cell get: the same MCA settings, singleton speed-ups for 1 rank. */
function toolEnv(backend: Backend, ranks: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, COLLBENCH_NATIVE_DIR: snapshot };
  if (opts.yieldWhenIdle !== null) env.OMPI_MCA_mpi_yield_when_idle = opts.yieldWhenIdle;
  // collbench's mpi driver sets these itself for a plain process (launch/launcher.ts); the plain loop
  // gets them from here, so both start the same singleton.
  if (backend === 'mpi' && ranks === 1) {
    env.OMPI_MCA_ess_singleton_isolated ??= '1';
    env.OMPI_MCA_pml ??= 'ob1';
  }
  return env;
}

/** The command line: a plain process for 1 rank, else mpirun with the flags collbench's --np adds (launch/mpirun.ts). */
function launch(ranks: number, program: string[], env: NodeJS.ProcessEnv): [string, string[]] {
  if (ranks === 1) return [program[0]!, program.slice(1)];
  const args: string[] = [];
  if (process.getuid?.() === 0) args.push('--allow-run-as-root');
  if (ranks > availableParallelism()) args.push('--oversubscribe');
  if (!env.OMPI_MCA_pml) args.push('--mca', 'pml', 'ob1');
  args.push('-x', 'COLLBENCH_NATIVE_DIR', '-np', String(ranks), ...program);
  return [env.COLLBENCH_MPIRUN ?? 'mpirun', args];
}

/** Runs one sweep; a failed one (a Gloo timeout on a loaded machine, say) is retried twice, 10 s apart, and counted. */
let retries = 0;
function run(program: string[], ranks: number, env: NodeJS.ProcessEnv): string {
  const [cmd, args] = launch(ranks, program, env);
  for (let attempt = 0; ; attempt++) {
    const r = spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 1 << 26, timeout: 900_000 });
    if (!r.error && r.status === 0) return r.stdout;
    const why = `${cmd} ${args.join(' ')} ${r.error ? r.error.message : `exited ${r.status ?? r.signal}`}:\n${r.stderr}${r.stdout.slice(-2000)}`;
    if (attempt === 2) throw new Error(why);
    retries++;
    console.error(`# retrying in 10 s: ${why}`);
    spawnSync('sleep', ['10']);
  }
}

const itersOf = (backend: Backend, ranks: number): number =>
  backend === 'gloo' && ranks > 1 ? opts.glooIters : opts.iters;
const sweepArgs = (backend: Backend, ranks: number): string[] => [
  '-b',
  String(opts.minBytes),
  '-e',
  String(opts.maxBytes),
  '-f',
  '2',
  '-n',
  String(itersOf(backend, ranks)),
  '-w',
  String(opts.warmup),
];

/** One row per requested size: out-of-place µs and the row's actual size (chunked collectives round down). */
interface Sample {
  us: number;
  bytes: number;
}

function collbenchSweep(backend: Backend, ranks: number, coll: Coll): Sample[] {
  const dir = mkdtempSync(join(tmpdir(), 'collbench-overhead-'));
  try {
    const json = join(dir, 'report.json');
    run(
      [
        join(root, 'bin', `${coll}_perf`),
        '--backend',
        backend,
        ...sweepArgs(backend, ranks),
        '-d',
        'float',
        '-c',
        '0',
        '-a',
        '3',
        '-J',
        json,
      ],
      ranks,
      toolEnv(backend, ranks),
    );
    const doc = JSON.parse(readFileSync(json, 'utf8')) as {
      rows: { sizeBytes: number; outOfPlace: { timeUs: number | null } }[];
    };
    // Rows come in sweep order (one case, one cycle); chunked collectives may report size 0 for several.
    if (doc.rows.length !== SIZES.length)
      throw new Error(`collbench ${coll}: ${doc.rows.length} rows, expected ${SIZES.length}`);
    return doc.rows.map((r) => ({ us: r.outOfPlace.timeUs ?? NaN, bytes: r.sizeBytes }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A reference loop's sweep: plain_<backend>_loop (the engine's calls only) or native_<backend>_loop (collbench's loop). */
function loopSweep(exe: string, backend: Backend, ranks: number, coll: Coll, extra: string[]): Sample[] {
  const out = run(
    [join(snapshot, exe), '-c', coll, ...sweepArgs(backend, ranks), '-s', String(opts.startDelayMs), ...extra],
    ranks,
    toolEnv(backend, ranks),
  );
  const rows = out
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .map((l) => l.trim().split(/\s+/).map(Number));
  if (rows.length !== SIZES.length || rows.some((r, i) => r[0] !== SIZES[i])) {
    throw new Error(`${exe} ${coll}: unexpected output:\n${out}`);
  }
  return rows.map((r) => ({ us: r[3]!, bytes: r[1]! }));
}

const plainSweep = (backend: Backend, ranks: number, coll: Coll, threadLevel = opts.threadLevel): Sample[] =>
  loopSweep(`plain_${backend}_loop`, backend, ranks, coll, backend === 'mpi' ? ['-t', threadLevel] : []);

// ---- statistics (tools/side-by-side.ts) --------------------------------------------------------------------

const median = (xs: number[]): number => linearQuantile(xs, 0.5);
const GOAL = { ratio: GOAL_RATIO, addedUs: GOAL_ADDED_US };
const analyse = (size: number, bytes: number, aUs: number[], bUs: number[]): SizeResult =>
  analyseSize(size, bytes, aUs, bUs, GOAL, OUTLIER_FACTOR);

// ---- IMB-MPI1 (optional) ---------------------------------------------------------------------------------

const IMB_NAMES: Record<Coll, string> = {
  all_reduce: 'Allreduce',
  all_gather: 'Allgather',
  alltoall: 'Alltoall',
  broadcast: 'Bcast',
  reduce_scatter: 'Reduce_scatter_block',
  sendrecv: 'Sendrecv',
};

/** IMB-MPI1 from PATH: the executable itself, a tree where it is built, or a source tree to build in a temp dir. */
function imbExecutable(path: string): string {
  const p = resolve(path);
  if (!existsSync(p)) throw new Error(`--imb: ${p} does not exist`);
  if (statSync(p).isFile()) return p;
  if (existsSync(join(p, 'IMB-MPI1'))) return join(p, 'IMB-MPI1');
  const tag = createHash('sha256').update(p).digest('hex').slice(0, 12);
  const build = join(tmpdir(), `collbench-imb-${tag}`);
  if (existsSync(join(build, 'IMB-MPI1'))) return join(build, 'IMB-MPI1');
  console.error(`# building IMB-MPI1 from ${p} in ${build} (mpicc/mpicxx)`);
  cpSync(p, build, { recursive: true, filter: (src) => !src.includes(`${p}/.git`) });
  // IMB builds with -Werror, which Open MPI's deprecated C++ bindings (pulled in by mpi.h under mpicxx) fail on
  // recent g++: skip them, as IMB uses the C API only.
  const r = spawnSync(
    'make',
    ['-C', build, 'IMB-MPI1', 'CC=mpicc', 'CXX=mpicxx', 'CPPFLAGS=-DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1'],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0 || !existsSync(join(build, 'IMB-MPI1'))) {
    throw new Error(`--imb: building IMB-MPI1 in ${build} failed:\n${(r.stderr ?? '').slice(-3000)}`);
  }
  return join(build, 'IMB-MPI1');
}

interface ImbRow {
  bytes: number;
  repetitions: number;
  tMinUs: number;
  tMaxUs: number;
  tAvgUs: number;
}

/** IMB-MPI1's text output → benchmark name → rows ("# Benchmarking NAME", "# #processes = N", header, numbers). */
function parseImb(text: string, processes: number): Map<string, ImbRow[]> {
  const out = new Map<string, ImbRow[]>();
  let name: string | null = null,
    procs = 0,
    cols: string[] | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const bench = /^#\s*Benchmarking\s+(\S+)/.exec(line);
    if (bench) {
      name = bench[1]!;
      cols = null;
      procs = 0;
      continue;
    }
    const np = /^#\s*#processes\s*=\s*(\d+)/.exec(line);
    if (np) {
      procs = Number(np[1]);
      continue;
    }
    if (name && /^#bytes\b/.test(line)) {
      cols = line.split(/\s+/);
      continue;
    }
    if (!name || !cols || procs !== processes) continue;
    if (line === '' || line.startsWith('#')) {
      if (line === '') cols = null;
      continue;
    }
    const f = line.split(/\s+/).map(Number);
    if (f.some((x) => !Number.isFinite(x))) continue;
    const at = (c: string): number => f[cols!.indexOf(c)] ?? NaN;
    const row = {
      bytes: at('#bytes'),
      repetitions: at('#repetitions'),
      tMinUs: at('t_min[usec]'),
      tMaxUs: at('t_max[usec]'),
      tAvgUs: at('t_avg[usec]'),
    };
    out.set(name, [...(out.get(name) ?? []), row]);
  }
  return out;
}

const IMB_RANKS = 2;

/**
 * IMB's message size for a collbench row: all_gather, alltoall and reduce_scatter count the per-rank block (IMB's
 * Reduce_scatter_block receives size / 4 floats per rank: IMB_reduce_scatter_block.c), the others the whole buffer.
 */
const imbBytesOf = (coll: Coll, rowBytes: number, ranks: number): number =>
  coll === 'all_gather' || coll === 'alltoall' || coll === 'reduce_scatter' ? rowBytes / ranks : rowBytes;

/** IMB-MPI1's command for one collective at 2 ranks over the sweep's sizes (IMB counts all_gather's per-rank block). */
function imbArgs(exe: string, coll: Coll): string[] {
  const lo = Math.max(0, Math.floor(Math.log2(opts.minBytes / IMB_RANKS))),
    hi = Math.ceil(Math.log2(opts.maxBytes));
  return [
    exe,
    '-npmin',
    String(IMB_RANKS),
    '-msglog',
    `${lo}:${hi}`,
    '-iter',
    String(opts.iters),
    '-iter_policy',
    'off',
    '-time',
    '600',
    '-zero_size',
    'off',
    ...(opts.imbOffCache ? ['-off_cache', '-1'] : []),
    IMB_NAMES[coll],
  ];
}

/** One IMB-MPI1 run of `coll`: its row for each size of the sweep (null where IMB has no such size). */
function imbSweep(exe: string, coll: Coll, rowBytes: number[]): (ImbRow | null)[] {
  const rows =
    parseImb(run(imbArgs(exe, coll), IMB_RANKS, toolEnv('mpi', IMB_RANKS)), IMB_RANKS).get(IMB_NAMES[coll]) ?? [];
  return rowBytes.map((bytes) => rows.find((r) => r.bytes === imbBytesOf(coll, bytes, IMB_RANKS)) ?? null);
}

// ---- main ------------------------------------------------------------------------------------------------

const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '-');
const pad = (s: string, n: number): string => s.padStart(n);
const nameA = opts.threadLevelCost ? 'multiple' : opts.nativeLoop ? 'native' : opts.control ? 'control' : 'collbench';
const nameB = opts.threadLevelCost ? opts.threadLevel : 'plain';
/** Rounds above OUTLIER_FACTOR x their tool's median over a cell's sizes: the judged tool's (a) or the plain loop's (b). */
const outliersOf = (sizes: SizeResult[], tool: 'a' | 'b'): number =>
  sizes.reduce((n, s) => n + (tool === 'a' ? s.aOutliers : s.bOutliers), 0);

/** One tool judged against the plain loop over a cell's sizes: collbench (or its stand-in), or the control. */
interface Judged {
  sizes: SizeResult[];
  outliersOk: boolean;
}
interface CellResult extends Judged {
  backend: Backend;
  ranks: number;
  coll: Coll;
  loadStart: number;
  loadEnd: number;
  control: Judged | null; // --with-control: the plain loop's second run in the same rounds, judged the same way
}
const cells: CellResult[] = [];
const started = new Date();
const cores = availableParallelism();

console.log(
  `# collbench overhead: ${nameA} vs ${nameB}, float sum, ${SIZES[0]}..${SIZES.at(-1)} B, -n ${opts.iters} (gloo at 2+ ranks: ${opts.glooIters}) -w ${opts.warmup}, ` +
    `${opts.rounds} interleaved rounds (${opts.withControl ? `with the control, ${nameB} again: the six orders by turn` : 'order alternates'}), ` +
    'time = out-of-place, max over ranks (-a 3)',
);
console.log(
  `# host ${hostname()} (${cores} cores), ${started.toISOString()}, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}` +
    `, modules ${argv['native-dir'] ?? join(root, 'build', 'Release')}, reference loops start after ${opts.startDelayMs} ms, ` +
    `plain MPI thread level ${opts.threadLevel}, OMPI_MCA_mpi_yield_when_idle=${opts.yieldWhenIdle ?? process.env.OMPI_MCA_mpi_yield_when_idle ?? '(unset)'}`,
);
console.log(
  `# goal per size: ${nameA} median <= ${GOAL_RATIO} x ${nameB} median, or at most ${GOAL_ADDED_US.toFixed(2)} us more; ` +
    `outliers: rounds above ${OUTLIER_FACTOR} x that tool's median for the size`,
);

// IMB-MPI1, when asked for: built (or found) once, before anything is measured (a failed build ends the run, exit 1),
// then run in every round of the 2-rank MPI cells beside the two tools.
let imbExe: string | null = null;
if (opts.imb !== null) {
  try {
    imbExe = imbExecutable(opts.imb);
  } catch (e) {
    console.error(`bench-overhead: ${(e as Error).message}`);
    process.exit(1);
  }
}
/** Per 2-rank MPI collective: IMB's rows, round by round (each round a sweep). */
const imbRounds = new Map<Coll, (ImbRow | null)[][]>();

for (const backend of opts.backends) {
  for (const ranks of opts.ranks) {
    for (const coll of opts.colls) {
      const loadStart = loadavg()[0]!;
      const a: Sample[][] = [],
        b: Sample[][] = [],
        c: Sample[][] = [];
      const sweepA = (): Sample[] =>
        opts.threadLevelCost
          ? plainSweep(backend, ranks, coll, 'multiple')
          : opts.nativeLoop
            ? loopSweep(`native_${backend}_loop`, backend, ranks, coll, [])
            : opts.control
              ? plainSweep(backend, ranks, coll)
              : collbenchSweep(backend, ranks, coll);
      const sweepB = (): Sample[] => plainSweep(backend, ranks, coll);
      const withImb = imbExe !== null && backend === 'mpi' && ranks === IMB_RANKS;
      const imbOf: (ImbRow | null)[][] = [];
      const sweepImb = (): void => {
        if (withImb) imbOf.push(imbSweep(imbExe!, coll, a[0]?.map((x) => x.bytes) ?? b[0]!.map((x) => x.bytes)));
      };
      // Rounds alternate A B, B A (IMB, when asked for, last, first); with a control C, the six orders of A B C in turn.
      const runA = (): void => {
          a.push(sweepA());
        },
        runB = (): void => {
          b.push(sweepB());
        },
        runC = (): void => {
          c.push(sweepB());
        };
      const threeWay = [
        [runA, runB, runC],
        [runC, runB, runA],
        [runB, runC, runA],
        [runA, runC, runB],
        [runC, runA, runB],
        [runB, runA, runC],
      ];
      for (let r = 0; r < opts.rounds; r++) {
        const tools = opts.withControl ? threeWay[r % threeWay.length]! : aFirst(r) ? [runA, runB] : [runB, runA];
        for (const step of r % 2 === 0 ? [...tools, sweepImb] : [sweepImb, ...tools]) step();
      }
      if (withImb) imbRounds.set(coll, imbOf);
      const loadEnd = loadavg()[0]!;
      /** Each size of `x`'s rounds against the plain loop's (b), misses beyond noise marked, outlier rounds counted. */
      const judge = (x: Sample[][], name: string): Judged => {
        const sizes = SIZES.map((size, i) => {
          const bytes = x[0]![i]!.bytes;
          if (b[0]![i]!.bytes !== bytes)
            throw new Error(
              `${backend} ${coll} ${size}: ${name}'s and ${nameB}'s row sizes differ (${bytes} vs ${b[0]![i]!.bytes})`,
            );
          return analyse(
            size,
            bytes,
            x.map((s) => s[i]!.us),
            b.map((s) => s[i]!.us),
          );
        });
        markBeyondNoise(sizes);
        return { sizes, outliersOk: outliersOf(sizes, 'a') <= outliersOf(sizes, 'b') };
      };
      const cell: CellResult = {
        backend,
        ranks,
        coll,
        loadStart,
        loadEnd,
        ...judge(a, nameA),
        control: opts.withControl ? judge(c, 'control') : null,
      };
      cells.push(cell);
      const { sizes, control } = cell;
      const verdict = (j: Judged, name: string): string =>
        `goal met at ${j.sizes.filter((s) => s.met).length}/${j.sizes.length} sizes ` +
        `(missed beyond noise: ${j.sizes.filter((s) => s.beyondNoise).length}); outliers ${name} ${outliersOf(j.sizes, 'a')}/${j.sizes.length * opts.rounds}, ` +
        `${nameB} ${outliersOf(j.sizes, 'b')}/${j.sizes.length * opts.rounds} ${j.outliersOk ? 'ok' : 'WORSE'}`;
      console.log(
        `\n## ${backend} ${ranks} rank${ranks > 1 ? 's' : ''} ${coll}: ${verdict(cell, nameA)}; load ${loadStart.toFixed(1)} -> ${loadEnd.toFixed(1)}`,
      );
      if (control) console.log(`#  control, ${nameB} again in the same rounds: ${verdict(control, 'control')}`);
      const goalOf = (s: SizeResult): string => (s.met ? 'ok' : s.beyondNoise ? 'MISSED' : 'missed (noise)');
      console.log(
        `${pad('size', 9)} ${pad('bytes', 8)} ${pad(`${nameA}us`, 12)} ${pad(`${nameB}us`, 11)} ${pad('ratio', 6)} ` +
          `${pad('added_us', 9)} ${pad('ratio ci95', 11)} ${pad('ratio p25-p75', 13)} ${pad('min-max', 11)} ${pad('out', 5)}  ` +
          `${control ? `${'goal'.padEnd(14)}  control ratio, goal` : 'goal'}`,
      );
      sizes.forEach((s, i) => {
        const k = control?.sizes[i];
        console.log(
          `${pad(String(s.size), 9)} ${pad(String(s.bytes), 8)} ${pad(f(s.aMedian), 12)} ${pad(f(s.bMedian), 11)} ` +
            `${pad(f(s.ratio, 3), 6)} ${pad(f(s.addedUs), 9)} ${pad(`${f(s.ciLo)}-${f(s.ciHi)}`, 11)} ` +
            `${pad(`${f(s.ratioP25)}-${f(s.ratioP75)}`, 13)} ${pad(`${f(s.ratioMin)}-${f(s.ratioMax)}`, 11)} ` +
            `${pad(`${s.aOutliers}/${s.bOutliers}`, 5)}  ${k ? `${goalOf(s).padEnd(14)}  ${f(k.ratio, 3)} ${goalOf(k)}` : goalOf(s)}`,
        );
      });
    }
  }
}

// IMB beside: per size, the median over rounds of IMB's t_avg and t_max (t_max: the slowest rank's average, as -a 3).
const imbTable = [...imbRounds].flatMap(([coll, rounds]) => {
  const cell = cells.find((c) => c.backend === 'mpi' && c.ranks === IMB_RANKS && c.coll === coll)!;
  return cell.sizes.flatMap((s, i) => {
    const got = rounds.map((r) => r[i]).filter((r): r is ImbRow => r !== null);
    if (got.length === 0) return [];
    const tMax = median(got.map((r) => r.tMaxUs));
    return [
      {
        coll,
        bytes: s.bytes,
        imbBytes: got[0]!.bytes,
        rounds: got.length,
        tAvgUs: median(got.map((r) => r.tAvgUs)),
        tMaxUs: tMax,
        aMedian: s.aMedian,
        bMedian: s.bMedian,
        aOverImb: s.aMedian / tMax,
        bOverImb: s.bMedian / tMax,
        outliers: got.filter((r) => r.tMaxUs > OUTLIER_FACTOR * tMax).length,
        aOutliers: s.aOutliers,
        bOutliers: s.bOutliers,
      },
    ];
  });
});
if (imbTable.length) {
  console.log(
    `\n## IMB-MPI1 at ${IMB_RANKS} ranks, run in every round beside ${nameA} and ${nameB} (mpi, medians over rounds); ` +
      `e.g. ${launch(IMB_RANKS, imbArgs(imbExe!, opts.colls[0]!), toolEnv('mpi', IMB_RANKS)).flat().join(' ')}`,
  );
  console.log(
    `${pad('coll', 15)} ${pad('bytes', 8)} ${pad('imb_bytes', 9)} ${pad('imb_t_avg', 10)} ${pad('imb_t_max', 10)} ` +
      `${pad(`${nameA}us`, 12)} ${pad(`${nameB}us`, 11)} ${pad(`${nameA}/imb`, 14)} ${pad(`${nameB}/imb`, 10)} ${pad('out a/b/imb', 11)}`,
  );
  for (const t of imbTable) {
    console.log(
      `${pad(t.coll, 15)} ${pad(String(t.bytes), 8)} ${pad(String(t.imbBytes), 9)} ${pad(f(t.tAvgUs), 10)} ` +
        `${pad(f(t.tMaxUs), 10)} ${pad(f(t.aMedian), 12)} ${pad(f(t.bMedian), 11)} ${pad(f(t.aOverImb, 3), 14)} ${pad(f(t.bOverImb, 3), 10)} ` +
        `${pad(`${t.aOutliers}/${t.bOutliers}/${t.outliers}`, 11)}`,
    );
  }
  const share = (n: (t: (typeof imbTable)[number]) => number): string =>
    `${imbTable.reduce((k, t) => k + n(t), 0)}/${imbTable.reduce((k, t) => k + t.rounds, 0)}`;
  console.log(
    `# outlier rounds (above ${OUTLIER_FACTOR} x the tool's median) over these rows: ${nameA} ${share((t) => t.aOutliers)}, ` +
      `${nameB} ${share((t) => t.bOutliers)}, IMB-MPI1 ${share((t) => t.outliers)}`,
  );
}
const imb = imbExe === null ? null : { executable: imbExe, table: imbTable, rounds: Object.fromEntries(imbRounds) };

/** A run's tally for one judged tool: the main one, or the control (its cells' `control`). */
function tally(judged: (c: CellResult) => Judged | null) {
  const of = cells.flatMap((c) => {
    const j = judged(c);
    return j ? [{ c, j }] : [];
  });
  const name = (c: CellResult, s?: SizeResult): string => `${c.backend}/${c.ranks}/${c.coll}${s ? `/${s.size}` : ''}`;
  return {
    cells: of.length,
    sizes: of.reduce((n, { j }) => n + j.sizes.length, 0),
    missed: of.flatMap(({ c, j }) => j.sizes.filter((s) => !s.met).map((s) => name(c, s))),
    beyondNoise: of.flatMap(({ c, j }) => j.sizes.filter((s) => s.beyondNoise).map((s) => name(c, s))),
    outliersWorse: of.filter(({ j }) => !j.outliersOk).map(({ c }) => name(c)),
  };
}
const main = tally((c) => c),
  control = opts.withControl ? tally((c) => c.control) : null;
const ended = new Date();
const line = (t: ReturnType<typeof tally>): string =>
  `goal met at ${t.sizes - t.missed.length}/${t.sizes} sizes, missed beyond noise at ${t.beyondNoise.length}`;
console.log(
  `\n# summary: ${line(main)} ` +
    `(one-sided Mann-Whitney against ${nameB} plus the goal's allowance, Holm across each cell's sizes, alpha 0.05); ` +
    `outlier share no worse than ${nameB} ` +
    `in ${main.cells - main.outliersWorse.length}/${main.cells} backend x ranks x collective cells; ` +
    `${((ended.getTime() - started.getTime()) / 60000).toFixed(1)} min, ${retries} sweep(s) retried, load average at end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
);
if (control) {
  console.log(
    `# control (${nameB} against itself in the same rounds): ${line(control)}; outlier share no worse in ` +
      `${control.cells - control.outliersWorse.length}/${control.cells} cells`,
  );
  // Side by side per backend x ranks: what the goal's misses say is the excess of nameA's over the control's.
  console.log(`# per backend x ranks, goal met (beyond noise) ${nameA} | control:`);
  for (const backend of opts.backends) {
    for (const ranks of opts.ranks) {
      const of = cells.filter((c) => c.backend === backend && c.ranks === ranks);
      const count = (j: (c: CellResult) => Judged): string => {
        const sizes = of.flatMap((c) => j(c).sizes);
        return `${sizes.filter((s) => s.met).length}/${sizes.length} (${sizes.filter((s) => s.beyondNoise).length})`;
      };
      console.log(
        `#   ${backend} ${ranks} rank${ranks > 1 ? 's' : ''}: ${count((c) => c)} | ${count((c) => c.control!)}`,
      );
    }
  }
}
if (main.missed.length) console.log(`# missed: ${main.missed.join(' ')}`);
if (main.beyondNoise.length) console.log(`# missed beyond noise: ${main.beyondNoise.join(' ')}`);
if (main.outliersWorse.length) console.log(`# more outliers than ${nameB}: ${main.outliersWorse.join(' ')}`);
if (control?.beyondNoise.length) console.log(`# control missed beyond noise: ${control.beyondNoise.join(' ')}`);

if (opts.json) {
  writeFileSync(
    opts.json,
    `${JSON.stringify(
      {
        kind: 'collbench-overhead',
        started: started.toISOString(),
        ended: ended.toISOString(),
        host: hostname(),
        cores,
        tools: { a: nameA, b: nameB },
        goal: { ratio: GOAL_RATIO, addedUs: GOAL_ADDED_US, outlierFactor: OUTLIER_FACTOR },
        options: { ...opts, sizes: SIZES },
        retries,
        cells,
        imb,
        summary: {
          sizes: main.sizes,
          met: main.sizes - main.missed.length,
          missed: main.missed,
          missedBeyondNoise: main.beyondNoise,
          outliersWorse: main.outliersWorse,
          control: control && {
            sizes: control.sizes,
            met: control.sizes - control.missed.length,
            missed: control.missed,
            missedBeyondNoise: control.beyondNoise,
            outliersWorse: control.outliersWorse,
          },
        },
      },
      null,
      1,
    )}\n`,
  );
}
if (argv.strict && (main.missed.length || main.outliersWorse.length)) process.exitCode = 1;
