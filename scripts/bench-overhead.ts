// Benchmark (not a test): how much collbench adds on top of the library it measures. Runs, interleaved
// round by round, collbench's all_reduce and a bare C loop over MPI_Allreduce (native/test/
// bare_allreduce.c: same sizes, iterations, rotation and mpirun placement) at 2 ranks, and prints per
// size the ratio of the reported times (medians over rounds). Then compares the start-up of a one-size
// single-rank run with `node -e 0`. Ratios are medians of per-round ratios (each round runs both
// back to back, so slow drift of this noisy VM cancels). Usage: node --import tsx scripts/bench-overhead.ts [rounds] [iters]
import { spawnSync } from 'node:child_process';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.argv[2] ?? 7);
const ITERS = Number(process.argv[3] ?? 100);
const [MIN, MAX, FACTOR, WARMUP] = [8, 64 * 1024 * 1024, 2, 1];
const mpirun = ['--bind-to', 'core', '--mca', 'pml', 'ob1', '-np', '2'];
if (process.getuid?.() === 0) mpirun.unshift('--allow-run-as-root');

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return r.stdout;
}

function collbenchTimes(): Map<number, number> {
  const out = run('mpirun', [...mpirun, join(root, 'bin/all_reduce_perf'), '-b', String(MIN), '-e', String(MAX),
    '-f', String(FACTOR), '-n', String(ITERS), '-w', String(WARMUP), '-d', 'float']);
  const times = new Map<number, number>();
  for (const line of out.split('\n')) {
    if (line.startsWith('#') || !line.trim()) continue;
    const f = line.trim().split(/\s+/);
    times.set(Number(f[0]), Number(f[5])); // size, out-of-place time (us)
  }
  return times;
}

function bareTimes(): Map<number, number> {
  const out = run('mpirun', [...mpirun, join(root, 'build/Release/bare_allreduce'), String(MIN), String(MAX),
    String(FACTOR), String(ITERS), String(WARMUP)]);
  const times = new Map<number, number>();
  for (const line of out.trim().split('\n')) {
    const [size, us] = line.split(' ').map(Number);
    times.set(size, us);
  }
  return times;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const cb = new Map<number, number[]>(), bare = new Map<number, number[]>();
for (let r = 0; r < rounds; r++) {
  for (const [map, times] of (r % 2 ? [[bare, bareTimes()], [cb, collbenchTimes()]] : [[cb, collbenchTimes()], [bare, bareTimes()]]) as [Map<number, number[]>, Map<number, number>][])
    for (const [size, us] of times) map.set(size, [...(map.get(size) ?? []), us]);
}

console.log(`all_reduce float sum, 2 ranks, ${ITERS} iters, medians over ${rounds} interleaved rounds`);
console.log('      size   collbench(us)   bare(us)    ratio   diff(us)   target');
let failures = 0;
for (const [size, ts] of [...cb].sort((a, b) => a[0] - b[0])) {
  const bs = bare.get(size) ?? [];
  const c = median(ts), b = median(bs);
  const ratio = median(ts.map((t, i) => t / bs[i])), diff = median(ts.map((t, i) => t - bs[i]));
  const ok = size >= 1024 ? ratio <= 1.05 : diff <= 0.5;
  if (!ok) failures++;
  console.log(`${String(size).padStart(10)}  ${c.toFixed(2).padStart(14)}  ${b.toFixed(2).padStart(9)}  ${ratio.toFixed(3).padStart(7)}  ${diff.toFixed(2).padStart(9)}   ${size >= 1024 ? 'ratio<=1.05' : 'diff<=0.5us'} ${ok ? 'ok' : 'MISSED'}`);
}

function wallSeconds(cmd: string, args: string[]): number {
  const t0 = process.hrtime.bigint();
  run(cmd, args);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}
const nodeStart: number[] = [], cbStart: number[] = [];
for (let i = 0; i < 10; i++) {
  nodeStart.push(wallSeconds(process.execPath, ['-e', '0']));
  cbStart.push(wallSeconds(join(root, 'bin/all_reduce_perf'), ['-b', '8', '-e', '8']));
}
const extra = median(cbStart) - median(nodeStart);
console.log(`start-up: node -e 0 ${median(nodeStart).toFixed(3)} s, all_reduce_perf -b 8 -e 8 (1 rank) ${median(cbStart).toFixed(3)} s, ` +
  `extra ${extra.toFixed(3)} s (target <= 0.3 s) ${extra <= 0.3 ? 'ok' : 'MISSED'}`);
console.log(failures === 0 && extra <= 0.3 ? 'all targets met' : `${failures + (extra > 0.3 ? 1 : 0)} target(s) missed`);
