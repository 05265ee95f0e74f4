// Collective descriptors against the nccl-tests contract (docs/nccl-tests-contract.md, "Formulas" and "Checks"): counts,
// size/algbw bytes and busbw factors written out independently from the §4 table, in-place offsets,
// and a symbolic simulation of every collective proving that fill/expect segments agree with the data
// a correct library moves (all ranks, roots, placements, n = 1..5).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { ALL_COLLECTIVES, findCollective, getCollective, isCollectiveName } from '../../bench/collectives/index.js';
import type {
  CollectiveDescriptor,
  HalfArgs,
  HalfLayout,
  Layout,
  LayoutContext,
} from '../../bench/collectives/descriptor.js';
import { parseTrafficMatrix } from '../../bench/collectives/alltoallv-plan.js';
import { collectiveFromProgram } from '../../bench/config/run-options.js';
import { UsageError } from '../../bench/core/errors.js';
import {
  COLL_ID,
  COLLECTIVES,
  DTYPES,
  DTYPE_BYTES,
  OPS,
  PROGRAMS,
  type CollectiveName,
  type Segment,
} from '../../bench/core/types.js';

const RANK_COUNTS = [1, 2, 3, 8, 64];
const SIZES = [0, 1, 7, 8, 15, 16, 17, 31, 100, 1000, 1024, 4095, 65536, 1_000_003, 2 ** 33 + 5];
const ELEMENT_SIZES = [...new Set(DTYPES.map((t) => DTYPE_BYTES[t]))]; // 1, 2, 4, 8

// ---------------------------------------------------------------------------------------------
// Expected values, straight from the §4 table (not from the implementation).

/** Per-rank chunk: floor(c/n) down to a multiple of 16 bytes of elements (16 elements for 1 B). */
function chunk(S: number, ts: number, n: number): number {
  const c = Math.floor(S / ts);
  const per = Math.floor(c / n);
  const align = ts === 1 ? 16 : 16 / ts;
  return per - (per % align);
}

interface Row {
  count: number;
  send: number;
  recv: number;
  sizeBytes: number;
  algBytes: number;
}
function expectedRow(name: CollectiveName, S: number, ts: number, n: number): Row {
  const c = Math.floor(S / ts);
  const b = chunk(S, ts, n);
  const row = (count: number, send: number, recv: number, alg: number): Row => ({
    count,
    send,
    recv,
    sizeBytes: Math.max(send, recv) * ts,
    algBytes: alg * ts,
  });
  switch (name) {
    case 'all_reduce':
      return row(c, c, c, c);
    case 'all_gather':
      return row(b, b, b * n, b * n);
    case 'reduce_scatter':
      return row(b, b * n, b, b * n);
    case 'broadcast':
      return row(c, c, c, c);
    case 'reduce':
      return row(c, c, c, c);
    case 'alltoall':
      return row(b, b * n, b * n, b * n);
    case 'gather':
      return row(b, b, b * n, b * n);
    case 'scatter':
      return row(b, b * n, b, b * n);
    case 'sendrecv':
      return row(c, c, c, c);
    case 'hypercube':
      return row(b, b, b * n, b * (n - 1));
    case 'alltoallv':
      throw new Error('alltoallv rows are tested in alltoallv.test.ts');
  }
}

function expectedFactor(name: CollectiveName, n: number): number {
  switch (name) {
    case 'all_reduce':
      return (2 * (n - 1)) / n;
    case 'broadcast':
    case 'reduce':
    case 'sendrecv':
    case 'hypercube':
      return 1;
    default:
      return (n - 1) / n;
  }
}

const PROPS: Record<
  CollectiveName,
  { rooted: boolean; reduces: boolean; loopsOps: boolean; ipChecked: boolean; redop: 'op' | 'none' | '' }
