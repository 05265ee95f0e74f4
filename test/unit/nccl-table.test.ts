// Tests of the nccl-tests text table (bench/report/reporters/nccl-table.ts) and of the numbers it shows
// (bench/numbers/bandwidth.ts, bench/numbers/stats.ts iterStats). The golden files in test/fixtures/golden/ were
// printed by a C program using nccl-tests' own printf formats and getFloatStr/computeIterStats (copied
// from src/util.cu), fed with the same inputs as the builders below — not by this implementation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import type { ResolvedOptions } from '../../bench/config/flags.js';
import { algBwGBps, averageBusBw, busBwGBps } from '../../bench/numbers/bandwidth.js';
import { iterStats, percentileIndex, type IterStats } from '../../bench/numbers/stats.js';
import { cAtof, NEG_NAN, signBit } from '../../bench/numbers/c-numbers.js';
import {
  firstWrongLine,
  footerLines,
  formatTimestamp,
  headerLines,
  iterCellsFromStats,
  maskTimes,
  memString,
  memoryUsageLine,
  preambleLines,
  rankLine,
  rowLine,
  skipLine,
  type FooterInfo,
  type HalfCells,
  type PreambleInfo,
  type RowCells,
} from '../../bench/report/reporters/nccl-table.js';
import { cpuBusId, gpuBusId, shortHost, type RankLineInfo } from '../../bench/core/ranks.js';
import { minBwVerdict } from '../../bench/numbers/run-verdict.js';

const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'golden');
const golden = (name: string): string => readFileSync(join(GOLDEN, name), 'utf8');

// ---------------------------------------------------------------------------------------------------
// Builders mirroring the C generator's inputs

type Opts = PreambleInfo['options'];
const baseOptions: Opts = {
  program: 'all_reduce_perf',
  nThreads: 1,
  nGpus: 1,
  minBytes: 8,
  maxBytes: 8,
  stepBytes: 1048576,
  stepFactor: 1,
  warmupIters: 1,
  iters: 20,
  aggIters: 1,
  check: 1,
  cudaGraph: 0,
  unalign: 0,
  blocking: 0,
  perIterTiming: false,
  perIterSkip: 0,
  parallelInit: 0,
  reportCpuTime: false,
  reportTimestamps: false,
};
const XEON = 'Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz';
const cpuRank = (rank: number, pid: number, host: string, numa: number | null, name = XEON): RankLineInfo => ({
  rank,
  group: 0,
  pid,
  host,
  device: 'cpu',
  bus: cpuBusId(numa),
  name,
});
const TS = new Date(2024, 0, 2, 3, 4, 5); // local time, printed 2024-01-02 03:04:05 in any zone

/** Collects busbw of every half in print order, like nccl-tests' bw accumulator. */
class Run {
  lines: string[] = [];
  busBws: number[] = [];
  half(
    algBytes: number,
    factor: number,
    timeUs: number,
    wrong: number | null,
    samples?: number[],
    skip = 0,
  ): HalfCells {
    const algBw = algBwGBps(algBytes, timeUs);
    const busBw = busBwGBps(algBw, factor);
    this.busBws.push(busBw);
    const h: HalfCells = { timeUs, algBw, busBw, wrong };
    if (samples) h.iter = iterCellsFromStats(iterStats(samples, skip));
    return h;
  }
  text(): string {
    return this.lines.join('\n') + '\n';
  }
}

function allreduceCpu(times?: { oop: number[]; ip: number[] }): string {
  const r = new Run();
  r.lines.push(
    ...preambleLines({
      version: '0.1.0',
      backend: 'mpi (Open MPI 4.1.4)',
      options: { ...baseOptions, program: 'all_reduce_perf', minBytes: 8, maxBytes: 16777216, stepFactor: 32 },
      ranks: [
        cpuRank(0, 4242, 'node1.cluster.local', 0),
        cpuRank(1, 4243, 'node2', null),
        cpuRank(2, 123456, 'n3', 1),
        cpuRank(3, 77, 'averyverylonghostname.x', 1),
      ],
    }),
  );
  const sizes = [8, 256, 8192, 262144, 8388608];
  const oop = times?.oop ?? [9.87, 10.2, 35.6, 812.25, 12000000];
  const ip = times?.ip ?? [9.61, 10.005, 0.004, 799.5, 5.5];
  const factor = (2 * (4 - 1)) / 4;
  sizes.forEach((size, i) => {
    r.lines.push(
      rowLine({
        sizeBytes: size,
        count: size / 4,
        type: 'float',
        redop: 'sum',
        root: -1,
        halves: [r.half(size, factor, oop[i]!, 0), r.half(size, factor, ip[i]!, 0)],
      }),
    );
  });
  r.lines.push(...footerLines({ outOfBounds: 0, avgBusBw: averageBusBw(r.busBws), program: 'all_reduce_perf' }));
  return r.text();
}

