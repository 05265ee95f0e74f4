// `make bench-overhead` (scripts/bench-overhead.ts) still runs end to end: collbench, the native loops
// (native_mpi_loop, native_gloo_loop) and the plain loops again (--control) each against the plain loops, 1 and 2
// ranks, MPI and Gloo, at a few tiny sizes, and collbench with the control in the same rounds (--with-control); and `make bench-instructions` (scripts/bench-instructions.ts) counts, under
// valgrind, the instructions per op of both loops.
// Behaviour only: the figures are the benchmark's to print, not this test's to judge.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { moduleBuilt } from '../../bench/native/loader.js';
import { repoRoot } from '../helpers/cli.js';

const built = moduleBuilt('mpi') && moduleBuilt('gloo');

function script(name: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'scripts', name), ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
const benchOverhead = (args: string[]): { status: number | null; out: string } => script('bench-overhead.ts', args);

const TINY = [
  '--rounds',
  '1',
  '--iters',
  '2',
  '--gloo-iters',
  '2',
  '--warmup',
  '1',
  '--max-bytes',
  '64',
  '--colls',
  'all_reduce,sendrecv',
];

describe('bench-overhead', { skip: built ? false : 'the mpi and gloo modules are not built (make build)' }, () => {
  for (const [name, mode] of [
    ['collbench', []],
    ['native', ['--native-loop']],
    ['control', ['--control']],
  ] as const) {
    it(`${name} vs plain: a block per backend x ranks x collective, a row per size, one summary`, () => {
      const r = benchOverhead([...TINY, '--ranks', '1,2', ...mode]);
      assert.equal(r.status, 0, r.out);
      for (const backend of ['mpi', 'gloo']) {
        for (const ranks of ['1 rank', '2 ranks']) {
          for (const coll of ['all_reduce', 'sendrecv']) {
            assert.match(
              r.out,
              new RegExp(
                `^## ${backend} ${ranks} ${coll}: goal met at \\d/4 sizes \\(missed beyond noise: \\d\\); outliers ${name} `,
                'm',
              ),
              r.out,
            );
          }
        }
      }
      assert.match(r.out, /^# summary: goal met at \d+\/32 sizes, missed beyond noise at \d+ /m, r.out);
      for (const size of [8, 16, 32, 64])
        assert.match(r.out, new RegExp(`^ +${size} +\\d+ +[\\d.]+ +[\\d.]+ +[\\d.]+`, 'm'), r.out);
    });
  }

  it('--with-control: the plain loop again in the same rounds, judged alike per cell, per size and in the summary', () => {
    const json = join(mkdtempSync(join(tmpdir(), 'cb-overhead-')), 'overhead.json');
    const r = benchOverhead([...TINY, '--rounds', '2', '--ranks', '1', '--with-control', '--json', json]);
    assert.equal(r.status, 0, r.out);
    for (const backend of ['mpi', 'gloo']) {
      for (const coll of ['all_reduce', 'sendrecv']) {
        assert.match(
          r.out,
          new RegExp(
            `^## ${backend} 1 rank ${coll}: goal met at \\d/4 sizes .*\n#  control, plain again in the same rounds: ` +
              'goal met at \\d/4 sizes \\(missed beyond noise: \\d\\); outliers control \\d+/8, plain \\d+/8 (ok|WORSE)$',
            'm',
          ),
          r.out,
        );
      }
    }
    for (const size of [8, 16, 32, 64])
      assert.match(r.out, new RegExp(`^ +${size} +\\d+ .*  [\\d.]+ (ok|missed \\(noise\\)|MISSED)$`, 'm'), r.out);
    assert.match(
      r.out,
      /^# control \(plain against itself in the same rounds\): goal met at \d+\/16 sizes, missed beyond noise at \d+; outlier share no worse in \d\/4 cells$/m,
      r.out,
    );
    for (const backend of ['mpi', 'gloo'])
      assert.match(r.out, new RegExp(`^#   ${backend} 1 rank: \\d+/8 \\(\\d+\\) \\| \\d+/8 \\(\\d+\\)$`, 'm'), r.out);
    // Both judged tools come from the same rounds: as many samples each, per size.
    const doc = JSON.parse(readFileSync(json, 'utf8')) as {
      cells: { sizes: { aUs: number[]; bUs: number[] }[]; control: { sizes: { aUs: number[]; bUs: number[] }[] } }[];
      summary: { control: { sizes: number } };
    };
    assert.equal(doc.summary.control.sizes, 16);
    for (const cell of doc.cells) {
      cell.sizes.forEach((s, i) => {
        assert.equal(s.aUs.length, 2);
        assert.deepEqual(cell.control.sizes[i]!.bUs, s.bUs);
        assert.equal(cell.control.sizes[i]!.aUs.length, 2);
      });
    }
  });

  it('a bad option: one line naming it, exit 2', () => {
    const withBoth = benchOverhead(['--control', '--with-control']);
    assert.equal(withBoth.status, 2, withBoth.out);
    assert.match(withBoth.out, /^bench-overhead: --with-control: already an A\/A run with --control; give one$/m);
    const delay = benchOverhead(['--start-delay-ms', 'soon']);
    assert.equal(delay.status, 2, delay.out);
    assert.match(delay.out, /^bench-overhead: --start-delay-ms: expected an integer >= 0, got 'soon'$/m);
    const r = benchOverhead(['--rounds', '0']);
    assert.equal(r.status, 2, r.out);
    assert.match(r.out, /^bench-overhead: --rounds: expected an integer >= 1, got '0'$/m);
    const both = benchOverhead(['--control', '--native-loop']);
    assert.equal(both.status, 2, both.out);
    assert.match(both.out, /^bench-overhead: --thread-level-cost, --native-loop and --control: give one$/m);
    const noImb = benchOverhead(['--imb', '/nonexistent/mpi-benchmarks']);
    assert.equal(noImb.status, 2, noImb.out);
    assert.match(noImb.out, /^bench-overhead: --imb: \/nonexistent\/mpi-benchmarks does not exist$/m);
    const imbWithoutMpi = benchOverhead(['--imb', repoRoot, '--backends', 'gloo']);
    assert.equal(imbWithoutMpi.status, 2, imbWithoutMpi.out);
    assert.match(imbWithoutMpi.out, /^bench-overhead: --imb: runs beside the MPI cells at 2 ranks;/m);
  });
});

describe(
  'bench-instructions',
  {
    skip: !built
      ? 'the mpi and gloo modules are not built (make build)'
      : spawnSync('valgrind', ['--version']).error
        ? 'valgrind is not installed (make deps installs it)'
        : false,
  },
  () => {
    it('a row per backend x collective: plain and collbench instructions per op, added, ratio; JSON alike', () => {
      const json = join(mkdtempSync(join(tmpdir(), 'cb-instr-')), 'instr.json');
      const r = script('bench-instructions.ts', [
        '--colls',
        'all_reduce,sendrecv',
        '--low',
        '100',
        '--high',
        '300',
        '--json',
        json,
      ]);
      assert.equal(r.status, 0, r.out);
      for (const backend of ['mpi', 'gloo']) {
        for (const coll of ['all_reduce', 'sendrecv'])
          assert.match(r.out, new RegExp(`^${backend} +${coll} +\\d+ +\\d+ +[+-]\\d+ +\\d+\\.\\d{3}$`, 'm'), r.out);
      }
      const doc = JSON.parse(readFileSync(json, 'utf8')) as { rows: { plain: number; collbench: number }[] };
      assert.equal(doc.rows.length, 4);
      // Each loop makes at least one library call per op: the counts are per op, not per run.
      for (const row of doc.rows)
        assert.ok(row.plain > 10 && row.plain < 100_000 && row.collbench > 10 && row.collbench < 100_000, r.out);
    });

    it('a bad option: one line naming it, exit 2', () => {
      const r = script('bench-instructions.ts', ['--low', '10', '--high', '10']);
      assert.equal(r.status, 2, r.out);
      assert.match(r.out, /^bench-instructions: --high: expected a whole number >= 11, got '10'$/m);
      const coll = script('bench-instructions.ts', ['--colls', 'reduce']);
      assert.equal(coll.status, 2, coll.out);
      assert.match(coll.out, /^bench-instructions: --colls: unknown collective 'reduce'/m);
    });
  },
);
