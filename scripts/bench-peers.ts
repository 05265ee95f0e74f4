// collbench beside the libraries' own benchmarks on this machine, 2 ranks, interleaved round by round (A B, B A, …):
// `--peer gloo` against Gloo's gloo/benchmark (new_allreduce_ring, what collbench's gloo all_reduce runs), `--peer osu`
// against the OSU Micro-Benchmarks' blocking MPI collectives. Per size: each tool's time per op (median over rounds,
// p25–p75), their ratio, and CPU per op (both ranks, user + system) as the marginal cost of the timed ops: each tool's
// CPU time for the run minus that of a run of the same command with one iteration, over the ops added. Makefile targets
// bench-gloo and bench-osu build the peer first (scripts/bench-peers/build-*.sh, into the ignored third_party/).
// Usage: node --import tsx scripts/bench-peers.ts --peer gloo|osu --peer-bin PATH [--rounds 3] [--sizes 8,1K,64K,1M]
//        [--colls allreduce,bcast,alltoall,allgather,reduce_scatter,reduce_scatter_block] [--iters N] [--json FILE]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { mpirunPlan } from '../bench/launch/mpirun.js';
import { splitTableRow } from '../bench/report/reporters/nccl-table.js';
import { aFirst, analyseSize, linearQuantile } from '../bench/tools/side-by-side.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const NP = 2;
const fail = (msg: string): never => {
  console.error(`bench-peers: ${msg}`);
  process.exit(2);
};

function options(): ReturnType<typeof parseOptions> {
  try {
    return parseOptions();
  } catch (e) {
    return fail((e as Error).message);
  }
}
function parseOptions() {
  return parseArgs({
    options: {
      peer: { type: 'string' },
      'peer-bin': { type: 'string' },
      rounds: { type: 'string', default: '3' },
      sizes: { type: 'string' },
      colls: { type: 'string' },
      iters: { type: 'string' },
      json: { type: 'string' },
    },
  });
}
const { values: argv } = options();
const peer = argv.peer === 'gloo' || argv.peer === 'osu' ? argv.peer : fail('--peer must be gloo or osu');
const peerBin = argv['peer-bin'] || fail("--peer-bin PATH is required (the built benchmark, or OSU's directory)");
if (!existsSync(peerBin)) fail(`--peer-bin ${peerBin} does not exist`);
const rounds = Number(argv.rounds);
if (!Number.isInteger(rounds) || rounds < 1) fail('--rounds must be a positive integer');

function parseSize(text: string): number {
  const m = /^(\d+)([KMG]?)$/i.exec(text.trim());
  if (!m) return fail(`bad size '${text}' (e.g. 8, 1K, 64K, 1M)`);
  return Number(m[1]) * 1024 ** ' KMG'.indexOf((m[2] || ' ').toUpperCase());
}
const sizes = (argv.sizes ?? (peer === 'gloo' ? '8,1K,64K,1M,16M' : '8,1K,64K,1M')).split(',').map(parseSize);
const itersFixed = argv.iters === undefined ? null : Number(argv.iters);
if (itersFixed !== null && (!Number.isInteger(itersFixed) || itersFixed < 2)) fail('--iters must be an integer >= 2');
/** Iterations per size: enough ops that the timed part outweighs start-up, few enough for a loaded 2-core machine. */
const itersFor = (bytes: number): number => itersFixed ?? (bytes <= 64 * 1024 ? 500 : bytes <= 1 << 20 ? 100 : 20);
const WARMUP = 5;