function alltoallGpu(): string {
  const r = new Run();
  const gpu = (rank: number, group: number, bus: string): RankLineInfo => ({
    rank,
    group,
    pid: 991,
    host: 'dgx-a100-07.example.com',
    device: rank,
    bus,
    name: 'NVIDIA A100-SXM4-80GB',
  });
  r.lines.push(
    ...preambleLines({
      version: '0.1.0',
      backend: 'nccl (2.28.7)',
      extra: 'nccl-headers=22807 nccl-library=22807',
      leadingLines: ['# Writing JSON output to out.json'],
      options: {
        ...baseOptions,
        program: 'alltoall_perf',
        nGpus: 4,
        minBytes: 1024,
        maxBytes: 1073741824,
        stepBytes: 1048576,
        stepFactor: 1,
        warmupIters: 5,
        iters: 100,
        aggIters: 4,
        check: 2,
        unalign: 1,
        blocking: 1,
        parallelInit: 1,
      },
      ranks: [
        gpu(0, 0, gpuBusId(0, 0x07, 0)),
        gpu(1, 0, gpuBusId(0, 0x0f, 0)),
        gpu(2, 1, gpuBusId(0, 0x47, 0)),
        gpu(3, 1, gpuBusId(1, 0x4e, 0x1f)),
      ],
      reducedMaxBytes: 25769803776,
    }),
  );
  const sizes = [1024, 1049600, 2098176];
  const oop = [23.41, 48.5, 61.0];
  const ip = [22.9, 47.75, 60.125];
  const wrongOop = [0, 1048576, 3];
  const factor = (4 - 1) / 4;
  sizes.forEach((size, i) => {
    r.lines.push(
      rowLine({
        sizeBytes: size,
        count: size / 2 / 4,
        type: 'bfloat16',
        redop: 'none',
        root: -1,
        halves: [r.half(size, factor, oop[i]!, wrongOop[i]!), r.half(size, factor, ip[i]!, null)],
      }),
    );
    if (i === 1) r.lines.push(firstWrongLine({ rank: 2, index: 5, expected: '0x3f80', got: '0x0000' }));
  });
  const avg = averageBusBw(r.busBws);
  r.lines.push(
    ...footerLines({
      outOfBounds: 2,
      avgBusBw: avg,
      minBwVerdict: minBwVerdict(avg, '400'),
      program: 'alltoall_perf',
      memory: { initialization: 536870912 + 1234567, userAllocated: 3 * 2 ** 30, collective: 12345 },
      errorText: "Cuda failure 'out of memory'",
    }),
  );
  return r.text();
}

const PER_ITER_SAMPLES = [
  [500, 400, 101, 99.5, 100.25, 102, 98.75, 103.5, 100, 101.125],
  [300, 99, 98, 100, 101, 97.5, 99.25, 98.5, 100.5, 99],
  [190, 189, 191.5, 188.25, 190, 192, 189.5, 190.75, 191, 190.5],
  [187, 186, 188, 187.5, 186.5, 185.25, 188.75, 187.25, 186.75, 187],
  [0, 0, 387, 390, 388.5, 389.25, 386, 388, 392.5, 387.75],
  [1e9, 2e9, 1.2e7, 1.3e7, 1.1e7, 1.25e7, 1.15e7, 1.2e7, 1.35e7, 1.05e7],
];

