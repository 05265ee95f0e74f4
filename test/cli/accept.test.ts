// `collbench accept` end to end on 2 MPI ranks, with real faults: a baseline saved from a clean run; unchanged reruns
// against it pass (twice: no false alarm); a PMPI interposer (LD_PRELOAD, built here with mpicc) that makes rank 1
// sleep 1.5 ms after every MPI_Allreduce fails the thresholds and the baseline, and the verdict names rank 1 and its
// host; one that corrupts element 100 (the fault-injection test's; 100, not 0, so that collbench's own 2-element
// allreduce of the wrong counts stays intact) fails zero-#wrong. Bad input (profile, baseline,
// world) is one line and exit 2 with nothing written. The profile is cpu-smoke's all_reduce checks with its thresholds
// (50 iterations per size instead of 200, so that the stalled runs stay short).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { schemaErrors } from '../../bench/report/json-schemas.js';
import type { AcceptDocument } from '../../bench/accept/verdict.js';
import { binDir, runProgram } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const PROFILE = `kind: collbench-profile
version: 1
name: accept-test
defaults: {iters: 50, warmupIters: 5, stepFactor: 8, attempts: {pass: 2, of: 3}}
checks:
  - {name: all_reduce latency, collective: all_reduce, minBytes: 8, maxBytes: 4K, maxTimeUs: 25, wrong: 0}
  - {name: all_reduce bandwidth, collective: all_reduce, minBytes: 64K, maxBytes: 1M, minBusBwGBps: 0.6, wrong: 0}
`;