> = {
  all_reduce: { rooted: false, reduces: true, loopsOps: true, ipChecked: true, redop: 'op' },
  all_gather: { rooted: false, reduces: false, loopsOps: false, ipChecked: true, redop: 'none' },
  reduce_scatter: { rooted: false, reduces: true, loopsOps: true, ipChecked: true, redop: 'op' },
  broadcast: { rooted: true, reduces: false, loopsOps: false, ipChecked: true, redop: 'none' },
  reduce: { rooted: true, reduces: true, loopsOps: true, ipChecked: true, redop: 'op' },
  alltoall: { rooted: false, reduces: false, loopsOps: false, ipChecked: false, redop: 'none' },
  alltoallv: { rooted: false, reduces: false, loopsOps: false, ipChecked: false, redop: 'none' },
  gather: { rooted: true, reduces: false, loopsOps: false, ipChecked: true, redop: 'none' },
  scatter: { rooted: true, reduces: false, loopsOps: false, ipChecked: true, redop: 'none' },
  sendrecv: { rooted: false, reduces: false, loopsOps: true, ipChecked: false, redop: 'op' },
  hypercube: { rooted: false, reduces: false, loopsOps: false, ipChecked: true, redop: '' },
};

// ---------------------------------------------------------------------------------------------

describe('registry', () => {
  it('holds every collective once, in nccl-tests order, under its own name', () => {
    assert.deepEqual(
      ALL_COLLECTIVES.map((d) => d.name),
      [...COLLECTIVES],
    );
    for (const name of COLLECTIVES) {
      assert.equal(getCollective(name).name, name);
      assert.equal(findCollective(name), getCollective(name));
      assert.ok(isCollectiveName(name));
    }
    assert.equal(findCollective('allreduce'), null);
    assert.equal(findCollective('all_reduce_perf'), null);
    assert.ok(!isCollectiveName('toString'));
  });
  it('derives the program names (bin/ links, bundle launchers) and native ids from the same list', () => {
    assert.deepEqual(
      PROGRAMS,
      ALL_COLLECTIVES.map((d) => `${d.name}_perf`),
    );
    assert.deepEqual(
      COLLECTIVES.map((c) => COLL_ID[c]),
      COLLECTIVES.map((_, i) => i),
    );
  });

  it('maps program names (paths, NAME_SUFFIX, script extensions) to collectives', () => {
    const cases: [string, CollectiveName | null][] = [
      ['all_reduce_perf', 'all_reduce'],
      ['reduce_perf', 'reduce'],
      ['reduce_scatter_perf', 'reduce_scatter'],
      ['alltoall_perf', 'alltoall'],
      ['alltoallv_perf', 'alltoallv'],
      ['/opt/nccl-tests/build/all_gather_perf', 'all_gather'],
      ['C:\\bin\\sendrecv_perf.exe', 'sendrecv'],
      ['all_reduce_perf_mpi', 'all_reduce'],
      ['reduce_scatter_perf_mpi', 'reduce_scatter'],
      ['dist/bin/hypercube_perf.js', 'hypercube'],
      ['collbench', null],
      ['all_reduce', null],
      ['all_reduce_perfx', null],
      ['', null],
    ];
    for (const [program, want] of cases) assert.equal(collectiveFromProgram(program), want, program);
    for (const name of COLLECTIVES) assert.equal(collectiveFromProgram(`${name}_perf`), name);
    // A *_perf name of no collective is a mistake to report, not the collbench front end.
    assert.throws(
      () => collectiveFromProgram('xall_reduce_perf'),
      (e: unknown) => e instanceof UsageError && /^unknown collective binary 'xall_reduce_perf'/.test(e.message),
    );
  });
});

describe('columns and flags', () => {
  for (const d of ALL_COLLECTIVES) {
    it(`${d.name}: rooted/reduces/loopsOps/in-place check, redop and root columns`, () => {
      const p = PROPS[d.name];
      assert.equal(d.rooted, p.rooted);
      assert.equal(d.reduces, p.reduces);
      assert.equal(d.loopsOps, p.loopsOps);
      assert.equal(d.inPlaceChecked, p.ipChecked);
      for (const op of OPS) assert.equal(d.redopColumn(op), p.redop === 'op' ? op : p.redop);
      for (const root of [0, 1, 5]) assert.equal(d.rootColumn(root), p.rooted ? root : -1);
    });
  }
});

