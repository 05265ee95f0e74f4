// alltoallv plan against docs/nccl-tests-contract.md, "Formulas" (alltoallv): generated distance-weighted counts
// for spreads 0 / 0.5 / 1 and n = 1, environment parsing, traffic-matrix parsing, scaling and errors,
// the -b/-e rules of matrix mode, and the descriptor's row (count, size, algbw bytes) in both modes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import {
  ENV_MATRIX_FILE,
  ENV_MATRIX_SCALE,
  ENV_SPREAD,
  PlanError,
  checkMatrixSweep,
  generatedPeerBytes,
  loadAlltoallvSource,
  parseTrafficMatrix,
  planAlltoallv,
  rankCounts,
  rankTotalsBytes,
  readScale,
  readSpread,
  type AlltoallvSource,
  type MatrixSource,
} from '../../bench/collectives/alltoallv-plan.js';
import { alltoallv } from '../../bench/collectives/alltoallv.js';
import { getCollective, PlanError as PlanErrorFromIndex } from '../../bench/collectives/index.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/alltoallv-3x3.txt', import.meta.url));
const gen = (spread: number): AlltoallvSource => ({ mode: 'generated', spread });

/** Asserts a PlanError whose single-line message contains every fragment. */
function throwsPlan(fn: () => unknown, ...fragments: string[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof PlanError, `PlanError expected, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), `one line: ${err.message}`);
    for (const f of fragments) assert.ok(err.message.includes(f), `"${err.message}" should mention "${f}"`);
    return true;
  });
}

describe('generated pattern', () => {
  // n = 4, float, S = 4096: c = 1024, b = 256, T = b*n*ts = 4096 B; sum of distances = 6.
  const cases: [number, number[]][] = [
    [1, [0, 672, 1360, 2048]], // d*4096/6 = 0, 682.7, 1365.3, 2048 -> floored to 16 B
    [0, [1024, 1024, 1024, 1024]], // uniform T/n
    [0.5, [512, 848, 1184, 1536]], // 512 + 0.5*(0, 682.7, 1365.3, 2048)
  ];
  for (const [spread, bytesByDistance] of cases) {
    it(`spread ${spread}: per-distance bytes for n = 4`, () => {
      for (let i = 0; i < 4; i++)
        for (let j = 0; j < 4; j++) {
          assert.equal(generatedPeerBytes(i, j, 4, 4096, spread), bytesByDistance[(j - i + 4) % 4], `${i}->${j}`);
        }
      const plan = planAlltoallv(gen(spread), 4096, 4, 4);
      const total = bytesByDistance.reduce((a, v) => a + v, 0);
      assert.equal(plan.paramCount, 256);
      assert.equal(plan.totalBytes, 4096);
      assert.equal(plan.maxSendElems, total / 4);
      assert.equal(plan.maxRecvElems, total / 4);
      const row = alltoallv.layout(4096, 4, 4, 2, { alltoallv: gen(spread) });
      assert.equal(row.count, 256);
      assert.equal(row.sizeBytes, total);
      assert.equal(row.algBytes, total);
      assert.equal(row.rotateBytes, total);
      // Rank 2 sends to 0,1,2,3 at distances 2,3,0,1 and receives from 0,1,2,3 at distances 2,1,0,3.
      const b = bytesByDistance.map((x) => x / 4);
      assert.deepEqual(row.peers!.sendCounts, [b[2], b[3], b[0], b[1]]);
      assert.deepEqual(row.peers!.recvCounts, [b[2], b[1], b[0], b[3]]);
      assert.deepEqual(row.peers!.sendDispls, [0, b[2], b[2]! + b[3]!, b[2]! + b[3]! + b[0]!]);
      assert.deepEqual(row.peers!.recvDispls, [0, b[2], b[2]! + b[1]!, b[2]! + b[1]! + b[0]!]);
    });
  }

  it('row counts for n in {1, 2, 3, 8, 64} from the §4 formula', () => {
    const floor16 = (x: number) => Math.floor(x) - (Math.floor(x) % 16);
    for (const s of [0, 0.5, 1])
      for (const n of [1, 2, 3, 8, 64])
        for (const ts of [1, 2, 4, 8]) {
          for (const S of [0, 64, 1000, 65536, 1_000_003, 2 ** 33 + 5]) {
            const per = Math.floor(Math.floor(S / ts) / n);
            const b = per - (per % (ts === 1 ? 16 : 16 / ts));
            const T = b * n * ts;
            let total = 0;
            for (let d = 0; d < n; d++)
              total += n === 1 ? floor16(T) : floor16(((1 - s) * T) / n + (s * d * T) / ((n * (n - 1)) / 2));
            const row = alltoallv.layout(S, ts, n, n - 1, { alltoallv: gen(s) });
            const at = `s=${s} n=${n} ts=${ts} S=${S}`;
            assert.equal(row.count, b, at);
            assert.equal(row.sizeBytes, total, at);
            assert.equal(row.algBytes, total, at);
            assert.equal(row.sendElems * ts, total, at);
            assert.equal(alltoallv.busBwFactor(n), (n - 1) / n);
          }
        }
  });

  it('spread 1 sends nothing to self; spread 0 is uniform', () => {
    for (let n = 2; n <= 9; n++)
      for (let r = 0; r < n; r++) {
        assert.equal(rankCounts(planAlltoallv(gen(1), 1 << 20, 4, n), r).peers.sendCounts[r], 0);
        const uniform = rankCounts(planAlltoallv(gen(0), 1 << 20, 4, n), r).peers.sendCounts;
        assert.ok(
          uniform.every((v) => v === uniform[0]),
          `n=${n}`,
        );
      }
  });

  it('n = 1: everything goes to self', () => {
    for (const spread of [0, 0.5, 1]) {
      const row = alltoallv.layout(1000, 4, 1, 0, { alltoallv: gen(spread) });
      // c = 250, b = 248 (multiple of 4): T = 992 B, all of it to rank 0.
      assert.equal(row.count, 248);
      assert.deepEqual(row.peers!.sendCounts, [248]);
      assert.deepEqual(row.peers!.recvCounts, [248]);
      assert.equal(row.sizeBytes, 992);
      assert.equal(alltoallv.busBwFactor(1), 0);
    }
  });

  it('every rank sends and receives the same total; counts are 16-byte multiples and pairwise consistent', () => {
    for (const spread of [0, 0.25, 0.5, 0.75, 1])
      for (let n = 1; n <= 12; n++)
        for (const ts of [1, 2, 4, 8]) {
          for (const S of [0, 100, 12345, 1 << 20]) {
            const plan = planAlltoallv(gen(spread), S, ts, n);
            const views = Array.from({ length: n }, (_, r) => rankCounts(plan, r));
            const at = `s=${spread} n=${n} ts=${ts} S=${S}`;
            for (let r = 0; r < n; r++) {
              const v = views[r]!;
              assert.equal(v.sendElems, views[0]!.sendElems, at);
              assert.equal(v.recvElems, v.sendElems, at);
              assert.equal(v.sendElems, plan.maxSendElems, at);
              assert.ok(v.sendElems * ts <= plan.paramCount * n * ts, `never more than T: ${at}`);
              for (let j = 0; j < n; j++) {
                assert.equal((v.peers.sendCounts[j]! * ts) % 16, 0, at);
                assert.equal(v.peers.sendCounts[j], views[j]!.peers.recvCounts[r], `${r}->${j} ${at}`);
                // Offset of my segment in j's stream = what j sends to ranks before me (brute force).
                let off = 0;
                for (let k = 0; k < r; k++) off += views[j]!.peers.sendCounts[k]!;
                assert.equal(v.srcOffsets[j], off, `srcOffset ${j}->${r} ${at}`);
              }
            }
          }
        }
  });

  it('count column is b, with the 16-byte chunk rounding', () => {
    // S = 1000, int8, n = 3: c = 1000, 333 -> 320 (multiple of 16 elements).
    assert.equal(alltoallv.layout(1000, 1, 3, 0).count, 320);
    // Small sizes print 0 and move nothing.
    const tiny = alltoallv.layout(8, 4, 2, 0);
    assert.deepEqual([tiny.count, tiny.sizeBytes, tiny.sendElems], [0, 0, 0]);
  });
});

describe('environment', () => {
  it('spread: default 1, clamped to [0, 1], garbage rejected', () => {
    assert.equal(readSpread({}), 1);
    assert.equal(readSpread({ [ENV_SPREAD]: '' }), 1);
    assert.equal(readSpread({ [ENV_SPREAD]: '0.25' }), 0.25);
    assert.equal(readSpread({ [ENV_SPREAD]: ' .5 ' }), 0.5);
    assert.equal(readSpread({ [ENV_SPREAD]: '2' }), 1);
    assert.equal(readSpread({ [ENV_SPREAD]: '-1' }), 0);
    assert.equal(readSpread({ [ENV_SPREAD]: '1e-1' }), 0.1);
    throwsPlan(() => readSpread({ [ENV_SPREAD]: '0,5' }), ENV_SPREAD, '0,5');
    throwsPlan(() => readSpread({ [ENV_SPREAD]: 'nan' }), ENV_SPREAD);
  });

  it('scale: default 1, negative becomes 0, garbage rejected', () => {
    assert.equal(readScale({}), 1);
    assert.equal(readScale({ [ENV_MATRIX_SCALE]: '2.5' }), 2.5);
    assert.equal(readScale({ [ENV_MATRIX_SCALE]: '-3' }), 0);
    throwsPlan(() => readScale({ [ENV_MATRIX_SCALE]: 'x2' }), ENV_MATRIX_SCALE);
  });

  it('the descriptor reads the mode from ctx.env, not from process.env', () => {
    const prev = process.env[ENV_SPREAD];
    process.env[ENV_SPREAD] = '0';
    try {
      // Default spread (1) unless the context says otherwise.
      assert.deepEqual(alltoallv.layout(4096, 4, 4, 0).peers!.sendCounts, [0, 168, 340, 512]);
      assert.deepEqual(
        alltoallv.layout(4096, 4, 4, 0, { env: { [ENV_SPREAD]: '0' } }).peers!.sendCounts,
        [256, 256, 256, 256],
      );
    } finally {
      if (prev === undefined) delete process.env[ENV_SPREAD];
      else process.env[ENV_SPREAD] = prev;
    }
  });
});

describe('traffic matrix', () => {
  const M = parseTrafficMatrix('100  200  150\n50   100  75\n300  150  200\n', 'm.txt');

  it('parses, floors each cell to 16 bytes', () => {
    assert.equal(M.dim, 3);
    assert.deepEqual(M.cells, [96, 192, 144, 48, 96, 64, 288, 144, 192]);
    assert.equal(M.file, 'm.txt');
    assert.equal(M.scale, 1);
  });

  it('tolerates blank lines, tabs, CRLF and exponents', () => {
    const m = parseTrafficMatrix('\n 1.6e1\t32 \r\n\n  48 64\r\n\n', 'f');
    assert.deepEqual(m.cells, [16, 32, 48, 64]);
  });

  it('scales before flooring', () => {
    assert.deepEqual(parseTrafficMatrix('100 200\n50 75\n', 'f', 0.5).cells, [48, 96, 16, 32]);
    assert.deepEqual(parseTrafficMatrix('100 200\n50 75\n', 'f', 0).cells, [0, 0, 0, 0]);
    assert.deepEqual(parseTrafficMatrix('10 20\n8 16\n', 'f', 2).cells, [16, 32, 16, 32]);
  });

  it('rejects bad input with a one-line message naming the file', () => {
    throwsPlan(() => parseTrafficMatrix('', 'empty.txt'), 'empty.txt', 'empty');
    throwsPlan(() => parseTrafficMatrix(' \n\t\n', 'blank.txt'), 'blank.txt', 'empty');
    throwsPlan(
      () => parseTrafficMatrix('1 2 3\n4 5\n6 7 8\n', 'rag.txt'),
      'rag.txt',
      'line 2',
      '2 values',
      'expected 3',
    );
    throwsPlan(() => parseTrafficMatrix('1 2 3\n4 5 6\n', 'rect.txt'), 'rect.txt', 'square', '2x3');
    throwsPlan(() => parseTrafficMatrix('1 -2\n3 4\n', 'neg.txt'), 'neg.txt', 'negative', 'line 1 column 2');
    throwsPlan(() => parseTrafficMatrix('1 2\n3 abc\n', 'nan.txt'), 'nan.txt', "'abc'", 'line 2 column 2');
    throwsPlan(() => parseTrafficMatrix('1,2\n3,4\n', 'csv.txt'), 'csv.txt', "'1,2'");
    throwsPlan(() => parseTrafficMatrix('inf 1\n1 1\n', 'inf.txt'), 'inf.txt', "'inf'");
    throwsPlan(() => parseTrafficMatrix('1e300 1\n1 1\n', 'big.txt'), 'big.txt', 'too large');
    throwsPlan(() => parseTrafficMatrix('1 2\n3 4\n', 'ok.txt', 1e300), 'ok.txt', 'too large');
  });

  it('uses the top-left n x n block; fewer rows than ranks is an error', () => {
    const big = parseTrafficMatrix('16 32 48 64\n80 96 112 128\n0 0 0 0\n16 16 16 16\n', 'big4.txt');
    const plan = planAlltoallv(big, 0, 4, 2);
    assert.deepEqual(rankCounts(plan, 0).peers.sendCounts, [4, 8]);
    assert.deepEqual(rankCounts(plan, 1).peers.recvCounts, [8, 24]);
    assert.equal(plan.maxSendElems, (80 + 96) / 4);
    throwsPlan(() => planAlltoallv(M, 0, 4, 4), 'm.txt', '3x3', '4 ranks');
    throwsPlan(() => alltoallv.layout(0, 4, 4, 0, { alltoallv: M }), 'm.txt');
  });

  it('row: count 0, size and algbw bytes of the busiest rank, per-rank peers and source offsets', () => {
    // Send totals 432, 208, 624; receive totals 432, 432, 400: busiest = rank 2 sending 624 B.
    const row = alltoallv.layout(4096, 4, 3, 1, { alltoallv: M });
    assert.equal(row.count, 0);
    assert.equal(row.sizeBytes, 624);
    assert.equal(row.algBytes, 624);
    assert.equal(row.rotateBytes, 624);
    assert.equal(row.checkElems, 432 / 4);
    assert.deepEqual(row.peers, {
      sendCounts: [12, 24, 16],
      sendDispls: [0, 12, 36],
      recvCounts: [48, 24, 36],
      recvDispls: [0, 48, 72],
    });
    assert.deepEqual(row.srcOffsets, [24, 12, 72]);
    assert.deepEqual([row.sendElems, row.recvElems], [52, 108]);
    assert.deepEqual(rankTotalsBytes(planAlltoallv(M, 0, 4, 3)), [
      { sendBytes: 432, recvBytes: 432 },
      { sendBytes: 208, recvBytes: 432 },
      { sendBytes: 624, recvBytes: 400 },
    ]);
    // Same bytes whatever the datatype; counts scale with the element size.
    assert.equal(alltoallv.layout(4096, 8, 3, 2, { alltoallv: M }).sizeBytes, 624);
    assert.equal(alltoallv.layout(4096, 1, 3, 2, { alltoallv: M }).sendElems, 624);
  });

  it('the unused tail of a lighter rank is expected to stay zero', () => {
    const row = alltoallv.layout(624, 4, 3, 2, { alltoallv: M }); // rank 2 receives 400 B of 432
    const half = alltoallv.half(row, { rank: 2, nranks: 3, root: 0, inPlace: false, op: 'sum' });
    assert.deepEqual(half.expect.at(-1), {
      buf: 'recv',
      kind: 'zero',
      offset: 100,
      count: 8,
      indexBase: 0,
      stream: 0,
      rank: 0,
    });
    assert.deepEqual(
      half.expect.slice(0, 3).map((s) => [s.kind, s.stream, s.offset, s.count, s.indexBase]),
      [
        ['copy', 0, 0, 36, 72],
        ['copy', 1, 36, 16, 36],
        ['copy', 2, 52, 48, 108],
      ],
    );
  });

  it('matrix mode needs -b == -e >= the busiest total', () => {
    checkMatrixSweep(M, 3, 624, 624);
    checkMatrixSweep(M, 3, 1 << 20, 1 << 20);
    throwsPlan(() => checkMatrixSweep(M, 3, 623, 623), 'm.txt', '624', '623');
    throwsPlan(() => checkMatrixSweep(M, 3, 8, 1 << 20), 'm.txt', '-b', '-e');
    // Two ranks use the top-left block: sends 288/144, receives 144/288, so 288 B is enough.
    checkMatrixSweep(M, 2, 288, 288);
    throwsPlan(() => checkMatrixSweep(M, 4, 1 << 20, 1 << 20), '3x3');
    // Through the descriptor when the sweep bounds are in the context.
    throwsPlan(() => alltoallv.layout(1024, 4, 3, 0, { alltoallv: M, minBytes: 8, maxBytes: 1024 }), '-b');
    throwsPlan(() => alltoallv.layout(512, 4, 3, 0, { alltoallv: M, minBytes: 512, maxBytes: 512 }), 'at least 624');
    assert.equal(alltoallv.layout(624, 4, 3, 0, { alltoallv: M, minBytes: 624, maxBytes: 624 }).sizeBytes, 624);
  });
});

describe('loading the source', () => {
  it('no matrix file: generated mode with the spread from env', () => {
    assert.deepEqual(loadAlltoallvSource({}), { mode: 'generated', spread: 1 });
    assert.deepEqual(loadAlltoallvSource({ [ENV_SPREAD]: '0.5', [ENV_MATRIX_FILE]: '' }), {
      mode: 'generated',
      spread: 0.5,
    });
  });

  it('reads a real file with the default reader, scaled by env', () => {
    const src = loadAlltoallvSource({ [ENV_MATRIX_FILE]: FIXTURE, [ENV_MATRIX_SCALE]: '0.5' }) as MatrixSource;
    assert.equal(src.mode, 'matrix');
    assert.equal(src.file, FIXTURE);
    assert.equal(src.scale, 0.5);
    // 50 100 75 / 25 50 37.5 / 150 75 100 floored to 16 B.
    assert.deepEqual(src.cells, [48, 96, 64, 16, 48, 32, 144, 64, 96]);
  });

  it('an unreadable file is a PlanError naming it', () => {
    throwsPlan(
      () => loadAlltoallvSource({ [ENV_MATRIX_FILE]: '/nonexistent/matrix.txt' }),
      '/nonexistent/matrix.txt',
      'cannot read',
    );
    throwsPlan(
      () =>
        loadAlltoallvSource({ [ENV_MATRIX_FILE]: 'x' }, () => {
          throw new Error('EACCES:\npermission denied');
        }),
      'x',
      'EACCES',
    );
  });

  it('the descriptor reads the matrix through the injected reader once per context', () => {
    let reads = 0;
    const ctx = {
      env: { [ENV_MATRIX_FILE]: 'traffic.txt' },
      readFile: (path: string) => {
        reads++;
        assert.equal(path, 'traffic.txt');
        return '32 64\n16 0\n';
      },
    };
    const r0 = alltoallv.layout(96, 4, 2, 0, ctx);
    const r1 = alltoallv.layout(96, 4, 2, 1, ctx);
    assert.equal(reads, 1);
    assert.deepEqual(r0.peers!.sendCounts, [8, 16]);
    assert.deepEqual(r1.peers!.recvCounts, [16, 0]);
    assert.equal(r0.sizeBytes, 96);
    assert.equal(r0.count, 0);
    throwsPlan(
      () => alltoallv.layout(96, 4, 2, 0, { env: { [ENV_MATRIX_FILE]: 'bad.txt' }, readFile: () => '1 2\n3\n' }),
      'bad.txt',
    );
  });

  it('PlanError is re-exported by the registry and is an Error', () => {
    assert.equal(PlanErrorFromIndex, PlanError);
    const e = new PlanError('x');
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'PlanError');
    assert.equal(getCollective('alltoallv'), alltoallv);
  });
});
