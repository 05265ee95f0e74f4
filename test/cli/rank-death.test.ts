// kill -9 of a random rank at a random moment of a --np run (3 or 4 ranks, MPI and Gloo): the other ranks and
// the launcher end within the watchdog limit (-T) + 5 s, collbench names the dead rank and its host, no
// process of the job is left (launcher, mpirun, ranks), and the JSON report written so far parses, matches
// the schema and says "status": "incomplete". COLLBENCH_DEATH_TRIALS sets the trials per backend (make test: 2;
// make stress: 10).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { reportErrors } from '../../bench/report/schema.js';
import { binDir } from '../helpers/cli.js';

const TRIALS = Number(process.env.COLLBENCH_DEATH_TRIALS ?? 2);
const TIMEOUT_S = 10;
const work = mkdtempSync(join(tmpdir(), 'cbh-death-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** pid → parent pid of every process, from /proc. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      map.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* ended meanwhile */
    }
  }
  return map;
}

function descendants(root: number): number[] {
  const pp = parents();
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [pid, ppid] of pp)
      if (ppid === p) {
        out.push(pid);
        walk(pid);
      }
  };
  walk(root);
  return out;
}

/** The rank a process was started as (mpirun's or the gloo launcher's variable), or null for mpirun itself. */
function rankOf(pid: number): number | null {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const v = env.find((e) => e.startsWith('OMPI_COMM_WORLD_RANK=')) ?? env.find((e) => e.startsWith('RANK='));
    return v === undefined ? null : Number(v.slice(v.indexOf('=') + 1));
  } catch {
    return null;
  }
}

/** Processes whose command line names `dir` (launcher, mpirun, ranks: every one gets -J dir/…). */
function jobProcesses(dir: string): string[] {
  return spawnSync('pgrep', ['-af', dir], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.trim() !== '');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Trial {
  np: number;
  victim: number;
  delayMs: number;
  ranksUp: boolean;
  exit: number | null;
  secondsAfterKill: number;
  rows: number | null;
}

async function trial(backend: 'mpi' | 'gloo', n: number): Promise<Trial> {
  const np = 3 + (n % 2);
  const dir = mkdtempSync(join(work, `${backend}-${n}-`));
  const json = join(dir, 'r.json');
  // -N 0: the sweep repeats until the kill, so the kill always lands inside the run
  const child = spawn(
    join(binDir, 'all_reduce_perf'),
    [
      '--backend',
      backend,
      '--np',
      String(np),
      '--oversubscribe',
      '-b',
      '1K',
      '-e',
      '16M',
      '-f',
      '4',
      '-n',
      '5',
      '-w',
      '1',
      '-N',
      '0',
      '-T',
      String(TIMEOUT_S),
      '-J',
      json,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    // every rank started (its pid and rank known), then a random moment: start-up, warm-up or a row
    let ranks = new Map<number, number>();
    for (let waited = 0; ranks.size < np && waited < 60_000; waited += 100) {
      await sleep(100);
      ranks = new Map(
        descendants(child.pid!)
          .map((p) => [rankOf(p), p] as const)
          .filter(([r]) => r !== null) as [number, number][],
      );
    }
    assert.equal(ranks.size, np, `${np} ranks did not start within 60 s: ${stderr}`);
    const delayMs = Math.floor(Math.random() * 4000);
    const victim = Math.floor(Math.random() * np);
    await sleep(delayMs);
    const killedAt = Date.now();
    process.kill(ranks.get(victim)!, 'SIGKILL');
    const timer = setTimeout(() => child.kill('SIGKILL'), (TIMEOUT_S + 30) * 1000);
    const exit = await exited;
    clearTimeout(timer);
    const secondsAfterKill = (Date.now() - killedAt) / 1000;

    const ctx = `${backend} trial ${n}: np ${np}, rank ${victim} killed after ${delayMs} ms; stderr:\n${stderr}`;
    assert.notEqual(exit, 0, ctx);
    assert.ok(
      secondsAfterKill <= TIMEOUT_S + 5,
      `${ctx}\nended ${secondsAfterKill} s after the kill (limit ${TIMEOUT_S} + 5 s)`,
    );
    // collbench's own line names the dead rank and its host
    const named =
      backend === 'mpi'
        ? new RegExp(`^collbench: rank ${victim} on host \\S+ was killed by signal 9 \\(SIGKILL\\)`, 'm')
        : new RegExp(
            `^collbench: rank ${victim} \\(pid ${ranks.get(victim)}\\) was killed by SIGKILL on host \\S+`,
            'm',
          );
    assert.match(stderr, named, ctx);
    // no process of the job left behind (the launcher has exited; give the kernel a moment to reap)
    let left = jobProcesses(dir);
    for (let i = 0; i < 20 && left.length > 0; i++) {
      await sleep(100);
      left = jobProcesses(dir);
    }
    assert.deepEqual(left, [], `${ctx}\nprocesses left: ${left.join('\n')}`);
    // the report so far: valid, and marked incomplete (none exists when the kill came before the first write)
    let rows: number | null = null;
    if (existsSync(json)) {
      const doc = JSON.parse(readFileSync(json, 'utf8')) as { status: string; rows: unknown[] };
      assert.deepEqual(reportErrors(doc), [], ctx);
      assert.equal(doc.status, 'incomplete', ctx);
      rows = doc.rows.length;
    }
    assert.deepEqual(
      readdirSync(dir).filter((f) => f !== 'r.json'),
      [],
      'no temporary file left beside the report',
    );
    return { np, victim, delayMs, ranksUp: true, exit, secondsAfterKill, rows };
  } finally {
    for (const pid of [...descendants(child.pid!), child.pid!]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

for (const backend of ['mpi', 'gloo'] as const) {
  describe(`${backend} --np: kill -9 of a random rank at a random moment (${TRIALS} trials)`, () => {
    it('the others end within -T + 5 s, the dead rank is named, no orphan, the JSON so far is valid and incomplete', async () => {
      const results: Trial[] = [];
      for (let n = 0; n < TRIALS; n++) results.push(await trial(backend, n));
      // the figures for docs/reliability.md
      process.stderr.write(
        `# ${backend}: ${results.length} trials, ${results.length} faults survived; ` +
          results
            .map(
              (r) =>
                `np ${r.np} rank ${r.victim} at ${r.delayMs} ms -> exit ${r.exit} in ${r.secondsAfterKill.toFixed(1)} s, ` +
                `${r.rows ?? 'no'} rows kept`,
            )
            .join('; ') +
          '\n',
      );
    });
  });
}