describe('busbw factor (§4)', () => {
  for (const d of ALL_COLLECTIVES) {
    it(d.name, () => {
      for (const n of [...RANK_COUNTS, 4, 5, 7, 1024])
        assert.equal(d.busBwFactor(n), expectedFactor(d.name, n), `n=${n}`);
      // Spot values: n = 1 gives 0 for the (n-1)/n family (the "busbw 0 without MPI" symptom).
      const constantOne = ['broadcast', 'reduce', 'sendrecv', 'hypercube'].includes(d.name);
      assert.equal(d.busBwFactor(8), constantOne ? 1 : d.name === 'all_reduce' ? 1.75 : 0.875);
      assert.equal(d.busBwFactor(1), constantOne ? 1 : 0);
      assert.equal(d.busBwFactor(2), constantOne ? 1 : d.name === 'all_reduce' ? 1 : 0.5);
    });
  }
});

describe('skip reason', () => {
  it('hypercube runs on powers of two only, with the nccl-tests line', () => {
    for (let n = 1; n <= 70; n++) {
      const pow2 = [1, 2, 4, 8, 16, 32, 64].includes(n);
      assert.equal(getCollective('hypercube').skipReason(n), pow2 ? null : `nRanks ${n} is not a power of 2, skipping`);
    }
  });
  it('no other collective skips', () => {
    for (const d of ALL_COLLECTIVES)
      if (d.name !== 'hypercube') for (const n of [1, 3, 6, 7]) assert.equal(d.skipReason(n), null);
  });
});

describe('layout counts (§4 table)', () => {
  for (const d of ALL_COLLECTIVES) {
    if (d.name === 'alltoallv') continue;
    it(`${d.name}: count, size, algbw bytes, per-rank elements, rotation`, () => {
      for (const n of RANK_COUNTS)
        for (const S of SIZES)
          for (const ts of ELEMENT_SIZES) {
            const want = expectedRow(d.name, S, ts, n);
            for (const rank of new Set([0, n - 1])) {
              const got = d.layout(S, ts, n, rank);
              const at = `n=${n} S=${S} ts=${ts} rank=${rank}`;
              assert.equal(got.count, want.count, `count ${at}`);
              assert.equal(got.sizeBytes, want.sizeBytes, `size ${at}`);
              assert.equal(got.algBytes, want.algBytes, `algBytes ${at}`);
              assert.equal(got.sendElems, want.send, `send ${at}`);
              assert.equal(got.recvElems, want.recv, `recv ${at}`);
              assert.equal(got.checkElems, want.recv, `checked region ${at}`);
              assert.equal(got.rotateBytes, want.sizeBytes, `rotation ${at}`);
              assert.equal(got.peers, undefined);
            }
          }
    });
  }

  it('hand-computed rows', () => {
    const rows: [CollectiveName, number, number, number, number, number, number][] = [
      // name, S, ts, n, count, size, algBytes
      ['all_reduce', 8, 4, 2, 2, 8, 8],
      ['all_reduce', 1001, 4, 8, 250, 1000, 1000],
      ['all_gather', 8, 4, 2, 0, 0, 0], // b = 1 rounds down to 0: small sizes print 0
      ['all_gather', 1000, 4, 8, 28, 896, 896], // c=250, 250/8=31 -> 28 (multiple of 4)
      ['all_gather', 100, 1, 3, 32, 96, 96], // int8: multiple of 16 elements
      ['all_gather', 100, 8, 3, 4, 96, 96], // double: c=12, b=4 (multiple of 2)
      ['reduce_scatter', 1048576, 2, 64, 8192, 1048576, 1048576],
      ['reduce_scatter', 1000, 2, 3, 160, 960, 960], // c=500, 166 -> 160 (multiple of 8)
      ['alltoall', 4096, 4, 3, 340, 4080, 4080], // c=1024, 341 -> 340 (multiple of 4)
      ['hypercube', 4096, 4, 4, 256, 4096, 3072],
      ['hypercube', 64, 8, 2, 4, 64, 32],
      ['gather', 33, 1, 2, 16, 32, 32],
      ['scatter', 33, 1, 1, 32, 32, 32],
      ['sendrecv', 6, 4, 64, 1, 4, 4],
      ['broadcast', 15, 8, 5, 1, 8, 8],
    ];
    for (const [name, S, ts, n, count, size, alg] of rows) {
      const l = getCollective(name).layout(S, ts, n, 0);
      assert.deepEqual([l.count, l.sizeBytes, l.algBytes], [count, size, alg], `${name} S=${S} ts=${ts} n=${n}`);
    }
  });

  it('rejects nonsense arguments', () => {
    const d = getCollective('all_gather');
    assert.throws(() => d.layout(-1, 4, 2, 0), RangeError);
    assert.throws(() => d.layout(1.5, 4, 2, 0), RangeError);
    assert.throws(() => d.layout(64, 0, 2, 0), RangeError);
    assert.throws(() => d.layout(64, 4, 0, 0), RangeError);
    const l = d.layout(64, 4, 2, 0);
    assert.throws(() => d.half(l, { rank: 2, nranks: 2, root: 0, inPlace: false, op: 'sum' }), RangeError);
    const g = getCollective('gather');
    assert.throws(
      () => g.half(g.layout(64, 4, 2, 0), { rank: 0, nranks: 2, root: 2, inPlace: false, op: 'sum' }),
      RangeError,
    );
  });
});