function broadcastPerIter(): string {
  const r = new Run();
  const epyc = 'AMD EPYC 7763 64-Core Processor';
  r.lines.push(
    ...preambleLines({
      version: '0.1.0',
      backend: 'gloo (0.5.0)',
      options: {
        ...baseOptions,
        program: 'broadcast_perf',
        minBytes: 1048576,
        maxBytes: 4194304,
        stepFactor: 2,
        iters: 10,
        blocking: 3,
        perIterTiming: true,
        perIterSkip: 2,
        reportTimestamps: true,
      },
      ranks: [cpuRank(0, 31000, 'worker-0', 0, epyc), cpuRank(1, 31001, 'worker-1', 0, epyc)],
    }),
  );
  const sizes = [1048576, 2097152, 4194304];
  const oop = [101.5, 190.25, 388.0];
  const ip = [99.75, 187.0, 12345678.0];
  sizes.forEach((size, i) => {
    r.lines.push(
      rowLine({
        sizeBytes: size,
        count: size / 4,
        type: 'float',
        redop: 'none',
        root: 1,
        timestamp: TS,
        halves: [
          r.half(size, 1, oop[i]!, 0, PER_ITER_SAMPLES[2 * i], 2),
          r.half(size, 1, ip[i]!, 0, PER_ITER_SAMPLES[2 * i + 1], 2),
        ],
      }),
    );
  });
  const avg = averageBusBw(r.busBws);
  r.lines.push(
    ...footerLines({
      outOfBounds: 0,
      avgBusBw: avg,
      minBwVerdict: minBwVerdict(avg, '  2.5e0xyz'),
      program: 'broadcast_perf',
    }),
  );
  return r.text();
}

function reduceCputimeTs(): string {
  const r = new Run();
  r.lines.push(
    ...preambleLines({
      version: '0.1.0',
      backend: 'mpi (Open MPI 5.0.3)',
      options: {
        ...baseOptions,
        program: 'reduce_perf',
        minBytes: 1048576,
        maxBytes: 3145728,
        stepBytes: 1048576,
        check: 0,
        reportCpuTime: true,
        reportTimestamps: true,
      },
      ranks: [cpuRank(0, 5001, 'c1', 0), cpuRank(1, 5002, 'c1.local', 1)],
    }),
  );
  const sizes = [1048576, 2097152, 3145728];
  const oop = [75.5, 151.25, 226.0];
  const ip = [74.0, 149.5, 224.75];
  sizes.forEach((size, i) => {
    r.lines.push(
      rowLine({
        sizeBytes: size,
        count: size / 8,
        type: 'double',
        redop: 'prod',
        root: 0,
        timestamp: TS,
        halves: [r.half(size, 1, oop[i]!, null), r.half(size, 1, ip[i]!, null)],
      }),
    );
  });
  const avg = averageBusBw(r.busBws);
  r.lines.push(
    ...footerLines({
      outOfBounds: 0,
      avgBusBw: avg,
      minBwVerdict: minBwVerdict(avg, '-1'),
      program: 'reduce_perf',
    }),
  );
  return r.text();
}

