// Benchmark (not a test): Gloo against Open MPI on this machine, all_reduce (float sum) at 2 ranks,
// 1 KiB → 64 MiB, measured side by side in one run: rounds alternate the two backends sweep by sweep
// (the one that goes first swaps every round), so drift of this noisy VM hits both alike; the table
// shows per size the median busbw over rounds. Both run as a user would type it: `--np 2`
// (mpirun for mpi, collbench's process launcher for gloo). Prints a Markdown table (docs/performance.md, "Gloo and Open MPI side by side").
// Usage: node --import tsx scripts/bench-gloo-vs-mpi.ts [rounds=5] [iters=20]
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.argv[2] ?? 5);
const iters = Number(process.argv[3] ?? 20);
type Backend = 'mpi' | 'gloo';

interface Row {
  size: number;
  busBw: number;
  timeUs: number;
}

/** One sweep on one backend: out-of-place time and busbw per size (checked: #wrong must be 0). */
function sweep(backend: Backend): Row[] {
  const args = [
    '--backend',
    backend,
    '--np',
    '2',
    '-b',
    '1K',
    '-e',
    '64M',
    '-f',
    '2',
    '-n',
    String(iters),
    '-w',
    '2',
    '-d',
    'float',
  ];
  const r = spawnSync(join(root, 'bin', 'all_reduce_perf'), args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`all_reduce_perf ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  const rows: Row[] = [];
  for (const line of r.stdout.split('\n')) {
    if (line.startsWith('#') || !/^\s*\d/.test(line)) continue;
    const f = line.trim().split(/\s+/);
    if (f[8] !== '0') throw new Error(`${backend}: wrong results: ${line}`);
    rows.push({ size: Number(f[0]), timeUs: Number(f[5]), busBw: Number(f[7]) });
  }
  return rows;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const samples: Record<Backend, Map<number, { bw: number[]; us: number[] }>> = { mpi: new Map(), gloo: new Map() };
for (let round = 0; round < rounds; round++) {
  const order: Backend[] = round % 2 === 0 ? ['mpi', 'gloo'] : ['gloo', 'mpi'];
  for (const backend of order) {
    for (const row of sweep(backend)) {
      const s = samples[backend].get(row.size) ?? { bw: [], us: [] };
      s.bw.push(row.busBw);
      s.us.push(row.timeUs);
      samples[backend].set(row.size, s);
    }
    process.stderr.write(`round ${round + 1}/${rounds}: ${backend} done\n`);
  }
}

const sizeText = (b: number) => (b >= 2 ** 20 ? `${b / 2 ** 20} MiB` : `${b / 1024} KiB`);
const lines = [
  `all_reduce, float sum, 2 ranks, out-of-place; median of ${rounds} interleaved rounds, -n ${iters}`,
  '',
  '| size | Open MPI time (µs) | Open MPI busbw (GB/s) | Gloo time (µs) | Gloo busbw (GB/s) | Gloo / MPI busbw |',
  '|---:|---:|---:|---:|---:|---:|',
];
for (const [size, m] of samples.mpi) {
  const g = samples.gloo.get(size)!;
  const mb = median(m.bw),
    gb = median(g.bw);
  lines.push(
    `| ${sizeText(size)} | ${median(m.us).toFixed(1)} | ${mb.toFixed(2)} | ${median(g.us).toFixed(1)} | ${gb.toFixed(2)} | ` +
      `${mb > 0 ? (gb / mb).toFixed(2) : 'n/a'} |`,
  );
}
process.stdout.write(lines.join('\n') + '\n');
