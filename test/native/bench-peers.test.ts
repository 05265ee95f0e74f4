// `make bench-gloo` / `make bench-osu` (scripts/bench-peers.ts, scripts/bench-peers/build-*.sh): a local source that
// is not the pinned peer is refused in one line, exit 2, with nothing half-built left behind; bad options are refused
// the same way; with OSU built in the ignored third_party/, a one-round reduce_scatter side-by-side prints its row.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { moduleBuilt } from '../../bench/native/loader.js';
import { repoRoot } from '../helpers/cli.js';

const scratch = mkdtempSync(join(tmpdir(), 'bench-peers-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): { status: number | null; out: string } {
  const r = spawnSync(command, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
const buildGloo = (env: Record<string, string>) =>
  run(join(repoRoot, 'scripts/bench-peers/build-gloo-benchmark.sh'), [], env);
const peers = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', join(repoRoot, 'scripts/bench-peers.ts'), ...args]);

/** A plain source tree shaped like Gloo's, whose gloo/benchmark/ is not Gloo's at the pinned commit. */
function fakeGlooTree(): string {
  const dir = join(scratch, `gloo-${Math.random().toString(36).slice(2)}`);
  mkdirSync(join(dir, 'gloo/benchmark'), { recursive: true });
  for (const f of ['main.cc', 'options.cc', 'runner.cc']) writeFileSync(join(dir, 'gloo/benchmark', f), `// ${f}\n`);
  return dir;
}

const glooHeaders = existsSync('/usr/include/gloo/config.h');

describe('build-gloo-benchmark.sh', { skip: glooHeaders ? false : 'no Gloo headers (libgloo-dev)' }, () => {
  it('refuses a plain tree whose gloo/benchmark/ differs from the pinned one, leaving nothing behind', () => {
    const out = join(scratch, 'gloo-out-a');
    const r = buildGloo({ GLOO_SRC: fakeGlooTree(), GLOO_BENCH_DIR: out });
    assert.equal(r.status, 2, r.out);
    assert.match(
      r.out,
      /^build-gloo-benchmark: GLOO_SRC=.*: its gloo\/benchmark\/ \(tree [0-9a-f]{40}\) is not Gloo's at 5b14351 \(ca7f1a3a/m,
    );
    assert.deepEqual(
      readdirSync(scratch).filter((f) => f.startsWith('gloo-out-a')),
      [],
    );
  });

  it('refuses a plain tree for any other commit (only the pinned one can be checked in a tree)', () => {
    const r = buildGloo({ GLOO_SRC: fakeGlooTree(), GLOO_COMMIT: 'abc1234', GLOO_BENCH_DIR: join(scratch, 'o-b') });
    assert.equal(r.status, 2, r.out);
    assert.match(r.out, /is a plain tree: only 5b14351 can be checked in one; give a clone for abc1234/);
  });

  it('refuses a directory that is neither a Gloo clone nor a tree with gloo/benchmark/', () => {
    const empty = join(scratch, 'empty');
    mkdirSync(empty, { recursive: true });
    const r = buildGloo({ GLOO_SRC: empty, GLOO_BENCH_DIR: join(scratch, 'o-c') });
    assert.equal(r.status, 2, r.out);
    assert.match(r.out, /neither a Gloo clone holding 5b14351 nor a plain tree with gloo\/benchmark\//);
    assert.equal(existsSync(join(scratch, 'o-c.partial')), false);
  });

  it('one added line in an otherwise pinned tree is caught (the tree id covers every file)', () => {
    const pinned = join(repoRoot, 'third_party/gloo-benchmark-5b14351');
    if (!existsSync(join(pinned, 'gloo/benchmark/main.cc'))) return; // built only where `make bench-gloo` ran
    // The build's copy is Gloo's gloo/benchmark/ at 5b14351 plus the one line the build adds to runner.cc.
    const copy = join(scratch, 'gloo-copy');
    cpSync(join(pinned, 'gloo'), join(copy, 'gloo'), { recursive: true });
    const r = buildGloo({ GLOO_SRC: copy, GLOO_BENCH_DIR: join(scratch, 'o-d') });
    assert.equal(r.status, 2, r.out);
    assert.match(r.out, /is not Gloo's at 5b14351/);
  });
});

describe('build-osu.sh', () => {
  it('refuses a directory that is not an OSU source tree, leaving nothing behind', () => {
    const out = join(scratch, 'osu-out');
    const r = run(join(repoRoot, 'scripts/bench-peers/build-osu.sh'), [], { OSU_SRC: scratch, OSU_DIR: out });
    if (/no mpicc on PATH/.test(r.out)) return; // the check before it: nothing to build with here
    assert.equal(r.status, 2, r.out);
    assert.match(r.out, /^build-osu: OSU_SRC=.* is not an OSU source tree$/m);
    assert.equal(existsSync(`${out}.partial`), false);
  });
});

describe('bench-peers.ts', () => {
  it('refuses an unknown peer and an unknown collective in one line, exit 2', () => {
    let r = peers(['--peer', 'nccl', '--peer-bin', scratch]);
    assert.equal(r.status, 2, r.out);
    assert.equal(r.out.trim(), 'bench-peers: --peer must be gloo or osu');
    r = peers(['--peer', 'osu', '--peer-bin', scratch, '--colls', 'allreduce,scan']);
    assert.equal(r.status, 2, r.out);
    assert.equal(
      r.out.trim(),
      "bench-peers: unknown collective 'scan' (allreduce, bcast, alltoall, allgather, reduce_scatter, " +
        'reduce_scatter_block)',
    );
  });

  const osu = join(repoRoot, 'third_party/osu-micro-benchmarks-7.4/c/mpi/collective/blocking');
  const osuBuilt = existsSync(join(osu, 'osu_reduce_scatter')) && moduleBuilt('mpi');
  it(
    'beside OSU: reduce_scatter at its smallest size moves 16 B per rank in both tools (one row, judged)',
    { skip: osuBuilt ? false : 'OSU not built in third_party/ (make bench-osu) or the mpi module not built' },
    () => {
      const r = peers([
        '--peer',
        'osu',
        '--peer-bin',
        osu,
        '--rounds',
        '2',
        '--sizes',
        '8',
        '--colls',
        'reduce_scatter',
        '--iters',
        '4',
      ]);
      assert.equal(r.status, 0, r.out);
      // The row ends in the goal's verdict for each half, with the bootstrap interval of the time ratio.
      assert.match(r.out, /^\| reduce_scatter \| 32 \| [\d.]+ \(.*\| (met|missed) \([\d.]+–[\d.]+\); (met|missed) \(/m);
      // OSU's own in-place run (-l) stands beside collbench's in-place half, and the MPI thread levels are said.
      assert.match(r.out, /\| OSU avg µs in place \(-l\) \|/);
      assert.match(r.out, /^# MPI thread level: OSU MPI_THREAD_SINGLE .*collbench MPI_THREAD_SERIALIZED$/m);
    },
  );
});
