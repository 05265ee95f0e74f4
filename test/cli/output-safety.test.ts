// Output safety with real faults: an output folder that refuses new files (a read-only bind mount, an
// immutable folder via chattr +i: both refuse root, unlike chmod) or does not exist fails before the run
// starts with one line, also under --np where the launcher checks before any rank starts; an existing
// output file is refused without --force; every rewrite is atomic (no temporary file is left behind).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runProgram } from '../helpers/cli.js';

const work = mkdtempSync(join(tmpdir(), 'cbh-outputs-'));
const RUN = ['--backend', 'mpi', '-b', '8', '-e', '64', '-f', '2', '-n', '2', '-w', '0'];

function sh(cmd: string, args: string[]): { ok: boolean; why: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return { ok: r.status === 0, why: (r.error?.message ?? r.stderr ?? '').trim() };
}

/** A folder that really refuses new files, even to root: a read-only bind mount of itself. */
const roDir = join(work, 'read-only');
let roReady: string | true = 'needs root to bind-mount a folder read-only';
/** A folder marked immutable (chattr +i): creating a file fails with EPERM, also for root. */
const immDir = join(work, 'immutable');
let immReady: string | true = 'needs root and a file system with chattr +i';

before(() => {
  mkdirSync(roDir);
  mkdirSync(immDir);
  if (process.getuid?.() === 0) {
    const bind = sh('mount', ['--bind', roDir, roDir]);
    const ro = bind.ok ? sh('mount', ['-o', 'remount,ro,bind', roDir]) : bind;
    roReady = ro.ok ? true : `cannot make a read-only bind mount: ${ro.why}`;
    const imm = sh('chattr', ['+i', immDir]);
    immReady = imm.ok ? true : `chattr +i failed: ${imm.why}`;
  }
});

after(() => {
  if (roReady === true) sh('umount', [roDir]);
  if (immReady === true) sh('chattr', ['-i', immDir]);
  rmSync(work, { recursive: true, force: true });
});

/** The folder really refuses a new file (the fault is real, not assumed). */
function assertRefuses(dir: string): void {
  assert.throws(() => writeFileSync(join(dir, 'probe'), 'x'), /EROFS|EPERM|EACCES/);
}

describe('output folders that cannot take a file: refused before the run, one line', () => {
  it('read-only bind mount: -J refused with exit 2 before any row (plain run and --np launcher)', (t) => {
    if (roReady !== true) {
      t.skip(roReady);
      return;
    }
    assertRefuses(roDir);
    const out = join(roDir, 'r.json');
    const r = runProgram('all_reduce_perf', [...RUN, '-J', out]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr.trim(),
      `all_reduce_perf: -J: cannot write ${out}: folder ${roDir} is on a read-only file system`,
    );
    assert.equal(r.stdout, '', 'nothing ran: no preamble, no row');
    // --np: the launcher refuses before mpirun; a missing mpirun proves mpirun was never started.
    const np = runProgram('all_reduce_perf', [...RUN, '--np', '2', '--csv', join(roDir, 'r.csv')], {
      env: { COLLBENCH_MPIRUN: join(work, 'no-such-mpirun') },
    });
    assert.equal(np.code, 2, np.stderr);
    assert.match(
      np.stderr.trim(),
      /^all_reduce_perf: --csv: cannot write \S+r\.csv: folder \S+ is on a read-only file system$/,
    );
    const gloo = runProgram('all_reduce_perf', [
      '--backend',
      'gloo',
      '-b',
      '8',
      '-e',
      '8',
      '--np',
      '2',
      '--md',
      join(roDir, 'r.md'),
    ]);
    assert.equal(gloo.code, 2, gloo.stderr);
    assert.equal(gloo.stderr.trim().split('\n').length, 1, gloo.stderr);
    assert.deepEqual(readdirSync(roDir), []);
  });

  it('immutable folder (chattr +i): --html and --junit refused with exit 2', (t) => {
    if (immReady !== true) {
      t.skip(immReady);
      return;
    }
    assertRefuses(immDir);
    for (const flag of ['--html', '--junit']) {
      const out = join(immDir, 'r.out');
      const r = runProgram('all_reduce_perf', [...RUN, flag, out]);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr.trim(),
        `all_reduce_perf: ${flag}: cannot write ${out}: folder ${immDir} is not writable (EPERM)`,
      );
    }
  });

  it('a missing folder and a file used as a folder: refused, one line naming the path', () => {
    const missing = join(work, 'nope', 'r.json');
    const r = runProgram('all_reduce_perf', [...RUN, '-J', missing]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr.trim(),
      `all_reduce_perf: -J: cannot write ${missing}: folder ${join(work, 'nope')} does not exist`,
    );
    const file = join(work, 'plain-file');
    writeFileSync(file, '');
    const r2 = runProgram('all_reduce_perf', [...RUN, '--csv', join(file, 'r.csv')]);
    assert.equal(r2.code, 2);
    assert.equal(
      r2.stderr.trim(),
      `all_reduce_perf: --csv: cannot write ${join(file, 'r.csv')}: ${file} is not a directory`,
    );
  });
});