// One collective as both tools name it. Sizes are collbench's (nccl-tests': the whole buffer); OSU's alltoall and
// allgather sizes are per peer (rank), so they get size / NP (its reduce_scatter's, as nccl-tests', are the whole send
// buffer). chunked: collbench splits the buffer into 16-byte multiples per rank, so it moves nothing below 16 B × ranks.
// osuInPlace: OSU runs the same call with MPI_IN_PLACE (`-l`), the counterpart of collbench's in-place half; without
// it (bcast: MPI_Bcast has one buffer) OSU's one run is the counterpart of both halves.
interface Coll {
  name: string;
  collbench: string;
  osu: string;
  osuPerRank: boolean;
  osuInPlace: boolean;
  chunked: boolean;
}
const COLLS: Coll[] = [
  {
    name: 'allreduce',
    collbench: 'all_reduce_perf',
    osu: 'osu_allreduce',
    osuPerRank: false,
    osuInPlace: true,
    chunked: false,
  },
  {
    name: 'bcast',
    collbench: 'broadcast_perf',
    osu: 'osu_bcast',
    osuPerRank: false,
    osuInPlace: false,
    chunked: false,
  },
  {
    name: 'alltoall',
    collbench: 'alltoall_perf',
    osu: 'osu_alltoall',
    osuPerRank: true,
    osuInPlace: true,
    chunked: true,
  },
  {
    name: 'allgather',
    collbench: 'all_gather_perf',
    osu: 'osu_allgather',
    osuPerRank: true,
    osuInPlace: true,
    chunked: true,
  },
  // OSU's and IMB's "reduce_scatter" time MPI_Reduce_scatter; collbench's MPI backend calls MPI_Reduce_scatter_block
  // (equal blocks, as nccl-tests): reduce_scatter_block sets it beside OSU's benchmark of that same call.
  {
    name: 'reduce_scatter',
    collbench: 'reduce_scatter_perf',
    osu: 'osu_reduce_scatter',
    osuPerRank: false,
    osuInPlace: true,
    chunked: true,
  },
  {
    name: 'reduce_scatter_block',
    collbench: 'reduce_scatter_perf',
    osu: 'osu_reduce_scatter_block',
    osuPerRank: false,
    osuInPlace: true,
    chunked: true,
  },
];
const colls =
  peer === 'gloo'
    ? [COLLS[0]!]
    : (argv.colls ?? COLLS.map((k) => k.name).join(','))
        .split(',')
        .map(
          (c) =>
            COLLS.find((k) => k.name === c) ??
            fail(`unknown collective '${c}' (${COLLS.map((k) => k.name).join(', ')})`),
        );

// us: the tool's time per op (collbench: oop, ip); procs: processes timed (each CPU figure is rounded to 10 ms)
interface Run {
  us: number[];
  cpuS: number;
  ops: number;
  procs: number;
}

