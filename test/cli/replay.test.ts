// `collbench replay` end to end on real engines: a flight-recorder dump replayed on 2 MPI ranks (the job launched
// with the trace's rank count, JSON ops[] matching the steps --dry-run prints, every step checked), tensor- and
// data-parallel groups of 2 on 4 MPI and Gloo ranks (real sub-communicators, a corrupted group step named), an NCCL
// call log on 2 Gloo ranks, param's 8-rank DLRM execution trace shrunk to 2 MPI ranks; a corrupting MPI interposer must
// name the step (exit 7); an inconsistent trace is one line, exit 2, no rank started and nothing written.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ReplayDocument } from '../../bench/report/replay-document.js';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import { repoRoot, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const FIX = join(repoRoot, 'test/fixtures/replay');

describe('collbench replay', () => {
  let dir = '';
  let corrupt = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'collbench-replay-'));
    corrupt = buildFault('corrupt_allreduce', dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const replay = (args: string[], env: Record<string, string> = {}) =>
    runProgram('collbench', ['replay', ...args], { env, timeoutMs: 240_000 });
  /** The -J document, valid against its published schema. */
  const load = (path: string): ReplayDocument => {
    const doc = JSON.parse(readFileSync(path, 'utf8')) as ReplayDocument;
    assert.deepEqual(schemaErrors('collbench-replay.v1', doc), []);
    return doc;
  };
  /** --dry-run's steps: [collective, bytes][]. */
  const dryRun = (trace: string[]): [string, number][] => {
    const r = replay([...trace, '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.split('\n').flatMap((l) => {
      const m = /^\s+\d+\s+(\S+)\s+\S+\s+\d+\s+(\d+)\s/.exec(l);
      return m ? [[m[1]!, Number(m[2])] as [string, number]] : [];
    });
  };

  it("a flight-recorder pickle on 2 MPI ranks: launched at the trace's size, every step timed and checked", () => {
    const trace = [join(FIX, 'flight-recorder-pickle')];
    const steps = dryRun(trace);
    assert.equal(steps.length, 7);
    const json = join(dir, 'fr.json'),
      csv = join(dir, 'fr.csv');
    const r = replay([...trace, '--backend', 'mpi', '-n', '3', '-w', '1', '--gaps', '-J', json, '--csv', csv]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    assert.equal(doc.kind, 'collbench-replay');
    assert.equal(doc.nranks, 2);
    assert.equal(doc.backend.name, 'mpi');
    assert.equal(doc.format, 'flight-recorder');
    assert.deepEqual(
      doc.ops.map((o) => [o.collective, o.bytes]),
      steps,
    );
    for (const o of doc.ops) {
      assert.equal(o.wrong, 0, `step ${o.step}`);
      assert.ok(o.time.medianUs > 0 && o.time.p99Us >= o.time.medianUs, `step ${o.step} times`);
      assert.equal(o.samplesUs.length, 3);
    }
    assert.equal(doc.iteration.samplesUs.length, 3);
    // --gaps: the recorded 2 ms between calls (14 ms an iteration) spent as busy waits, at least.
    assert.ok(doc.iteration.gapUs >= 14_000, `gap ${doc.iteration.gapUs}`);
    assert.ok(doc.iteration.time.medianUs >= doc.iteration.gapUs);
    assert.equal(Math.round(doc.shares.reduce((a, s) => a + s.percent, 0)), 100);
    assert.equal(doc.costliest.length, 5);
    // The table: one row per step, then the totals.
    const rows = r.stdout.split('\n').filter((l) => /^\s+\d+ \S+\s+\S+\s+\d+/.test(l));
    assert.equal(rows.length, 7);
    assert.match(r.stdout, /^# Communication per replayed iteration: [\d.]+ us median/m);
    assert.match(r.stdout, /^# Costliest steps: /m);
    assert.equal(readFileSync(csv, 'utf8').trim().split('\n').length, 8);
  });

  it('an NCCL call log on 2 Gloo ranks', () => {
    const json = join(dir, 'log.json');
    const r = replay([join(FIX, 'nccl-log-merged'), '--backend', 'gloo', '-n', '2', '-w', '1', '-J', json]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    assert.equal(doc.backend.name, 'gloo');
    assert.deepEqual(
      doc.ops.map((o) => o.collective),
      ['all_reduce', 'broadcast', 'all_reduce', 'all_gather', 'reduce_scatter', 'alltoallv', 'all_reduce'],
    );
    assert.ok(doc.ops.every((o) => o.wrong === 0));
  });

  it("param's 8-rank DLRM trace with --np 2 --shrink on MPI (refused without --shrink)", () => {
    const trace = join(FIX, 'chakra-1.0.1-dlrm');
    const no = replay([trace, '--backend', 'mpi', '--np', '2']);
    assert.equal(no.code, 2);
    assert.match(no.stderr, /the trace has 8 ranks, the job 2: run it on 8 \(--np 8\), or --shrink/);
    const json = join(dir, 'dlrm.json');
    const r = replay([trace, '--backend', 'mpi', '--np', '2', '--shrink', '-n', '2', '-w', '1', '-J', json]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    assert.equal(doc.nranks, 2);
    assert.match(doc.notes[0]!, /^shrunk from 8 to 2 ranks/);
    assert.equal(doc.ops.filter((o) => o.collective === 'alltoallv').length, 4);
    assert.ok(doc.ops.every((o) => o.wrong === 0 && o.group.size === 2));
  });

  /** flight-recorder-tp with ranks 2 and 3's tensor-parallel all_reduce moved before the world broadcast. */
  const tpAhead = (): string => {
    const out = join(dir, 'tp-ahead');
    mkdirSync(out, { recursive: true });
    for (const f of readdirSync(join(FIX, 'flight-recorder-tp'))) {
      const d = JSON.parse(readFileSync(join(FIX, 'flight-recorder-tp', f), 'utf8')) as { entries: unknown[] };
      if (/rank_[23]/.test(f)) d.entries.splice(0, 0, d.entries.splice(2, 1)[0]);
      writeFileSync(join(out, f), JSON.stringify(d));
    }
    return out;
  };

  for (const backend of ['mpi', 'gloo']) {
    it(`tensor- and data-parallel groups of 2 on 4 ${backend} ranks: real sub-communicators, checked per group`, () => {
      const json = join(dir, `tp-${backend}.json`);
      const r = replay([
        join(FIX, 'flight-recorder-tp'),
        '--backend',
        backend,
        '--np',
        '4',
        '--oversubscribe',
        '-n',
        '3',
        '-w',
        '1',
        '-J',
        json,
      ]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const doc = load(json);
      assert.equal(doc.nranks, 4);
      assert.deepEqual(
        doc.ops.map((o) => [o.collective, o.group.size, o.group.ranks]),
        [
          ['broadcast', 4, [[0, 1, 2, 3]]],
          [
            'all_gather',
            2,
            [
              [0, 1],
              [2, 3],
            ],
          ],
          [
            'all_reduce',
            2,
            [
              [0, 1],
              [2, 3],
            ],
          ],
          [
            'reduce_scatter',
            2,
            [
              [0, 1],
              [2, 3],
            ],
          ],
          [
            'all_reduce',
            2,
            [
              [0, 2],
              [1, 3],
            ],
          ],
          ['all_reduce', 4, [[0, 1, 2, 3]]],
        ],
      );
      for (const o of doc.ops) assert.equal(o.wrong, 0, `step ${o.step}`);
      // The table: the group column says how many groups of how many ranks run each step.
      assert.match(r.stdout, /^\s+1 all_gather\s+bfloat16\s+512\s+2048\s+2x2\s/m);
    });
  }

  it('a group ahead of the others: ranks outside it move on, as in the job (mpi, 4 ranks)', () => {
    const json = join(dir, 'tp-ahead.json');
    const r = replay([tpAhead(), '--backend', 'mpi', '--np', '4', '--oversubscribe', '-n', '3', '-w', '1', '-J', json]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = load(json);
    assert.deepEqual(doc.ops[0]!.group.ranks, [[2, 3]]);
    assert.equal(doc.ops.length, 8);
    for (const o of doc.ops) assert.equal(o.wrong, 0, `step ${o.step}`);
  });

  it("Gloo's legacy algorithms on a group's all_reduce: one line, exit 2, no rank started", () => {
    const json = join(dir, 'tp-legacy.json');
    const r = replay([join(FIX, 'flight-recorder-tp'), '--backend', 'gloo', '--gloo-algo', 'legacy_ring', '-J', json]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(
      r.stderr,
      /--gloo-algo: legacy_ring runs on the world only .* step 2 \(all_reduce\) runs on groups of 2/,
    );
    assert.equal(existsSync(json), false);
  });

  it('a corrupting library under a group: the check of the group step names it, exit 7', () => {
    // The interposer flips element 100 of every MPI_Allreduce result on the communicator's rank 1: the tensor-parallel
    // groups' rank 1 (global 1 and 3) at step 2, first; control-plane combines are shorter than 100 elements.
    const json = join(dir, 'tp-corrupt.json');
    const r = replay(
      [
        join(FIX, 'flight-recorder-tp'),
        '--backend',
        'mpi',
        '--np',
        '4',
        '--oversubscribe',
        '-n',
        '2',
        '-w',
        '1',
        '-J',
        json,
      ],
      { LD_PRELOAD: corrupt, CORRUPT_RANK: '1', CORRUPT_INDEX: '100' },
    );
    assert.equal(r.code, 7, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^# Wrong result: step 2 \(all_reduce 8192 B, nccl_trace_rank_0\.json entry 2\): rank 1 element 100: expected/m,
    );
    const doc = load(json);
    assert.ok(doc.ops[2]!.wrong! > 0);
    assert.equal(doc.ops[1]!.wrong, 0);
  });

  it('a corrupting library: the wrong step named, exit 7', () => {
    const json = join(dir, 'corrupt.json');
    const r = replay([join(FIX, 'flight-recorder-json'), '--backend', 'mpi', '-n', '2', '-w', '1', '-J', json], {
      LD_PRELOAD: corrupt,
      CORRUPT_RANK: '1',
      CORRUPT_INDEX: '5',
    });
    assert.equal(r.code, 7, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^# Wrong result: step 0 \(all_reduce 48 B, nccl_trace_rank_0\.json entry 0\): rank \d+ element \d+: expected/m,
    );
    const doc = load(json);
    assert.ok(doc.ops[0]!.wrong! > 0);
  });

  it('collbench report overlays two replays of the same steps (Markdown and HTML), and refuses replays of different ones', () => {
    // fr.json (the pickle on MPI) and corrupt.json (the same dump as JSON, on MPI under the corrupting library).
    const r = runProgram('collbench', [
      'report',
      join(dir, 'fr.json'),
      join(dir, 'corrupt.json'),
      '--label',
      'pickle',
      '--label',
      'json',
      '--md',
      '-',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').filter((l) => /^\| \d+ \|/.test(l));
    assert.equal(rows.length, 7);
    assert.match(rows[0]!, /^\| 0 \| all_reduce \| 48 \| [\d.]+ \| [\d.]+ \| [\d.]+x \|$/);
    assert.match(r.stdout, /^\| median \(us\) \| [\d.]+ \| [\d.]+ \| [\d.]+x \|$/m);
    const other = runProgram('collbench', ['report', join(dir, 'fr.json'), join(dir, 'log.json'), '--md', '-']);
    assert.equal(other.code, 2);
    assert.match(other.stderr, /log\.json and .*fr\.json are replays of different steps \(step 0 differs\)/);
    // The HTML page: a bar per step and replay (each step's median alone), the per-step and per-iteration tables.
    const page = join(dir, 'overlay.html');
    const html = runProgram('collbench', [
      'report',
      join(dir, 'fr.json'),
      join(dir, 'corrupt.json'),
      '--label',
      'pickle',
      '--label',
      'json',
      '--html',
      page,
    ]);
    assert.equal(html.code, 0, html.stderr);
    const text = readFileSync(page, 'utf8');
    const bars = [
      ...text.matchAll(/aria-label="place: (\d+) (\w+) (\d+) B; median time \(us, log\): [\d.]+; replay: (\w+)"/g),
    ];
    assert.equal(bars.length, 14, 'a bar per step and replay');
    assert.deepEqual(bars[0]!.slice(1), ['0', 'all_reduce', '48', 'pickle']);
    assert.match(text, /<h2>Per step<\/h2>/);
    assert.match(text, /<td>median \(us\)<\/td><td style="text-align:right">[\d.]+<\/td>/);
    // Replays of different steps: refused for HTML too, nothing written.
    const none = join(dir, 'never.html');
    const differ = runProgram('collbench', ['report', join(dir, 'fr.json'), join(dir, 'log.json'), '--html', none]);
    assert.equal(differ.code, 2);
    assert.match(differ.stderr, /are replays of different steps/);
    assert.equal(existsSync(none), false);
  });

  it('an inconsistent trace: one line, exit 2, nothing started or written', () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad);
    for (const f of readdirSync(join(FIX, 'flight-recorder-json'))) {
      const text = readFileSync(join(FIX, 'flight-recorder-json', f), 'utf8');
      writeFileSync(join(bad, f), f.includes('rank_1') ? text.replace('"nccl:broadcast"', '"nccl:all_reduce"') : text);
    }
    const json = join(dir, 'never.json');
    const r = replay([bad, '--backend', 'mpi', '-J', json]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(
      r.stderr,
      /replay: step 1 differs between ranks: rank 0 nccl:broadcast 1024 x Float .* rank 1 nccl:all_reduce 1024 x Float/,
    );
    assert.equal(existsSync(json), false);
    const none = replay([join(dir, 'nowhere')]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /nowhere: no such file or folder/);
  });
});
