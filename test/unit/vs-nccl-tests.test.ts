// The collbench-vs-nccl-tests runner without a GPU (bench/tools/vs-nccl-tests.ts): its table parser, the interleaved
// order, the per-size judgement and the deadline, on outputs in the two tools' table format (test/fixtures/vs-nccl-tests:
// written in that format, with and without -I's columns; no GPU here to record real ones), and its bad input. A real
// A/A smoke run with the mpi backend standing in for both tools is in test/cli/vs-nccl-tests.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { analyseSize } from '../../bench/tools/side-by-side.js';
import {
  BadInput,
  collect,
  parseOptions,
  parsePerfTable,
  render,
  runArgs,
  versionLine,
  type Options,
  type Tool,
} from '../../bench/tools/vs-nccl-tests.js';
import type { CollectiveName } from '../../bench/core/types.js';

const FIX = join(import.meta.dirname, '..', 'fixtures', 'vs-nccl-tests');
const fixture = (name: string): string => readFileSync(join(FIX, name), 'utf8');
const ROOT = join(import.meta.dirname, '..', '..');

const base: Options = {
  ncclTests: '/nt',
  collbench: '/cb',
  backend: 'nccl',
  colls: ['sendrecv'],
  runs: ['I1'],
  rounds: 4,
  iters: 20,
  warmup: 1,
  minBytes: 8,
  maxBytes: 32,
  goal: { ratio: 1.02, addedUs: 0.3 },
  timeoutSec: 60,
  deadlineSec: 0,
  ncclLib: null,
  markdown: false,
  json: null,
  strict: false,
};

describe('parsePerfTable', () => {
  it('reads size, out-of-place and in-place time with -I columns, and skips every comment line', () => {
    assert.deepEqual(parsePerfTable(fixture('nccl-tests-sendrecv-I1.txt')), [
      { size: 8, oopUs: 6.51, ipUs: 6.48 },
      { size: 16, oopUs: 6.47, ipUs: 6.5 },
      { size: 32, oopUs: 6.55, ipUs: 6.52 },
    ]);
  });
  it('reads the plain table and the 0-byte row', () => {
    assert.deepEqual(parsePerfTable(fixture('nccl-tests-all_reduce-zero.txt')), [{ size: 0, oopUs: 0.21, ipUs: 0.18 }]);
  });
  it("names each tool's version line", () => {
    assert.equal(
      versionLine(fixture('nccl-tests-sendrecv-I1.txt')),
      'nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809',
    );
    assert.equal(
      versionLine(fixture('collbench-sendrecv-I1.txt')),
      'collbench version 0.1.0 backend nccl (NCCL 2.28.9)',
    );
  });
});