/** Runs commands at once (the ranks of one tool), each under /usr/bin/time; resolves their stdout and total CPU. */
async function timed(cmds: { command: string; args: string[] }[]): Promise<{ out: string[]; cpuS: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-peers-'));
  try {
    const outs = await Promise.all(
      cmds.map(
        (c, i) =>
          new Promise<string>((done, reject) => {
            const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', join(dir, `t${i}`), c.command, ...c.args], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            let out = '',
              err = '';
            child.stdout.on('data', (d: Buffer) => {
              out += d.toString();
            });
            child.stderr.on('data', (d: Buffer) => {
              err += d.toString();
            });
            child.on('error', reject);
            child.on('close', (code) =>
              code === 0
                ? done(out)
                : reject(new Error(`${c.command} ${c.args.join(' ')} exited ${code}:\n${err.slice(-2000)}`)),
            );
          }),
      ),
    );
    const cpuS = cmds.reduce((s, _c, i) => {
      const [u, sys] = readFileSync(join(dir, `t${i}`), 'utf8')
        .trim()
        .split(/\s+/)
        .slice(-2)
        .map(Number);
      return s + u! + sys!;
    }, 0);
    return { out: outs, cpuS };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runCollbench(c: Coll, bytes: number, iters: number, warmup: number): Promise<Run> {
  const backend = peer === 'gloo' ? 'gloo' : 'mpi';
  const args = [
    '--backend',
    backend,
    '--np',
    String(NP),
    '-b',
    String(bytes),
    '-e',
    String(bytes),
    '-n',
    String(iters),
    '-w',
    String(warmup),
    '-c',
    '0',
    '-d',
    'float',
  ];
  const r = await timed([{ command: join(root, 'bin', c.collbench), args }]);
  const row = r.out[0]!.split('\n')
    .map(splitTableRow)
    .find((x) => x !== null);
  if (!row) throw new Error(`${c.collbench} ${args.join(' ')} printed no result row:\n${r.out[0]}`);
  // Ops: the warm-up, then per half one untimed op and the timed ones.
  return { us: [Number(row.oop[0]), Number(row.ip[0])], cpuS: r.cpuS, ops: warmup + 2 * (iters + 1), procs: 1 };
}

async function runGloo(bytes: number, iters: number, warmup: number): Promise<Run> {
  const store = mkdtempSync(join(tmpdir(), 'bench-peers-gloo-'));
  try {
    const ranks = Array.from({ length: NP }, (_v, r) => ({
      command: peerBin,
      args: [
        '--size',
        String(NP),
        '--rank',
        String(r),
        '--shared-path',
        store,
        '--prefix',
        'p',
        '--transport',
        'tcp',
        '--tcp-device',
        'lo',
        '--elements',
        String(Math.max(1, bytes / 4)),
        '--iteration-count',
        String(iters),
        '--warmup-iters',
        String(warmup),
        '--no-verify',
        'new_allreduce_ring',
      ],
    }));
    const r = await timed(ranks);
    const mean = /# mean_us (\S+)/.exec(r.out[0]!);
    if (!mean) {
      throw new Error(
        "Gloo's benchmark printed no '# mean_us' (build it with " +
          `scripts/bench-peers/build-gloo-benchmark.sh):\n${r.out[0]}`,
      );
    }
    return { us: [Number(mean[1])], cpuS: r.cpuS, ops: warmup + iters, procs: NP };
  } finally {
    rmSync(store, { recursive: true, force: true });
  }
}

/** One OSU run, out of place or (`-l`) in place. */
async function runOsuOnce(c: Coll, bytes: number, iters: number, warmup: number, inPlace: boolean): Promise<Run> {
  const m = c.osuPerRank ? bytes / NP : bytes;
  const plan = mpirunPlan({
    np: NP,
    hosts: null,
    program: [join(peerBin, c.osu)],
    args: ['-m', `${m}:${m}`, '-i', String(iters), '-x', String(warmup), '-T', 'mpi_float', ...(inPlace ? ['-l'] : [])],
  });
  const r = await timed([plan]);
  const line = r.out[0]!.split('\n').find((l) => new RegExp(`^\\s*${m}\\s+\\S+`).test(l));
  if (!line) throw new Error(`${c.osu} printed no row for ${m} B:\n${r.out[0]}`);
  // OSU times each op between barriers: its ops are the iterations plus warm-up, each with a barrier after it.
  return { us: [Number(line.trim().split(/\s+/)[1])], cpuS: r.cpuS, ops: warmup + iters, procs: 1 };
}

/** OSU's counterparts of collbench's two halves: us [out of place, in place]; CPU from the out-of-place run (the
 *  one-iteration run that CPU per op is measured beyond needs no in-place run). */
async function runOsu(c: Coll, bytes: number, iters: number, warmup: number): Promise<Run> {
  const oop = await runOsuOnce(c, bytes, iters, warmup, false);
  const ip = c.osuInPlace && iters > 1 ? (await runOsuOnce(c, bytes, iters, warmup, true)).us[0]! : oop.us[0]!;
  return { ...oop, us: [oop.us[0]!, ip] };
}

const runPeer = (c: Coll, bytes: number, iters: number, warmup: number): Promise<Run> =>
  peer === 'gloo' ? runGloo(bytes, iters, warmup) : runOsu(c, bytes, iters, warmup);

// --- rounds -------------------------------------------------------------------------------------
interface Cell {
  c: Coll;
  bytes: number;
  cb: Run[];
  peer: Run[];
}
// The smallest sizes of the chunked collectives are raised to 16 B × ranks, so that both tools move data.
const cells: Cell[] = colls.flatMap((c) =>
  [...new Set(sizes.map((b) => (c.chunked ? Math.max(b, 16 * NP) : b)))].map((bytes) => ({
    c,
    bytes,
    cb: [] as Run[],
    peer: [] as Run[],
  })),
);
const baseCb: number[] = [],
  basePeer: number[] = []; // CPU seconds of a one-iteration run, per round
const loads: number[] = [loadavg()[0]!];
const started = new Date();
for (let round = 0; round < rounds; round++) {
  const first = aFirst(round);
  // Start-up CPU: one iteration, no warm-up, at the smallest size (a run's CPU beyond it is the ops').
  const c0 = colls[0]!,
    b0 = sizes[0]!;
  const bases = [
    async () => baseCb.push((await runCollbench(c0, b0, 1, 0)).cpuS),
    async () => basePeer.push((await runPeer(c0, b0, 1, 0)).cpuS),
  ];
  for (const f of first ? bases : [...bases].reverse()) await f();
  for (const cell of cells) {
    const iters = itersFor(cell.bytes);
    const steps = [
      async () => cell.cb.push(await runCollbench(cell.c, cell.bytes, iters, WARMUP)),
      async () => cell.peer.push(await runPeer(cell.c, cell.bytes, iters, WARMUP)),
    ];
    for (const f of first ? steps : [...steps].reverse()) await f();
    process.stderr.write(
      `round ${round + 1}/${rounds} ${cell.c.name} ${cell.bytes} B: collbench ${cell.cb
        .at(-1)!
        .us.join('/')} µs, ${peer} ${cell.peer.at(-1)!.us.join('/')} µs\n`,
    );
  }
  loads.push(loadavg()[0]!);
}

// --- table --------------------------------------------------------------------------------------
const peerName = peer === 'gloo' ? 'Gloo benchmark' : 'OSU';
const f2 = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const spreadText = (xs: number[]): string =>
  `${f2(linearQuantile(xs, 0.5))} (${f2(linearQuantile(xs, 0.25))}–${f2(linearQuantile(xs, 0.75))})`;
/** CPU µs per op of each round: the run's CPU beyond that round's one-iteration run, over the ops beyond its 4 or 1. */
const cpuPerOp = (runs: Run[], base: number[], baseOps: number): number[] =>
  runs.map((r, i) => ((r.cpuS - base[i]!) * 1e6) / (r.ops - baseOps));
const baseOpsCb = 2 * 2,
  baseOpsPeer = 1;
/** The CPU cell: median (p25–p75), or '< R' where the median is within the rounding of the two CPU times it is
 *  taken from (10 ms per process and run, over the ops). */
function cpuText(runs: Run[], perOp: number[], baseOps: number): string {
  const resolution = (2 * 0.01 * runs[0]!.procs * 1e6) / (runs[0]!.ops - baseOps);
  return Math.abs(linearQuantile(perOp, 0.5)) < resolution ? `< ${f2(resolution)}` : spreadText(perOp);
}

console.log(
  `# collbench beside ${peerName}, ${NP} ranks on this machine, ${rounds} rounds interleaved ` +
    `(A B, B A, …), started ${started.toISOString()}; load average ${loads.map((l) => l.toFixed(1)).join(' → ')}`,
);
console.log(
  '# time: µs per op, median over rounds (p25–p75); ratio: collbench / peer (min–max of the rounds); ' +
    'CPU: µs per op, both ranks, user + system, beyond a one-iteration run' +
    (peer === 'osu' ? ' (OSU: with its barrier per op)' : ''),
);
// OSU calls MPI_Init: Open MPI gives it MPI_THREAD_SINGLE unless OMPI_MPI_THREAD_LEVEL says otherwise (that variable
// changes MPI_Init only). collbench's mpi backend asks MPI_Init_thread for SERIALIZED (its MPI calls come from a worker
// thread), and Open MPI 4.1 locks for every level above SINGLE: about 0.15 µs per small op (docs/performance.md).
if (peer === 'osu') {
  const levels = ['SINGLE', 'FUNNELED', 'SERIALIZED', 'MULTIPLE'];
  const osuLevel = levels[Number(process.env.OMPI_MPI_THREAD_LEVEL ?? 0)] ?? `${process.env.OMPI_MPI_THREAD_LEVEL}`;
  console.log(
    `# MPI thread level: OSU MPI_THREAD_${osuLevel} (OMPI_MPI_THREAD_LEVEL=2 sets collbench's), ` +
      'collbench MPI_THREAD_SERIALIZED',
  );
}
console.log(
  `# goal (issue #42): collbench's median time within 1.1x of the peer's` +
    (peer === 'osu' ? ' or +0.2 µs' : ', its CPU per op within 1.2x') +
    '; ci95: bootstrap interval of the time ratio over the rounds',
);
console.log('');
const header =
  peer === 'gloo'
    ? '| size | Gloo benchmark mean µs | collbench µs (out of place) | ratio | CPU/op Gloo µs | ' +
      'CPU/op collbench µs | CPU ratio | goal: time (ci95); CPU |'
    : '| collective | size | OSU avg µs | collbench µs out of place | ratio | OSU avg µs in place (-l) | ' +
      'collbench µs in place | ratio | ' +
      'CPU/op OSU µs | CPU/op collbench µs | goal: out of place; in place (ci95) |';
console.log(header);
console.log(header.replace(/[^|]+/g, '---'));
const json: unknown[] = [];
for (const cell of cells) {
  const iters = itersFor(cell.bytes);
  const peerUs = cell.peer.map((r) => r.us[0]!),
    peerIpUs = cell.peer.map((r) => r.us[1] ?? r.us[0]!),
    oop = cell.cb.map((r) => r.us[0]!),
    ip = cell.cb.map((r) => r.us[1]!);
  const goal = { ratio: 1.1, addedUs: peer === 'osu' ? 0.2 : 0 };
  const a = analyseSize(cell.bytes, cell.bytes, oop, peerUs, goal, 2);
  const b = analyseSize(cell.bytes, cell.bytes, ip, peerIpUs, goal, 2);
  const cpuPeer = cpuPerOp(cell.peer, basePeer, baseOpsPeer),
    cpuCb = cpuPerOp(cell.cb, baseCb, baseOpsCb);
  const ratioText = (s: typeof a): string =>
    `${s.ratio.toFixed(2)} (${s.ratioMin.toFixed(2)}–${s.ratioMax.toFixed(2)})`;
  const cpuRatio = linearQuantile(cpuCb, 0.5) / linearQuantile(cpuPeer, 0.5);
  const verdict = (s: typeof a): string =>
    `${s.met ? 'met' : 'missed'} ` +
    (Number.isFinite(s.ciLo) ? `(${s.ciLo.toFixed(2)}–${s.ciHi.toFixed(2)})` : '(one round: no interval)');
  const cpuPeerText = cpuText(cell.peer, cpuPeer, baseOpsPeer),
    cpuCbText = cpuText(cell.cb, cpuCb, baseOpsCb);
  // A CPU median within the rounding of its two CPU times decides nothing.
  const cpuVerdict =
    cpuPeerText.startsWith('<') || cpuCbText.startsWith('<') ? 'unresolved' : cpuRatio <= 1.2 ? 'met' : 'missed';
  console.log(
    peer === 'gloo'
      ? `| ${cell.bytes} | ${spreadText(peerUs)} | ${spreadText(oop)} | ${ratioText(a)} | ` +
          `${cpuPeerText} | ${cpuCbText} | ${cpuRatio.toFixed(2)} | ${verdict(a)}; ${cpuVerdict} |`
      : `| ${cell.c.name} | ${cell.bytes} | ${spreadText(peerUs)} | ${spreadText(oop)} | ${ratioText(a)} | ` +
          `${cell.c.osuInPlace ? spreadText(peerIpUs) : '(one buffer: as out of place)'} | ${spreadText(ip)} | ` +
          `${ratioText(b)} | ${cpuPeerText} | ${cpuCbText} | ${verdict(a)}; ${verdict(b)} |`,
  );
  json.push({
    collective: cell.c.name,
    bytes: cell.bytes,
    iters,
    peerUs,
    peerInPlaceUs: peerIpUs,
    collbenchOopUs: oop,
    collbenchIpUs: ip,
    cpuPerOpPeerUs: cpuPeer,
    cpuPerOpCollbenchUs: cpuCb,
    goalMet: { outOfPlace: a.met, inPlace: b.met, cpu: peer === 'gloo' ? cpuVerdict : undefined },
  });
}
if (argv.json) writeFileSync(argv.json, JSON.stringify({ peer, rounds, started, loads, cells: json }, null, 2) + '\n');