describe('in-place layout (§4 "In-place layout")', () => {
  const sendAtRankChunk = new Set<CollectiveName>(['all_gather', 'hypercube', 'gather']);
  const recvAtRankChunk = new Set<CollectiveName>(['reduce_scatter', 'scatter']);
  for (const d of ALL_COLLECTIVES) {
    it(d.name, () => {
      for (const n of [1, 2, 3, 5, 8])
        for (const S of [0, 64, 1000])
          for (const rank of [0, n - 1, n >> 1]) {
            const layout = d.layout(S, 4, n, rank);
            const args: HalfArgs = { rank, nranks: n, root: 0, inPlace: true, op: 'sum' };
            const ip = d.half(layout, args);
            const oop = d.half(layout, { ...args, inPlace: false });
            const b = layout.count;
            assert.deepEqual([oop.sendBuf, oop.sendOffset, oop.recvOffset], ['send', 0, 0]);
            assert.equal(ip.sendBuf, 'recv');
            assert.equal(ip.sendOffset, sendAtRankChunk.has(d.name) ? rank * b : 0, `send offset n=${n} rank=${rank}`);
            assert.equal(ip.recvOffset, recvAtRankChunk.has(d.name) ? rank * b : 0, `recv offset n=${n} rank=${rank}`);
            assert.equal(ip.checked, PROPS[d.name].ipChecked);
            assert.equal(oop.checked, true);
            if (!ip.checked) assert.deepEqual(ip.expect, []);
          }
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Symbolic simulation. Each element is a token naming what the pattern generator would put there:
//   c<stream>@<index>   copy data        i<rank>@<index>   reduce input      R@<index>   reduce output
//   0                   zero             U                 never written (send buffers start so)
// Fills write tokens, a reference model of each collective moves them as a correct library would
// (all reads before any write, in-place aliasing as NCCL defines it), then every expect segment is
// compared with what arrived. Reads of never-filled send data and accesses outside the row's
// buffer region (rotateBytes) are reported too.

function token(s: Segment, i: number): string {
  const idx = s.indexBase + i;
  switch (s.kind) {
    case 'copy':
      return `c${s.stream}@${idx}`;
    case 'reduceInput':
      return `i${s.rank}@${idx}`;
    case 'reduceOutput':
      return `R@${idx}`;
    case 'zero':
      return '0';
  }
}

/** Exact reduction of the per-rank tokens at one element (in rank order), or a marker of the mix-up. */
function reduceTokens(tokens: string[]): string {
  const m0 = /^i0@(\d+)$/.exec(tokens[0]!);
  if (!m0) return `BAD(${tokens.join(',')})`;
  for (let k = 1; k < tokens.length; k++) if (tokens[k] !== `i${k}@${m0[1]}`) return `BAD(${tokens.join(',')})`;
  return `R@${m0[1]}`;
}

interface Sim {
  problems: string[];
  halves: HalfLayout[];
  layouts: Layout[];
}

function simulate(
  d: CollectiveDescriptor,
  S: number,
  ts: number,
  n: number,
  root: number,
  inPlace: boolean,
  ctx: LayoutContext = {},
  mutate?: (h: HalfLayout, rank: number) => HalfLayout,
): Sim {
  const problems: string[] = [];
  const layouts = Array.from({ length: n }, (_, r) => d.layout(S, ts, n, r, ctx));
  const halves = layouts.map((l, r) => {
    const h = d.half(l, { rank: r, nranks: n, root, inPlace, op: 'sum' });
    return mutate ? mutate(h, r) : h;
  });
  const cap = layouts[0]!.rotateBytes / ts; // elements of the buffer region a row may touch
  const send = layouts.map(() => new Array<string>(cap).fill('U'));
  const recv = layouts.map(() => new Array<string>(cap).fill('0'));
  const sendFilled = layouts.map(() => new Array<boolean>(cap).fill(false));
  const recvFilled = layouts.map(() => new Array<boolean>(cap).fill(false));

  for (let r = 0; r < n; r++) {
    const l = layouts[r]!;
    if (l.rotateBytes / ts !== cap) problems.push(`rank ${r}: rotation differs between ranks`);
    if (l.count !== layouts[0]!.count) problems.push(`rank ${r}: count differs between ranks`);
    for (const s of halves[r]!.fill) {
      if (s.offset + s.count > cap) {
        problems.push(`rank ${r}: fill ${JSON.stringify(s)} beyond ${cap}`);
        continue;
      }
      // Convention: a rank fills only data it owns.
      if (s.kind === 'copy' && s.stream !== r) problems.push(`rank ${r}: fills copy data of stream ${s.stream}`);
      if (s.kind === 'reduceInput' && s.rank !== r) problems.push(`rank ${r}: fills reduce input of rank ${s.rank}`);
      if (s.kind === 'reduceOutput') problems.push(`rank ${r}: fills a reduce output`);
      const buf = s.buf === 'send' ? send[r]! : recv[r]!;
      const filled = s.buf === 'send' ? sendFilled[r]! : recvFilled[r]!;
      for (let i = 0; i < s.count; i++) {
        buf[s.offset + i] = token(s, i);
        filled[s.offset + i] = true;
      }
    }
  }

  const sbuf = (r: number) => (halves[r]!.sendBuf === 'send' ? send[r]! : recv[r]!);
  const sfilled = (r: number) => (halves[r]!.sendBuf === 'send' ? sendFilled[r]! : recvFilled[r]!);
  /** A library read of send data: index relative to the send pointer. */
  const readSend = (r: number, i: number): string => {
    const at = halves[r]!.sendOffset + i;
    if (at >= cap) {
      problems.push(`rank ${r}: reads send data beyond the buffer (${at})`);
      return 'OOB';
    }
    if (!sfilled(r)[at]) problems.push(`rank ${r}: library reads unfilled send element ${at}`);
    return sbuf(r)[at]!;
  };
  const writes: [number, number, string][] = [];
  /** A library write: index relative to the recv pointer (applied after all reads). */
  const writeRecv = (r: number, i: number, t: string) => writes.push([r, halves[r]!.recvOffset + i, t]);

  // In-place aliasing must be the one NCCL recognises for the collective.
  const count = layouts[0]!.count;
  for (let r = 0; r < n; r++) {
    const h = halves[r]!;
    if (!inPlace) {
      if (h.sendBuf !== 'send') problems.push(`rank ${r}: out-of-place half sends from recv`);
      continue;
    }
    if (h.sendBuf !== 'recv') problems.push(`rank ${r}: in-place half sends from its own buffer`);
    const ok = ['all_gather', 'gather', 'hypercube'].includes(d.name)
      ? h.sendOffset === h.recvOffset + r * count
      : ['reduce_scatter', 'scatter'].includes(d.name)
        ? h.recvOffset === h.sendOffset + r * count
        : h.sendOffset === h.recvOffset;
    if (!ok)
      problems.push(`rank ${r}: in-place offsets send ${h.sendOffset} recv ${h.recvOffset} are not NCCL's aliasing`);
  }

  const ranks = [...Array(n).keys()];
  const b = count;
  switch (d.name) {
    case 'all_reduce':
      for (let i = 0; i < count; i++) {
        const v = reduceTokens(ranks.map((k) => readSend(k, i)));
        for (const r of ranks) writeRecv(r, i, v);
      }
      break;
    case 'reduce':
      for (let i = 0; i < count; i++) writeRecv(root, i, reduceTokens(ranks.map((k) => readSend(k, i))));
      break;
    case 'broadcast':
      for (let i = 0; i < count; i++) {
        const v = readSend(root, i);
        for (const r of ranks) writeRecv(r, i, v);
      }
      break;
    case 'reduce_scatter':
      for (const r of ranks)
        for (let i = 0; i < b; i++) writeRecv(r, i, reduceTokens(ranks.map((k) => readSend(k, r * b + i))));
      break;
    case 'all_gather':
      for (const j of ranks)
        for (let i = 0; i < b; i++) {
          const v = readSend(j, i);
          for (const r of ranks) writeRecv(r, j * b + i, v);
        }
      break;
    case 'alltoall':
      for (const j of ranks)
        for (const r of ranks) for (let i = 0; i < b; i++) writeRecv(r, j * b + i, readSend(j, r * b + i));
      break;
    case 'gather':
      for (const j of ranks) for (let i = 0; i < b; i++) writeRecv(root, j * b + i, readSend(j, i));
      break;
    case 'scatter':
      for (const r of ranks) for (let i = 0; i < b; i++) writeRecv(r, i, readSend(root, r * b + i));
      break;
    case 'sendrecv':
      for (const r of ranks) for (let i = 0; i < count; i++) writeRecv(r, i, readSend((r - 1 + n) % n, i));
      break;
    case 'alltoallv': {
      for (const r of ranks) {
        const me = layouts[r]!.peers!;
        for (const j of ranks) {
          const them = layouts[j]!.peers!;
          if (them.sendCounts[r] !== me.recvCounts[j])
            problems.push(`rank ${j} sends ${them.sendCounts[r]} to ${r}, which expects ${me.recvCounts[j]}`);
          for (let i = 0; i < me.recvCounts[j]!; i++)
            writeRecv(r, me.recvDispls[j]! + i, readSend(j, them.sendDispls[r]! + i));
        }
      }
      break;
    }
    case 'hypercube': {
      // The nccl-tests algorithm itself: own chunk copied in (unless already in place), then log2(n)
      // rounds exchanging the `mask` chunks starting at rank & ~(mask-1) with rank ^ mask.
      for (const r of ranks) {
        const h = halves[r]!;
        const aliased = h.sendBuf === 'recv' && h.sendOffset === h.recvOffset + r * b;
        if (!aliased) for (let i = 0; i < b; i++) writeRecv(r, r * b + i, readSend(r, i));
        else for (let i = 0; i < b; i++) readSend(r, i);
      }
      flush();
      for (let mask = 1; mask < n; mask <<= 1) {
        for (const r of ranks) {
          const peer = r ^ mask;
          const peerStart = peer & ~(mask - 1); // the chunks the peer sends
          const h = halves[peer]!;
          for (let i = 0; i < b * mask; i++)
            writeRecv(r, peerStart * b + i, recv[peer]![h.recvOffset + peerStart * b + i]!);
        }
        flush();
      }
      break;
    }
  }
  flush();

  function flush(): void {
    for (const [r, at, t] of writes) {
      if (at >= cap) problems.push(`rank ${r}: library writes beyond the buffer (${at})`);
      else recv[r]![at] = t;
    }
    writes.length = 0;
  }

  for (let r = 0; r < n; r++) {
    const h = halves[r]!;
    const l = layouts[r]!;
    if (h.checked !== (!inPlace || d.inPlaceChecked)) problems.push(`rank ${r}: checked flag ${h.checked}`);
    if (!h.checked) {
      if (h.expect.length) problems.push(`rank ${r}: unchecked half has expectations`);
      continue;
    }
    // Expectations cover exactly nccl-tests' checked region, without overlaps.
    const sorted = [...h.expect].sort((x, y) => x.offset - y.offset);
    let at = h.recvOffset;
    for (const s of sorted) {
      if (s.buf !== 'recv') problems.push(`rank ${r}: expectation on the send buffer`);
      if (s.offset !== at) problems.push(`rank ${r}: expectations leave a gap or overlap at ${at}/${s.offset}`);
      at = s.offset + s.count;
    }
    if (h.recvOffset + l.checkElems > cap) problems.push(`rank ${r}: checked region beyond the buffer`);
    if (at !== h.recvOffset + l.checkElems)
      problems.push(`rank ${r}: expectations end at ${at}, region ends at ${h.recvOffset + l.checkElems}`);
    for (const s of h.expect) {
      for (let i = 0; i < s.count; i++) {
        const got = recv[r]![s.offset + i];
        if (got !== token(s, i)) {
          problems.push(`rank ${r}: recv[${s.offset + i}] = ${got}, expected ${token(s, i)}`);
          break; // one line per segment is enough
        }
      }
    }
  }
  return { problems, halves, layouts };
}

const SIM_SIZES = [0, 48, 200, 1000, 4104];
const SIM_ELEMENT_SIZES = [1, 2, 4, 8];

function roots(d: CollectiveDescriptor, n: number): number[] {
  return d.rooted ? [...Array(n).keys()] : [0];
}

describe('symbolic simulation: fill/expect agree with the data each collective moves', () => {
  for (const d of ALL_COLLECTIVES) {
    it(d.name, () => {
      let checkedElements = 0;
      for (let n = 1; n <= 5; n++) {
        if (d.skipReason(n) !== null) continue;
        for (const S of SIM_SIZES)
          for (const ts of SIM_ELEMENT_SIZES)
            for (const root of roots(d, n))
              for (const inPlace of [false, true]) {
                const sim = simulate(d, S, ts, n, root, inPlace);
                assert.deepEqual(sim.problems, [], `n=${n} S=${S} ts=${ts} root=${root} inPlace=${inPlace}`);
                for (const h of sim.halves) for (const s of h.expect) if (s.kind !== 'zero') checkedElements += s.count;
              }
      }
      assert.ok(checkedElements > 1000, `the simulation compared real data (${checkedElements} elements)`);
    });
  }

  it('hypercube at n = 8 and 16', () => {
    const d = getCollective('hypercube');
    for (const n of [8, 16])
      for (const inPlace of [false, true]) {
        assert.deepEqual(simulate(d, 4096, 4, n, 0, inPlace).problems, []);
      }
  });

  it('alltoallv with generated spreads and a traffic matrix', () => {
    const d = getCollective('alltoallv');
    for (const spread of ['0', '0.3', '0.5', '1']) {
      const ctx: LayoutContext = { env: { NCCL_TESTS_ALLTOALLV_SPREAD: spread } };
      for (let n = 1; n <= 6; n++)
        for (const S of [0, 256, 1000, 9999])
          for (const ts of SIM_ELEMENT_SIZES)
            for (const inPlace of [false, true]) {
              assert.deepEqual(
                simulate(d, S, ts, n, 0, inPlace, ctx).problems,
                [],
                `s=${spread} n=${n} S=${S} ts=${ts} ip=${inPlace}`,
              );
            }
    }
    // Uneven matrix (zeros, self traffic, unequal totals: the tail of lighter ranks must stay zero).
    const matrix = parseTrafficMatrix('0 64 160 32\n16 0 0 48\n512 16 96 0\n32 32 32 32\n', 'inline');
    for (let n = 1; n <= 4; n++)
      for (const ts of SIM_ELEMENT_SIZES)
        for (const inPlace of [false, true]) {
          assert.deepEqual(
            simulate(d, 0, ts, n, 0, inPlace, { alltoallv: matrix }).problems,
            [],
            `matrix n=${n} ts=${ts}`,
          );
        }
  });
});

describe('the simulation catches broken layouts', () => {
  // Each mutation is a plausible bug; the simulator must report it, or its passing runs prove nothing.
  const mutateExpect =
    (f: (s: Segment, rank: number) => Segment) =>
    (h: HalfLayout, rank: number): HalfLayout => ({ ...h, expect: h.expect.map((s) => f(s, rank)) });
  const mutateFill =
    (f: (s: Segment, rank: number) => Segment) =>
    (h: HalfLayout, rank: number): HalfLayout => ({ ...h, fill: h.fill.map((s) => f(s, rank)) });
  const cases: [string, CollectiveName, boolean, (h: HalfLayout, rank: number) => HalfLayout][] = [
    [
      'all_gather expecting chunk j from rank j+1',
      'all_gather',
      false,
      mutateExpect((s) => (s.kind === 'copy' ? { ...s, stream: (s.stream + 1) % 3 } : s)),
    ],
    [
      'reduce_scatter expecting indices from 0 on every rank',
      'reduce_scatter',
      false,
      mutateExpect((s) => ({ ...s, indexBase: 0 })),
    ],
    [
      'reduce_scatter in place checking the start of recv',
      'reduce_scatter',
      true,
      (h) => ({ ...h, expect: h.expect.map((s) => ({ ...s, offset: 0 })) }),
    ],
    ['gather in place filling at offset 0', 'gather', true, mutateFill((s) => ({ ...s, offset: 0 }))],
    ['all_gather in place with the send pointer at 0', 'all_gather', true, (h) => ({ ...h, sendOffset: 0 })],
    ['scatter in place receiving at 0', 'scatter', true, (h) => ({ ...h, recvOffset: 0 })],
    [
      'alltoall expecting the sender-side offset',
      'alltoall',
      false,
      mutateExpect((s) => ({ ...s, indexBase: s.offset })),
    ],
    ['sendrecv expecting data from rank+1', 'sendrecv', false, mutateExpect((s, r) => ({ ...s, stream: (r + 1) % 3 }))],
    [
      'reduce non-root expecting the output',
      'reduce',
      false,
      mutateExpect((s) => (s.kind === 'zero' ? { ...s, kind: 'reduceOutput' } : s)),
    ],
    ['broadcast expecting stream 0 while root 1 sends', 'broadcast', false, mutateExpect((s) => ({ ...s, stream: 0 }))],
    [
      'broadcast in place with the root filling its send buffer',
      'broadcast',
      true,
      mutateFill((s) => ({ ...s, buf: 'send' })),
    ],
    ['all_reduce filling only half the input', 'all_reduce', false, mutateFill((s) => ({ ...s, count: s.count >> 1 }))],
    ['gather root missing the last chunk', 'gather', false, (h) => ({ ...h, expect: h.expect.slice(0, -1) })],
  ];
  for (const [what, name, inPlace, mutate] of cases) {
    it(what, () => {
      const d = getCollective(name);
      const sim = simulate(d, 1000, 4, 3, 1, inPlace, {}, mutate);
      assert.notDeepEqual(sim.problems, []);
    });
  }
  it('hypercube expecting all_gather chunks shifted by one', () => {
    const sim = simulate(
      getCollective('hypercube'),
      1000,
      4,
      4,
      0,
      false,
      {},
      mutateExpect((s) => ({ ...s, stream: (s.stream + 1) % 4 })),
    );
    assert.notDeepEqual(sim.problems, []);
  });
});