function hypercubeSkip(): string {
  const lines = preambleLines({
    version: '0.1.0',
    backend: 'mpi (Open MPI 4.1.4)',
    options: { ...baseOptions, program: 'hypercube_perf', minBytes: 33554432, maxBytes: 33554432 },
    ranks: [0, 1, 2].map((i) => cpuRank(i, 600 + i, 'h', null, 'cpu')),
  });
  lines.push(skipLine(3));
  const avg = averageBusBw([]);
  lines.push(
    ...footerLines({
      outOfBounds: 0,
      avgBusBw: avg,
      minBwVerdict: minBwVerdict(avg, '100'),
      program: 'hypercube_perf',
    }),
  );
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------
// Golden whole-run skeletons

const GOLDENS: [string, () => string][] = [
  ['allreduce-cpu.txt', () => allreduceCpu()],
  ['alltoall-gpu.txt', alltoallGpu],
  ['broadcast-periter.txt', broadcastPerIter],
  ['reduce-cputime-ts.txt', reduceCputimeTs],
  ['hypercube-skip.txt', hypercubeSkip],
];

for (const [file, build] of GOLDENS) {
  test(`golden ${file}: byte-identical to the nccl-tests printf rendering`, () => {
    const want = golden(file);
    const got = build();
    // Line by line first for a readable failure, then the whole text (catches a missing final '\n').
    const w = want.split('\n');
    const g = got.split('\n');
    for (let i = 0; i < Math.max(w.length, g.length); i++) assert.equal(g[i], w[i], `${file} line ${i + 1}`);
    assert.equal(got, want);
  });
}

// ---------------------------------------------------------------------------------------------------
// Header, rows, footer pieces

test('header lines are exactly the nccl-tests rendering (trailing spaces included)', () => {
  assert.deepEqual(headerLines({ perIter: false, cpuTime: false, timestamps: false }), [
    '#                                                              out-of-place                       in-place          ',
    '#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ',
    '#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ',
  ]);
  const cpu = headerLines({ perIter: false, cpuTime: true, timestamps: false });
  assert.equal(
    cpu[1],
    '#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong ',
  );
  const ts = headerLines({ perIter: false, cpuTime: false, timestamps: true });
  assert.ok(ts[1]!.endsWith('  #wrong           timestamp'));
  assert.ok(ts[2]!.endsWith('(GB/s)           %Y-%m-%d %H:%M:%S'));
  const pi = headerLines({ perIter: true, cpuTime: false, timestamps: false });
  assert.match(pi[0]!, /out-of-place \(\+ per-iteration\) {32}in-place \(\+ per-iteration\)$/);
  assert.ok(pi[1]!.endsWith('i_min    i_max    i_p99    i_cv% '));
  assert.ok(pi[2]!.endsWith('(us)     (us)     (us)      (%) '));
});

test('data rows follow the reference examples; N/A halves are one column narrower', () => {
  const h = (timeUs: number, wrong: number | null): HalfCells => ({ timeUs, algBw: 0, busBw: 0, wrong });
  assert.equal(
    rowLine({ sizeBytes: 8, count: 2, type: 'float', redop: 'sum', root: -1, halves: [h(10.52, 0), h(10.31, 0)] }),
    '           8             2     float     sum      -1    10.52    0.00    0.00       0    10.31    0.00    0.00       0',
  );
  assert.equal(
    rowLine({
      sizeBytes: 1024,
      count: 256,
      type: 'float',
      redop: 'none',
      root: -1,
      halves: [
        { timeUs: 20.1, algBw: 0.05, busBw: 0.04, wrong: 0 },
        { timeUs: 19.9, algBw: 0.05, busBw: 0.04, wrong: null },
      ],
    }),
    '        1024           256     float    none      -1    20.10    0.05    0.04       0    19.90    0.05    0.04    N/A',
  );
  // hypercube: empty redop column; huge wrong count widens the row (%6g).
  const row: RowCells = {
    sizeBytes: 64,
    count: 16,
    type: 'int8',
    redop: '',
    root: -1,
    halves: [h(1, 12345678), h(1, 0)],
  };
  assert.equal(
    rowLine(row),
    '          64            16      int8              -1     1.00    0.00    0.00  1.23457e+07     1.00    0.00    0.00       0',
  );
});

test('rank lines: %2d/%6d/%10s widths, host cut at the first dot, CPU and GPU device fields', () => {
  assert.equal(shortHost('node1.cluster.local'), 'node1');
  assert.equal(shortHost('plain'), 'plain');
  assert.equal(cpuBusId(null), '-');
  assert.equal(cpuBusId(-1), '-');
  assert.equal(cpuBusId(3), 'numa3');
  assert.equal(gpuBusId(0, 0x18, 0), '0000:18:00');
  assert.equal(
    rankLine({ rank: 0, group: 0, pid: 4242, host: 'node1.x', device: 0, bus: gpuBusId(0, 0x18, 0), name: 'G' }),
    '#  Rank  0 Group  0 Pid   4242 on      node1 device  0 [0000:18:00] G',
  );
  assert.equal(
    rankLine({ rank: 12, pid: 1, host: 'h', device: 'cpu', bus: '-', name: 'c' }),
    '#  Rank 12 Group  0 Pid      1 on          h device cpu [-] c',
  );
});

test('preamble mode lines: -z 2 wording, -I without skip, custom timer wording, version extra', () => {
  const lines = preambleLines({
    version: '9.9.9',
    backend: 'gloo (0.5.0)',
    perIterTimer: 'host clock timing',
    options: { ...baseOptions, blocking: 2, perIterTiming: true },
    ranks: [],
  });
  assert.deepEqual(lines.slice(0, 7), [
    '# collbench version 9.9.9 backend gloo (0.5.0)',
    '# Collective test starting: all_reduce_perf',
    '# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 1048576(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0',
    '# Blocking Enabled: wait after each inner iteration (-m), no barrier ',
    '# Per-Iteration Report: host clock timing; i_* uses max over process rows ',
    '#',
    '# Using devices',
  ]);
  assert.equal(lines[7], '#'); // no ranks: straight to the header
  assert.equal(lines.length, 11);
  // A full ResolvedOptions is accepted as `options`.
  const full = { ...baseOptions, collective: 'all_reduce' } as unknown as ResolvedOptions;
  assert.equal(
    preambleLines({ version: '1', backend: 'b', options: full, ranks: [], program: 'x_perf' })[1],
    '# Collective test starting: x_perf',
  );
});

test('footer: trailing space without a verdict, verdicts, -M line, error line', () => {
  const base: FooterInfo = { outOfBounds: 0, avgBusBw: 0.00186, program: 'all_reduce_perf' };
  assert.deepEqual(footerLines(base), [
    '# Out of bounds values : 0 OK',
    '# Avg bus bandwidth    : 0.00186 ',
    '#',
    '# Collective test concluded: all_reduce_perf',
    '#',
    '',
  ]);
  const bad = footerLines({ ...base, outOfBounds: 3, avgBusBw: 1234567.25, minBwVerdict: 'OK', errorText: 'boom' });
  assert.equal(bad[0], '# Out of bounds values : 3 FAILED');
  assert.equal(bad[1], '# Avg bus bandwidth    : 1.23457e+06 OK');
  assert.equal(bad.at(-1), '# error: boom');
  assert.equal(
    memoryUsageLine({ initialization: 0, userAllocated: 1024, collective: 2 ** 30 }),
    '# GPU memory usage     : Initialization 0.00 B | User-Allocated 1.00 KB | Collective 1.00 GB | Total  1.00 GB',
  );
});

test('memString matches nccl-tests getMemString (C output)', () => {
  const cases: [number, string][] = [
    [0, '0.00 B'],
    [1, '1.00 B'],
    [999, '999 B'],
    [1023, '1023 B'],
    [1024, '1.00 KB'],
    [10239, '10.00 KB'],
    [10240, '10.0 KB'],
    [102400, '100 KB'],
    [1048575, '1024 KB'],
    [1048576, '1.00 MB'],
    [5368709120, '5.00 GB'],
    [107374182400, '100 GB'],
    [1099511627776, '1024 GB'],
    [-2048, '-2.00 KB'],
  ];
  for (const [b, want] of cases) assert.equal(memString(b), want, String(b));
});

test('NCCL_TESTS_MIN_BW: unset or -1 → no verdict; FAILED below 0.9 × value; atof parsing', () => {
  assert.equal(minBwVerdict(10, undefined), null);
  assert.equal(minBwVerdict(10, null), null);
  assert.equal(minBwVerdict(10, '-1'), null);
  assert.equal(minBwVerdict(10, '-1.0'), null);
  assert.equal(minBwVerdict(9, '10'), 'OK'); // exactly 0.9 × value passes
  assert.equal(minBwVerdict(8.99, '10'), 'FAILED');
  assert.equal(minBwVerdict(0, 'abc'), 'OK'); // atof("abc") = 0
  assert.equal(minBwVerdict(NEG_NAN, '100'), 'OK'); // NaN < x is false in C too
  assert.equal(cAtof('  2.5e0xyz'), 2.5);
  assert.equal(cAtof('1e'), 1);
  assert.equal(cAtof('.5'), 0.5);
  assert.equal(cAtof('-7GB/s'), -7);
  assert.equal(cAtof('0x10'), 16);
  assert.equal(cAtof('0x1.8p1'), 3);
  assert.equal(cAtof('INF'), Infinity);
  assert.ok(Number.isNaN(cAtof('nan')));
  assert.equal(cAtof(''), 0);
});

test('skip line, first-wrong line, timestamp format', () => {
  assert.equal(skipLine(6), 'nRanks 6 is not a power of 2, skipping');
  assert.equal(skipLine('nRanks 6 is not a power of 2, skipping'), 'nRanks 6 is not a power of 2, skipping');
  assert.equal(
    firstWrongLine({ rank: 1, index: 42, expected: '1.5', got: '0' }),
    '# first wrong: rank 1 index 42 expected 1.5 got 0',
  );
  assert.equal(formatTimestamp(new Date(2031, 11, 31, 23, 59, 58)), '2031-12-31 23:59:58');
  assert.equal(formatTimestamp(TS), '2024-01-02 03:04:05');
});

// ---------------------------------------------------------------------------------------------------
// maskTimes

test('maskTimes hides time/bandwidth/-I/timestamp cells but keeps the layout and #wrong', () => {
  const a = maskTimes(golden('allreduce-cpu.txt'));
  const b = maskTimes(golden('alltoall-gpu.txt'));
  const c = maskTimes(golden('broadcast-periter.txt'));
  assert.ok(
    a.includes(
      '\n           8             2     float     sum      -1  xxxxxxx  xxxxxx  xxxxxx       0  xxxxxxx  xxxxxx  xxxxxx       0\n',
    ),
  );
  assert.ok(
    b.includes(
      '\n     1049600        131200  bfloat16    none      -1  xxxxxxx  xxxxxx  xxxxxx  1.04858e+06  xxxxxxx  xxxxxx  xxxxxx    N/A\n',
    ),
  );
  assert.ok(
    c.includes(
      '\n     1048576        262144     float    none       1  xxxxxxx  xxxxxx  xxxxxx       0  xxxxxxx  xxxxxxx  xxxxxxx  xxxxxxx' +
        '  xxxxxxx  xxxxxx  xxxxxx       0  xxxxxxx  xxxxxxx  xxxxxxx  xxxxxxx  xxxx-xx-xx xx:xx:xx\n',
    ),
  );
  assert.ok(b.includes('\n# Avg bus bandwidth    : x FAILED\n'));
  assert.ok(a.includes('\n# Avg bus bandwidth    : x \n'));
  // Same number of lines, same length of every data row; comment lines other than the average untouched.
  for (const [orig, masked] of [
    [golden('allreduce-cpu.txt'), a],
    [golden('broadcast-periter.txt'), c],
  ] as const) {
    const ol = orig.split('\n');
    const ml = masked.split('\n');
    assert.equal(ml.length, ol.length);
    ol.forEach((l, i) => {
      assert.equal(ml[i]!.length, l.startsWith('# Avg') ? ml[i]!.length : l.length);
      if (l.startsWith('#') && !l.startsWith('# Avg')) assert.equal(ml[i], l);
    });
  }
  // The point: two runs with different timings compare equal once masked, and differ before.
  const other = allreduceCpu({ oop: [1, 2, 3, 4, 5], ip: [123456.7, 0.01, 99999, 1e9, 7] });
  assert.notEqual(other, golden('allreduce-cpu.txt'));
  assert.equal(maskTimes(other), a);
  // Non-row lines (skip line) and a changed #wrong are not hidden.
  assert.equal(maskTimes('nRanks 3 is not a power of 2, skipping'), 'nRanks 3 is not a power of 2, skipping');
  const wrongChanged = golden('allreduce-cpu.txt').replace(
    /      -1     9\.87    0\.00    0\.00       0/,
    '      -1     9.87    0.00    0.00       5',
  );
  assert.notEqual(maskTimes(wrongChanged), a);
});

// ---------------------------------------------------------------------------------------------------
// metrics and per-iteration statistics

test('algbw/busbw: bytes / 1e9 / s, × factor; zero time is not hidden', () => {
  assert.equal(algBwGBps(1e9, 1e6), 1);
  assert.equal(algBwGBps(8388608, 5.5), 8388608 / 1e9 / (5.5 * 1e-6));
  assert.equal(busBwGBps(2, 1.5), 3);
  assert.equal(algBwGBps(8, 0), Infinity);
  const nan = algBwGBps(0, 0);
  assert.ok(Number.isNaN(nan) && signBit(nan)); // prints "-nan" as nccl-tests on x86
  assert.equal(averageBusBw([1, 2, 4]), 7 / 3);
  assert.ok(Number.isNaN(averageBusBw([])) && signBit(averageBusBw([])));
});

test('percentileIndex is nearest rank: min(n-1, ceil(n*p/100)-1)', () => {
  for (let n = 1; n <= 300; n++) {
    for (const p of [50, 95, 99])
      assert.equal(percentileIndex(n, p), Math.min(n - 1, Math.ceil((n * p) / 100) - 1), `n=${n} p=${p}`);
  }
  assert.equal(percentileIndex(99, 99), 98); // p99 = max when n < 100
  assert.equal(percentileIndex(100, 99), 98); // first n where p99 is not the max
  assert.equal(percentileIndex(200, 99), 197);
  assert.equal(percentileIndex(10, 99), 9);
});

// Expected values printed (%.17g) by nccl-tests' computeIterStats on the same inputs.
const B200 = Array.from({ length: 200 }, (_, i) => 10.0 + ((i * 7919) % 200) * 0.1 + (i % 3) * 0.01);
const STATS: [number[], number, IterStats][] = [
  [
    PER_ITER_SAMPLES[0]!,
    2,
    {
      n: 8,
      min: 98.75,
      max: 103.5,
      mean: 100.765625,
      p50: 101,
      p95: 103.5,
      p99: 103.5,
      stdev: 1.4009448541520113,
      cvPct: 1.390300366967417,
    },
  ],
  [
    PER_ITER_SAMPLES[0]!,
    0,
    {
      n: 10,
      min: 98.75,
      max: 500,
      mean: 170.61250000000001,
      p50: 101.125,
      p95: 500,
      p99: 500,
      stdev: 141.47760920460169,
      cvPct: 82.923355090982014,
    },
  ],
  [[7.25], 0, { n: 1, min: 7.25, max: 7.25, mean: 7.25, p50: 7.25, p95: 7.25, p99: 7.25, stdev: 0, cvPct: 0 }],
  [[0, 0, 0, 0], 0, { n: 4, min: 0, max: 0, mean: 0, p50: 0, p95: 0, p99: 0, stdev: 0, cvPct: 0 }],
  [
    B200,
    0,
    {
      n: 200,
      min: 10,
      max: 29.910000000000004,
      mean: 19.959949999999999,
      p50: 20.010000000000002,
      p95: 28.920000000000002,
      p99: 29.710000000000004,
      stdev: 5.7733024775686239,
      cvPct: 28.924433566059154,
    },
  ],
  [
    B200,
    50,
    {
      n: 150,
      min: 10.109999999999999,
      max: 29.910000000000004,
      mean: 19.959999999999987,
      p50: 20.010000000000002,
      p95: 28.810000000000002,
      p99: 29.710000000000004,
      stdev: 5.7434513433416798,
      cvPct: 28.774806329367152,
    },
  ],
  [
    [0.3, 0.1, 0.2],
    0,
    {
      n: 3,
      min: 0.10000000000000001,
      max: 0.29999999999999999,
      mean: 0.20000000000000004,
      p50: 0.20000000000000001,
      p95: 0.29999999999999999,
      p99: 0.29999999999999999,
      stdev: 0.081649658092772595,
      cvPct: 40.824829046386292,
    },
  ],
];

test('iterStats equals nccl-tests computeIterStats bit for bit (sorted summation, population stdev)', () => {
  for (const [samples, skip, want] of STATS)
    assert.deepEqual(iterStats(samples, skip), want, `n=${samples.length} skip=${skip}`);
  const input = [3, 1, 2];
  iterStats(input);
  assert.deepEqual(input, [3, 1, 2]); // caller's array is not sorted in place
  assert.throws(() => iterStats([1, 2], 2), RangeError);
  assert.throws(() => iterStats([1, 2], -1), RangeError);
});