describe('existing output files: never silently overwritten', () => {
  it('an existing -J file is refused (exit 2, file untouched) unless --force; --force replaces it atomically', () => {
    const dir = mkdtempSync(join(work, 'existing-'));
    const out = join(dir, 'r.json');
    writeFileSync(out, 'earlier result\n');
    const r = runProgram('all_reduce_perf', [...RUN, '-J', out]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr.trim(),
      `all_reduce_perf: -J: ${out} already exists; refusing to overwrite it (give --force to replace it)`,
    );
    assert.equal(r.stdout, '');
    assert.equal(readFileSync(out, 'utf8'), 'earlier result\n');
    const np = runProgram('all_reduce_perf', [...RUN, '--np', '2', '-J', out], {
      env: { COLLBENCH_MPIRUN: join(work, 'no-such-mpirun') },
    });
    assert.equal(np.code, 2, np.stderr);
    assert.match(np.stderr, /already exists; refusing to overwrite it/);

    const forced = runProgram('all_reduce_perf', [...RUN, '-J', out, '--csv', join(dir, 'r.csv'), '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    const doc = JSON.parse(readFileSync(out, 'utf8')) as { status: string; rows: unknown[] };
    assert.equal(doc.status, 'complete');
    assert.equal(doc.rows.length, 4);
    // atomic replacement: only the finished files, no temporary or probe file left in the folder
    assert.deepEqual(readdirSync(dir).sort(), ['r.csv', 'r.json']);
  });

  it("--np 2: the launcher and rank 0 both accept a new file; rank 1 does not check (it writes nothing); a killed writer's temporary file is removed", () => {
    const dir = mkdtempSync(join(work, 'np-'));
    const out = join(dir, 'r.json');
    // What a rank killed (kill -9) between writing and renaming leaves: a temporary file of a process that is gone.
    // The launcher removes it after the job; nothing inside the killed process could.
    const dead = spawnSync('true').pid!;
    writeFileSync(join(dir, `.r.json.${dead}.3.tmp`), '{"partial');
    const r = runProgram('all_reduce_perf', [...RUN, '--np', '2', '-J', out], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(out));
    assert.deepEqual(readdirSync(dir), ['r.json']);
  });

  it('collbench report refuses an existing --md unless --force', () => {
    const dir = mkdtempSync(join(work, 'report-'));
    const src = join(dir, 'run.json');
    const r0 = runProgram('all_reduce_perf', [...RUN, '-J', src]);
    assert.equal(r0.code, 0, r0.stderr);
    const md = join(dir, 'out.md');
    writeFileSync(md, 'keep me\n');
    const r = runProgram('collbench', ['report', src, '--md', md]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr.trim(),
      /^collbench: --md: \S+out\.md already exists; refusing to overwrite it \(give --force to replace it\)$/,
    );
    assert.equal(readFileSync(md, 'utf8'), 'keep me\n');
    const f = runProgram('collbench', ['report', src, '--md', md, '--force']);
    assert.equal(f.code, 0, f.stderr);
    assert.match(readFileSync(md, 'utf8'), /^# collbench report/);
  });
});