describe('collect', () => {
  /** A fake run: the fixtures, every call logged. */
  function fake(): { calls: string[]; run: (tool: Tool, coll: CollectiveName, args: string[]) => string } {
    const calls: string[] = [];
    return {
      calls,
      run: (tool, coll, args) => {
        calls.push(`${tool} ${coll} ${args.join(' ')}`);
        return fixture(`${tool}-sendrecv-I1.txt`);
      },
    };
  }

  it('interleaves A B, B A by round, passes -I 1 to both, and judges each size against the goal', () => {
    const { calls, run } = fake();
    const c = collect(base, run);
    assert.equal(c.rounds, 4);
    assert.deepEqual(
      calls.map((x) => x.split(' ')[0]),
      ['collbench', 'nccl-tests', 'nccl-tests', 'collbench', 'collbench', 'nccl-tests', 'nccl-tests', 'collbench'],
    );
    assert.ok(
      calls.every((x) => x.endsWith('-I 1')),
      calls.join('\n'),
    );
    const oop = c.cells.find((x) => x.mode === 'I1 oop')!;
    // +2.11 us and +1.93 us: missed; 6.70 vs 6.55 (+0.15 us): met by the added-us allowance.
    assert.deepEqual(
      oop.sizes.map((s) => s.met),
      [false, false, true],
    );
    assert.ok(Math.abs(oop.sizes[0]!.addedUs - 2.11) < 1e-9);
    const ip = c.cells.find((x) => x.mode === 'I1 ip')!;
    assert.ok(ip.sizes.every((s) => s.met));
    const text = render(c, base);
    assert.match(text, /met at 4\/6 sizes over 4 round\(s\)/);
    assert.match(text, /missed: sendrecv\/I1 oop\/8 sendrecv\/I1 oop\/16/);
  });

  it('a failing run is reported and its collective x run kind is not run again; nothing left: it stops', () => {
    let n = 0;
    const c = collect(base, () => {
      n++;
      throw new Error('sendrecv_perf: exit 5');
    });
    assert.equal(n, 1);
    assert.deepEqual(c.errors, ['sendrecv_perf: exit 5']);
    assert.ok(c.cells.every((x) => x.error !== null));
  });

  it('the deadline: no round starts that would end after it', () => {
    let now = 0;
    const { run } = fake();
    const c = collect(
      { ...base, deadlineSec: 25 },
      (t, k, a) => {
        now += 5;
        return run(t, k, a);
      },
      () => now,
    );
    assert.equal(c.rounds, 2); // rounds of 10 s: after 20 s, a third would end at 30 s
  });

  it('rows of different sizes are not compared', () => {
    const c = collect(base, (tool) =>
      tool === 'collbench' ? fixture('collbench-sendrecv-I1.txt') : fixture('nccl-tests-all_reduce-zero.txt'),
    );
    assert.match(c.cells[0]!.error!, /row sizes differ/);
  });
});

describe('options', () => {
  it('the same arguments for both tools; the 0-byte row is 2 B of float (nccl-tests cannot sweep from 0)', () => {
    assert.deepEqual(runArgs(base, 'sweep'), ['-b', '8', '-e', '32', '-f', '2', '-n', '20', '-w', '1', '-c', '0']);
    assert.deepEqual(runArgs(base, 'zero').slice(-4), ['-b', '2', '-e', '2']);
  });
  it('bad input is one BadInput naming the option', () => {
    const bad = (argv: string[], re: RegExp): void =>
      assert.throws(
        () => parseOptions(argv, ROOT),
        (e: unknown) => e instanceof BadInput && re.test(e.message),
      );
    bad([], /--nccl-tests DIR is required/);
    bad(['--nccl-tests', '/nonexistent'], /all_reduce_perf does not exist/);
    bad(['--nccl-tests', join(ROOT, 'bin'), '--colls', 'allreduce'], /unknown collective 'allreduce'/);
    bad(['--nccl-tests', join(ROOT, 'bin'), '--runs', 'I2'], /unknown run 'I2'/);
    bad(['--nccl-tests', join(ROOT, 'bin'), '--rounds', '0'], /^--rounds: round count must be an integer ≥ 1, got 0$/);
    bad(['--nccl-tests', join(ROOT, 'bin'), '--min-bytes', '0'], /--min-bytes must be >= 1/);
    bad(['--nccl-tests', join(ROOT, 'bin'), '--bogus'], /bogus/);
  });
});

describe('analyseSize (tools/side-by-side.ts)', () => {
  it('met by the ratio or by the added us, whichever allows more', () => {
    const g = { ratio: 1.02, addedUs: 0.3 };
    assert.equal(analyseSize(8, 8, [100, 101, 102], [99, 100, 100], g, 2).met, true); // 1.01x
    assert.equal(analyseSize(8, 8, [5.2, 5.3, 5.25], [5, 5, 5], g, 2).met, true); // +0.25 us
    assert.equal(analyseSize(8, 8, [5.5, 5.6, 5.4], [5, 5, 5], g, 2).met, false); // +0.5 us, 1.1x
  });
});
