// A maximum size that cannot fit in host memory is reduced before anything is allocated, with nccl-tests'
// "# Reducing maxBytes to N due to memory limitation", instead of the kernel's OOM killer ending the job. The
// fault is real: the run is started inside a memory cgroup (v1 memory.limit_in_bytes or v2 memory.max) far
// smaller than the buffers -b/-e ask for, and the cgroup's own OOM counter must stay at 0.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { binDir, parseRows } from '../helpers/cli.js';

const LIMIT = 640 * 1024 * 1024;

interface Cgroup {
  dir: string;
  limitFile: string;
  oomKills(): number;
}

/** A fresh memory cgroup with LIMIT bytes, or the reason none can be made here. */
function makeCgroup(name: string): Cgroup | string {
  if (process.getuid?.() !== 0) return 'needs root to create a memory cgroup';
  const v1 = '/sys/fs/cgroup/memory';
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  try {
    if (existsSync(join(v1, 'memory.limit_in_bytes'))) {
      const dir = join(v1, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(LIMIT));
      return {
        dir,
        limitFile: 'memory.limit_in_bytes',
        oomKills: () => Number(/oom_kill (\d+)/.exec(readFileSync(join(dir, 'memory.oom_control'), 'utf8'))?.[1] ?? 0),
      };
    }
    if (readFileSync(join(v2, 'cgroup.subtree_control'), 'utf8').includes('memory')) {
      const dir = join(v2, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'memory.max'), String(LIMIT));
      return {
        dir,
        limitFile: 'memory.max',
        oomKills: () => Number(/oom_kill (\d+)/.exec(readFileSync(join(dir, 'memory.events'), 'utf8'))?.[1] ?? 0),
      };
    }
  } catch (e) {
    return `cannot create a memory cgroup: ${(e as Error).message}`;
  }
  return 'no memory cgroup controller here (neither cgroup v1 memory nor v2 with memory enabled)';
}

const cg = makeCgroup(`collbench-test-${process.pid}`);
const skip = typeof cg === 'string' ? cg : false;

/** Runs the command inside the cgroup: a shell puts itself in it, then execs the program (its children follow). */
function inCgroup(program: string, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const c = cg as Cgroup;
  const r = spawnSync(
    'sh',
    ['-c', `echo $$ > ${join(c.dir, 'cgroup.procs')} && exec "$0" "$@"`, join(binDir, program), ...args],
    { encoding: 'utf8', timeout: 180_000 },
  );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe(`a run whose buffers cannot fit in a ${LIMIT / 2 ** 20} MiB memory cgroup`, { skip }, () => {
  after(() => {
    if (typeof cg !== 'string') rmdirSync(cg.dir);
  });

  const cases: [string, string[], number][] = [
    ['1 MPI rank, -b 1G -e 1G', ['-b', '1G', '-e', '1G', '-n', '1', '-w', '0'], 1],
    ['2 MPI ranks (--np), -b 8 -e 4G -f 64', ['-b', '8', '-e', '4G', '-f', '64', '-n', '1', '-w', '0', '--np', '2'], 2],
    [
      '2 Gloo ranks (--np), -b 1G -e 2G',
      ['-b', '1G', '-e', '2G', '-n', '1', '-w', '0', '--np', '2', '--backend', 'gloo'],
      2,
    ],
  ];
  for (const [what, args, ranks] of cases) {
    it(`${what}: -e reduced with nccl-tests' message, checked rows, no OOM kill`, () => {
      const before = (cg as Cgroup).oomKills();
      const r = inCgroup('all_reduce_perf', args);
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
      const m = /^# Reducing maxBytes to (\d+) due to memory limitation$/m.exec(r.stdout);
      assert.ok(m, r.stdout);
      const reduced = Number(m[1]);
      assert.ok(reduced > 0 && reduced * 2 * ranks < LIMIT, `reduced to ${reduced} for ${ranks} rank(s)`);
      const rows = parseRows(r.stdout);
      assert.ok(
        rows.length > 0 && rows.every((row) => row.size <= reduced),
        `rows: ${rows.map((row) => row.size).join(' ')}`,
      );
      assert.ok(
        rows.every((row) => row.oop.wrong === 0 && row.ip.wrong === 0),
        'checked, #wrong 0',
      );
      assert.match(r.stdout, /^# Out of bounds values : 0 OK$/m);
      assert.equal((cg as Cgroup).oomKills(), before, 'the OOM killer ran inside the cgroup');
    });
  }
});
