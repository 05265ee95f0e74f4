// Gloo's algorithms (--gloo-algo) checked on real ranks, and three defects of this Gloo (0.5.0,
// Debian's libgloo) that collbench's checks catch: legacy AllreduceBcube at 3 ranks, the legacy
// ReduceScatterHalvingDoubling race, and gloo::float16's store-dropping copy assignment. These tests
// keep the proof that the checks work on real library bugs (as library-defects does for Open MPI).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { footer, parseRows, runProgram } from '../helpers/cli.js';

const SIZES = ['-b', '8', '-e', '128K', '-f', '16384'];
const OURS = { COLLBENCH_GLOO_FLOAT16: 'collbench' }; // keep the float16 defect out of the algorithm tests

function gloo(program: string, np: number, args: string[], env: NodeJS.ProcessEnv = OURS) {
  return runProgram(program, ['--backend', 'gloo', '--np', String(np), '--oversubscribe', ...args], {
    env,
    timeoutMs: 300_000,
  });
}

describe('every all_reduce algorithm at 3 ranks', () => {
  for (const algo of ['default', 'ring', 'bcube', 'legacy_ring', 'legacy_ring_chunked', 'legacy_halving_doubling']) {
    it(`${algo}: all datatypes and ops, #wrong 0`, () => {
      const r = gloo('all_reduce_perf', 3, [
        '--gloo-algo',
        algo,
        ...SIZES,
        '-n',
        '1',
        '-w',
        '0',
        '-d',
        'all',
        '-o',
        'all',
      ]);
      assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
      const rows = parseRows(r.stdout);
      assert.equal(rows.length, 12 * 6 * 2, r.stdout);
      for (const row of rows) {
        assert.equal(row.oop.wrong, 0, row.line);
        assert.equal(row.ip.wrong, 0, row.line);
      }
      assert.equal(footer(r.stdout).outOfBounds, 0);
    });
  }

  it('legacy_bcube: wrong sums at 3 ranks are reported (#wrong > 0, exit 7, first wrong element named)', () => {
    const r = gloo('all_reduce_perf', 3, [
      '--gloo-algo',
      'legacy_bcube',
      '-b',
      '1K',
      '-e',
      '64K',
      '-f',
      '64',
      '-n',
      '1',
      '-d',
      'int32',
    ]);
    assert.equal(r.code, 7, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    const rows = parseRows(r.stdout);
    assert.equal(rows.length, 2);
    assert.ok(
      rows.every((x) => (x.oop.wrong ?? 0) > 0 && (x.ip.wrong ?? 0) > 0),
      r.stdout,
    );
    assert.match(
      r.stdout,
      /^# first wrong: rank \d+ index \d+ expected -?\d+ \(0x[0-9a-f]+\) got -?\d+ \(0x[0-9a-f]+\)$/m,
    );
    assert.match(
      r.stdout,
      /^# Warning: Gloo's legacy AllreduceBcube is known to give wrong sums when the rank count \(3\)/m,
    );
    const f = footer(r.stdout);
    assert.equal(f.oobVerdict, 'FAILED');
    assert.ok(f.outOfBounds > 0);
  });

  it('legacy_bcube is right where the rank count is a power of 2 (4 ranks)', () => {
    const r = gloo('all_reduce_perf', 4, [
      '--gloo-algo',
      'legacy_bcube',
      '-b',
      '1K',
      '-e',
      '64K',
      '-f',
      '64',
      '-n',
      '1',
      '-d',
      'int32',
    ]);
    assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    assert.doesNotMatch(r.stdout, /Warning/);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});

describe('reduce_scatter algorithms', () => {
  for (const algo of ['ring', 'bcube']) {
    it(`${algo} (an all-reduce underneath) at 3 ranks, #wrong 0`, () => {
      const r = gloo('reduce_scatter_perf', 3, [
        '--gloo-algo',
        algo,
        ...SIZES,
        '-n',
        '1',
        '-w',
        '0',
        '-d',
        'all',
        '-o',
        'sum',
      ]);
      assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
      assert.equal(parseRows(r.stdout).length, 12 * 2);
      assert.equal(footer(r.stdout).outOfBounds, 0);
    });
  }

  it("legacy_halving_doubling: the in-flight overwrite of Gloo's ReduceScatterHalvingDoubling is reported", () => {
    // Rank 1 copies its block to the start of its buffer while its reduce-scatter send from there may
    // still be in flight. A send completes at once only while the socket buffer Gloo sized for earlier
    // messages holds it: a sweep that grows (64 KiB, then 128 KiB) makes it lose the race (measured:
    // 50-60 '# first wrong' lines per run; a single size alone rarely shows it).
    const r = gloo('reduce_scatter_perf', 2, [
      '--gloo-algo',
      'legacy_halving_doubling',
      '-b',
      '64K',
      '-e',
      '128K',
      '-f',
      '2',
      '-n',
      '2',
      '-c',
      '2',
      '-d',
      'all',
      '-o',
      'all',
    ]);
    assert.equal(r.code, 7, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    assert.match(r.stdout, /^# Warning: Gloo's legacy ReduceScatterHalvingDoubling overwrites/m);
    assert.match(r.stdout, /^# first wrong: rank 0 /m);
  });
});

describe('gloo::float16', () => {
  const args = ['-b', '1M', '-e', '1M', '-n', '1', '-d', 'half', '-o', 'max'];
  it("Gloo's own half arithmetic (the default) drops stores: #wrong > 0, exit 7, with a warning", () => {
    const r = gloo('all_reduce_perf', 2, args, {});
    assert.equal(r.code, 7, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    assert.match(r.stdout, /^# Warning: Gloo's gloo::float16 drops some stores/m);
    const [row] = parseRows(r.stdout);
    assert.ok((row.oop.wrong ?? 0) > 0 && (row.ip.wrong ?? 0) > 0, row.line);
    assert.match(
      r.stdout,
      /^# first wrong: rank \d+ index \d+ expected \S+ \(0x[0-9a-f]{4}\) got \S+ \(0x[0-9a-f]{4}\)$/m,
    );
  });
  it('COLLBENCH_GLOO_FLOAT16=collbench: the same run is right', () => {
    const r = gloo('all_reduce_perf', 2, args);
    assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    assert.doesNotMatch(r.stdout, /Warning/);
    assert.equal(footer(r.stdout).outOfBounds, 0);
  });
});