describe('collbench accept on 2 MPI ranks', () => {
  let dir = '';
  let profile = '';
  let baseline = '';
  const libs = { late: '', corrupt: '' };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'collbench-accept-'));
    profile = join(dir, 'profile.yaml');
    baseline = join(dir, 'baseline.json');
    writeFileSync(profile, PROFILE);
    for (const k of ['late', 'corrupt'] as const) {
      libs[k] = buildFault(`${k}_allreduce`, dir);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const accept = (args: string[], env: Record<string, string> = {}) =>
    runProgram('collbench', ['accept', '--profile', profile, '--np', '2', ...args], { env, timeoutMs: 240_000 });
  const verdict = (path: string): AcceptDocument => {
    const doc = JSON.parse(readFileSync(path, 'utf8')) as AcceptDocument;
    assert.deepEqual(schemaErrors('collbench-accept.v1', doc), []);
    return doc;
  };
  const rows = (d: AcceptDocument, check: string) => d.checks.filter((c) => c.check === check);

  it('a clean run passes and saves a baseline of per-iteration samples', () => {
    const json = join(dir, 'clean.json');
    const r = accept(['--save-baseline', baseline, '-J', json, '--junit', join(dir, 'clean.xml')]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^# verdict: PASS \(4 of 4 checks passed\)$/m);
    const d = verdict(json);
    assert.equal(d.verdict, 'pass');
    assert.deepEqual(d.world?.nranks, 2);
    assert.deepEqual(
      d.checks.map((c) => `${c.collective} ${c.check}`),
      ['all_reduce maxTime', 'all_reduce wrong', 'all_reduce minBusBw', 'all_reduce wrong'],
    );
    const b = JSON.parse(readFileSync(baseline, 'utf8')) as {
      checks: { sizes: { sizeBytes: number; samplesUs: number[] }[]; runs: number }[];
    };
    assert.deepEqual(schemaErrors('collbench-baseline.v1', b), []);
    assert.deepEqual(
      b.checks[0]!.sizes.map((s) => s.sizeBytes),
      [8, 64, 512, 4096],
    );
    for (const c of b.checks) for (const s of c.sizes) assert.equal(s.samplesUs.length, 50 * c.runs);
    const xml = readFileSync(join(dir, 'clean.xml'), 'utf8');
    assert.equal(xml.match(/<testcase /g)!.length, 4);
    assert.doesNotMatch(xml, /<failure/);
  });

  for (const n of [1, 2]) {
    it(`unchanged rerun ${n} against the baseline passes (no false alarm)`, () => {
      const json = join(dir, `rerun${n}.json`);
      const r = accept(['--baseline', baseline, '-J', json]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const d = verdict(json);
      assert.equal(d.verdict, 'pass');
      const b = rows(d, 'baseline');
      assert.equal(b.length, 2);
      for (const row of b) {
        assert.equal(row.status, 'pass');
        assert.equal(row.baseline!.sizes.filter((s) => s.change === 'regression').length, 0);
      }
      assert.equal(d.baseline!.comparisons, 6);
    });
  }

  it('a rank stalling 1.5 ms after every MPI_Allreduce fails, and the verdict names it', () => {
    const json = join(dir, 'late.json');
    const xml = join(dir, 'late.xml');
    const r = accept(['--baseline', baseline, '-J', json, '--junit', xml], {
      LD_PRELOAD: libs.late,
      LATE_RANK: '1',
      LATE_US: '1500',
      OMPI_MCA_mpi_yield_when_idle: '1',
    });
    assert.equal(r.code, 7, r.stdout + r.stderr);
    const d = verdict(json);
    assert.equal(d.verdict, 'fail');
    assert.equal(d.exitCode, 7);
    for (const row of rows(d, 'baseline')) {
      assert.equal(row.status, 'fail');
      assert.ok(row.measured! > 10, `ratio ${row.measured}`);
    }
    assert.equal(rows(d, 'maxTime')[0]!.status, 'fail');
    assert.ok(rows(d, 'maxTime')[0]!.measured! >= 1000);
    assert.equal(rows(d, 'minBusBw')[0]!.status, 'fail');
    for (const row of rows(d, 'wrong')) assert.equal(row.status, 'pass');
    const late = d.checks.find((c) => c.late)?.late;
    assert.ok(late, 'no late rank named');
    assert.equal(late.rank, 1);
    assert.equal(late.host, d.world!.host);
    assert.match(r.stdout, /^# all_reduce latency: rank 1 on \S+ arrived late in \d+ of \d+ row-halves/m);
    assert.match(r.stdout, /^# verdict: FAIL/m);
    const junit = readFileSync(xml, 'utf8');
    assert.ok(junit.match(/<failure /g)!.length >= 4);
    assert.match(junit, /rank 1 on /);
  });

  it('one corrupted element per MPI_Allreduce fails zero #wrong', () => {
    const json = join(dir, 'corrupt.json');
    const r = accept(['--baseline', baseline, '-J', json], {
      LD_PRELOAD: libs.corrupt,
      CORRUPT_RANK: '0',
      CORRUPT_INDEX: '100',
    });
    assert.equal(r.code, 7, r.stdout + r.stderr);
    const d = verdict(json);
    assert.equal(d.verdict, 'fail');
    for (const row of rows(d, 'wrong')) {
      assert.equal(row.status, 'fail');
      assert.ok(row.measured! > 0);
    }
  });

  it('Ctrl-C stops the running check: exit 130, verdict "error", no baseline saved', async () => {
    const json = join(dir, 'int.json');
    const saved = join(dir, 'int-baseline.json');
    const child = spawn(
      join(binDir, 'collbench'),
      ['accept', '--profile', profile, '--np', '2', '-J', json, '--save-baseline', saved],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let sent = false;
    const code = await new Promise<number | null>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (!sent && /run 1\/3: thresholds held/.test(stderr)) sent = child.kill('SIGINT'); // the next run has started
      });
      child.on('close', (c) => resolve(c));
    });
    assert.equal(code, 130, stderr);
    const d = verdict(json);
    assert.equal(d.verdict, 'error');
    assert.deepEqual(d.errors, ['interrupted']);
    assert.equal(existsSync(saved), false);
  });

  it('a run that cannot start (no NCCL here): verdict "error", the run\'s exit code, later checks not run', (t) => {
    const json = join(dir, 'nccl.json');
    const r = runProgram('collbench', ['accept', '--profile', profile, '--backend', 'nccl', '-J', json]);
    if (r.code === 0 || r.code === 7) return t.skip('NCCL and a GPU are usable here');
    assert.equal(r.code, 5, r.stdout + r.stderr);
    const d = verdict(json);
    assert.equal(d.verdict, 'error');
    assert.equal(d.exitCode, 5);
    assert.match(d.checks[0]!.error!, /^exit 5: collbench: nccl backend unavailable/);
    assert.equal(
      d.checks.find((c) => c.id === 'all_reduce bandwidth')!.error,
      "not run: check 'all_reduce latency' could not run",
    );
    assert.equal((r.stderr.match(/: error \(/g) ?? []).length, 1, 'one run attempted');
  });

  describe('bad input: one line, exit 2, nothing written', () => {
    const refused = (args: string[], re: RegExp, env: Record<string, string> = {}) => {
      const out = join(dir, 'never.json');
      const r = runProgram('collbench', ['accept', ...args, '-J', out], { env });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, re);
      assert.equal(existsSync(out), false);
    };

    it('an invalid profile names the file, line and key', () => {
      const bad = join(dir, 'bad.yaml');
      writeFileSync(bad, PROFILE.replace('minBusBwGBps: 0.6', 'minBusBwGBps: fast'));
      refused(
        ['--profile', bad, '--np', '2'],
        /^collbench: .*bad\.yaml:7: checks\[1\]\.minBusBwGBps: must be number$/m,
      );
    });

    it('an existing output file without --force', () => {
      const existing = join(dir, 'existing.xml');
      writeFileSync(existing, 'keep me');
      refused(
        ['--profile', profile, '--np', '2', '--junit', existing],
        /existing\.xml already exists; refusing to overwrite it \(give --force to replace it\)$/m,
      );
      assert.equal(readFileSync(existing, 'utf8'), 'keep me');
    });

    it('a baseline of another world size, size set, kind or schema version', () => {
      refused(
        ['--profile', profile, '--np', '3', '--oversubscribe', '--baseline', baseline],
        /baseline\.json was taken on 2 ranks; --np asks for 3$/m,
      );
      const other = join(dir, 'other.yaml');
      writeFileSync(other, PROFILE.replace('maxBytes: 1M', 'maxBytes: 4M'));
      refused(
        ['--profile', other, '--np', '2', '--baseline', baseline],
        /check 'all_reduce bandwidth': sizes 64K, 512K in the baseline, 64K, 512K, 4M in the profile$/m,
      );
      const b = JSON.parse(readFileSync(baseline, 'utf8')) as Record<string, unknown>;
      const v2 = join(dir, 'v2.json');
      writeFileSync(v2, JSON.stringify({ ...b, schemaVersion: 2 }));
      refused(
        ['--profile', profile, '--baseline', v2],
        /v2\.json has baseline schema version 2; this collbench reads version 1/m,
      );
      refused(
        ['--profile', profile, '--baseline', join(dir, 'clean.json')],
        /clean\.json is not a collbench accept baseline \(kind "collbench-accept"/m,
      );
    });
  });
});
