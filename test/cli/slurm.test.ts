// A real one-machine Slurm (Debian's slurm-wlm: slurmctld + slurmd, authenticated by its own munged), set
// up in a temp directory with a generated slurm.conf on free ports, started and stopped by this file: the
// ranks of `srun -n 2 all_reduce_perf` form one world (mpi through Slurm's PMIx, gloo from SLURM_PROCID),
// an srun task without PMIx is refused in one line, and a batch job's node list is read as scontrol reads
// it. Skips, saying why, when slurm-wlm is not installed, not root, or the daemons do not come up.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { binDir, parseRows, repoRoot } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';

const DAEMONS = ['munged', 'slurmctld', 'slurmd', 'srun', 'sbatch', 'sinfo', 'scancel', 'squeue', 'scontrol'];

/** The program's path on PATH or in /usr/sbin (where Debian puts the daemons), else null. */
function findProgram(program: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter((d) => d !== ''), '/usr/sbin', '/usr/bin'];
  return dirs.map((d) => join(d, program)).find((p) => existsSync(p)) ?? null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Cluster {
  dir: string;
  conf: string;
  env: NodeJS.ProcessEnv;
  daemons: { name: string; child: ChildProcess; log: string }[];
}

function tail(path: string, lines = 5): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join(' | ');
  } catch {
    return '(no log)';
  }
}

/** Every process that carries this cluster's SLURM_CONF (daemons, slurmstepd, srun, tasks): read from /proc. */
function processesOf(conf: string): number[] {
  const needle = Buffer.from(`SLURM_CONF=${conf}\0`);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`).includes(needle)) pids.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

function startDaemon(cluster: Cluster, name: string, args: string[]): void {
  const log = join(cluster.dir, `${name}.out`);
  const fd = openSync(log, 'w');
  const child = spawn(findProgram(name)!, args, { env: cluster.env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.on('error', () => {
    /* reported by the readiness wait through the log */
  });
  cluster.daemons.push({ name, child, log });
}

function stopDaemon(d: Cluster['daemons'][number]): Promise<void> {
  return new Promise((resolveStop) => {
    if (d.child.exitCode !== null || d.child.signalCode !== null) {
      resolveStop();
      return;
    }
    const kill = setTimeout(() => d.child.kill('SIGKILL'), 10_000);
    d.child.once('exit', () => {
      clearTimeout(kill);
      resolveStop();
    });
    d.child.kill('SIGTERM');
  });
}

async function stopCluster(cluster: Cluster): Promise<void> {
  // Jobs first (so no slurmstepd is left behind), then the daemons in reverse order of start.
  spawnSync('scancel', ['--full', '--quiet', '--user', 'root'], { env: cluster.env, timeout: 10_000 });
  for (let i = 0; i < 50; i++) {
    const q = spawnSync('squeue', ['-h', '-o', '%i'], { env: cluster.env, encoding: 'utf8', timeout: 10_000 });
    if (q.status !== 0 || q.stdout.trim() === '') break;
    await sleep(200);
  }
  for (const d of [...cluster.daemons].reverse()) await stopDaemon(d);
  for (const pid of processesOf(cluster.conf)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone meanwhile */
    }
  }
}

/** Starts munged, slurmctld and slurmd; the reason it cannot, as a string. */
async function startCluster(): Promise<Cluster | string> {
  if (process.getuid?.() !== 0) return 'not root: slurmd runs job steps as their user and needs root to start them';
  const missing = DAEMONS.filter((p) => findProgram(p) === null);
  if (missing.length > 0) return `slurm-wlm is not installed (missing ${missing.join(', ')}): apt install slurm-wlm`;
  const dir = mkdtempSync(join(tmpdir(), 'collbench-slurm-'));
  const conf = join(dir, 'slurm.conf');
  const cluster: Cluster = { dir, conf, env: { ...process.env, SLURM_CONF: conf }, daemons: [] };
  for (const sub of ['munge', 'state', 'spool']) mkdirSync(join(dir, sub), { mode: 0o711 });
  // munged checks that its socket directory is reachable by all (x) and its key private to its owner.
  const key = join(dir, 'munge', 'munge.key');
  writeFileSync(key, randomBytes(1024), { mode: 0o600 });
  const socket = join(dir, 'munge', 'munge.socket');
  // A node as slurmd sees this machine (slurmd -C), without its memory figure (which moves).
  const probe = spawnSync(findProgram('slurmd')!, ['-C'], { encoding: 'utf8', env: cluster.env, timeout: 10_000 });
  const cpus = /CPUs=(\d+)/.exec(probe.stdout ?? '')?.[1];
  if (!cpus) {
    rmSync(dir, { recursive: true, force: true });
    return `slurmd -C does not describe this machine: ${(probe.stderr ?? '').trim().split('\n')[0]}`;
  }
  const node = hostname();
  const [ctldPort, slurmdPort] = [await freePort(), await freePort()];
  writeFileSync(
    conf,
    [
      'ClusterName=collbench',
      `SlurmctldHost=${node}(127.0.0.1)`,
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${slurmdPort}`,
      'SlurmUser=root',
      'SlurmdUser=root',
      'AuthType=auth/munge',
      'CredType=cred/munge',
      `AuthInfo=socket=${socket}`,
      `StateSaveLocation=${join(dir, 'state')}`,
      `SlurmdSpoolDir=${join(dir, 'spool')}`,
      `SlurmctldPidFile=${join(dir, 'slurmctld.pid')}`,
      `SlurmdPidFile=${join(dir, 'slurmd.pid')}`,
      'ProctrackType=proctrack/linuxproc', // no cgroup hierarchy needed
      'TaskPlugin=task/none',
      'JobAcctGatherType=jobacct_gather/none',
      'AccountingStorageType=accounting_storage/none',
      'JobCompType=jobcomp/none',
      'SchedulerType=sched/builtin',
      'SelectType=select/cons_tres',
      'SelectTypeParameters=CR_Core',
      'MpiDefault=pmix', // as a cluster for MPI jobs sets it: plain `srun` gives each task a PMIx server
      'ReturnToService=2',
      'MailProg=/bin/true',
      `NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN`,
      `PartitionName=collbench Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES`,
      '',
    ].join('\n'),
  );
  startDaemon(cluster, 'munged', [
    '-F',
    '--force',
    `--socket=${socket}`,
    `--key-file=${key}`,
    `--pid-file=${join(dir, 'munge', 'munged.pid')}`,
    `--log-file=${join(dir, 'munge', 'munged.log')}`,
    `--seed-file=${join(dir, 'munge', 'munged.seed')}`,
  ]);
  for (let i = 0; i < 50 && !existsSync(socket); i++) await sleep(100);
  if (!existsSync(socket)) {
    await stopCluster(cluster);
    rmSync(dir, { recursive: true, force: true });
    return `munged did not start: ${tail(cluster.daemons[0].log)}`;
  }
  startDaemon(cluster, 'slurmctld', ['-D', '-f', conf]);
  startDaemon(cluster, 'slurmd', ['-D', '-f', conf]);
  for (let i = 0; i < 150; i++) {
    const s = spawnSync('sinfo', ['-h', '-N', '-o', '%T'], { env: cluster.env, encoding: 'utf8', timeout: 10_000 });
    if (s.status === 0 && s.stdout.trim() === 'idle') return cluster;
    if (cluster.daemons.some((d) => d.child.exitCode !== null)) break;
    await sleep(200);
  }
  const why = cluster.daemons.map((d) => `${d.name}: ${tail(d.log, 3)}`).join('; ');
  await stopCluster(cluster);
  rmSync(dir, { recursive: true, force: true });
  return `the one-machine Slurm did not come up within 30 s (${why})`;
}

const started = await startCluster();
const cluster = typeof started === 'string' ? null : started;
const skip = typeof started === 'string' ? started : false;
if (skip) console.log(`# skipping the Slurm tests: ${skip}`);

after(async () => {
  if (!cluster) return;
  await stopCluster(cluster);
  const left = processesOf(cluster.conf);
  rmSync(cluster.dir, { recursive: true, force: true });
  assert.deepEqual(left, [], 'processes of the test cluster left after it stopped');
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function slurm(command: string, args: string[], timeoutMs = 120_000): Run {
  const r = spawnSync(command, args, { encoding: 'utf8', env: cluster!.env, cwd: cluster!.dir, timeout: timeoutMs });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** One nccl-tests table from `ranks` ranks, every size from 8 B by ×4 up to `maxBytes`, no wrong element. */
function assertOneTable(out: string, ranks: number, maxBytes: number, what: string): void {
  assert.equal(out.match(/^# Collective test starting/gm)?.length, 1, `${what}: one table\n${out}`);
  const rankLines = [...out.matchAll(/^#\s+Rank\s+(\d+) .* on\s+(\S+) device/gm)];
  assert.deepEqual(
    rankLines.map((m) => Number(m[1])),
    [...Array(ranks).keys()],
    `${what}: rank lines\n${out}`,
  );
  const rows = parseRows(out);
  const sizes: number[] = [];
  for (let s = 8; s <= maxBytes; s *= 4) sizes.push(s);
  assert.deepEqual(
    rows.map((r) => r.size),
    sizes,
    `${what}: sizes`,
  );
  for (const r of rows) {
    assert.equal(r.oop.wrong, 0, r.line);
    assert.equal(r.ip.wrong, 0, r.line);
    assert.ok(r.oop.time > 0 && r.ip.time > 0, r.line);
  }
  assert.match(out, /^# Out of bounds values : 0 OK$/m);
}

const program = join(binDir, 'all_reduce_perf');

describe('collbench under a real one-machine Slurm', { skip }, () => {
  it("srun -n 2 all_reduce_perf: one world of 2 ranks through Slurm's PMIx (mpi backend)", () => {
    const r = slurm('srun', ['-n', '2', program, '-b', '8', '-e', '1M', '-f', '4']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend mpi /m);
    assertOneTable(r.stdout, 2, 1 << 20, 'srun mpi');
    assert.doesNotMatch(r.stdout + r.stderr, /not connected/);
  });
  it('srun -n 2 --backend gloo --gloo-store file:DIR: ranks from SLURM_PROCID, no PMI needed (--mpi=none)', () => {
    const store = join(cluster!.dir, 'gloo-store');
    mkdirSync(store);
    const r = slurm('srun', [
      '--mpi=none',
      '-n',
      '2',
      program,
      '--backend',
      'gloo',
      '--gloo-store',
      `file:${store}`,
      '-b',
      '8',
      '-e',
      '1M',
      '-f',
      '4',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend gloo /m);
    assertOneTable(r.stdout, 2, 1 << 20, 'srun gloo');
  });
  it('srun --mpi=none without --backend: mpi gives way to gloo, whose store defaults to a directory of the step', () => {
    const before = new Set(readdirSync(tmpdir()).filter((f) => f.startsWith('collbench-gloo-slurm-')));
    const r = slurm('srun', ['--mpi=none', '-n', '2', program, '-b', '8', '-e', '1M', '-f', '4']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend gloo /m);
    assertOneTable(r.stdout, 2, 1 << 20, 'srun default backend');
    const left = readdirSync(tmpdir()).filter((f) => f.startsWith('collbench-gloo-slurm-') && !before.has(f));
    assert.deepEqual(left, [], "rank 0 removes the step's store directory");
  });
  it('srun --mpi=none with the mpi backend: refused in one line per task, exit 5, before MPI_Init aborts', () => {
    const r = slurm('srun', ['--mpi=none', '-n', '2', program, '--backend', 'mpi', '-b', '8', '-e', '8']);
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.stdout, '');
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('all_reduce_perf: '));
    assert.equal(lines.length, 2, r.stderr);
    for (const l of lines)
      assert.match(
        l,
        /--backend mpi: srun started this task \(job \d+, step 0, 2 tasks\) without a PMIx server.*srun --mpi=pmix/,
      );
    assert.doesNotMatch(r.stderr, /MPI_Init|direct launched/);
    // collbench info there: mpi not usable, with the same reason; the default is gloo; nothing aborts.
    const info = slurm('srun', ['--mpi=none', '-n', '1', join(binDir, 'collbench'), 'info']);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /default here: gloo/);
    assert.match(info.stdout, /^ {2}mpi .*not usable here\n\s+why: --backend mpi: srun started this task/m);
  });
  it("sbatch: the allocation's node list as scontrol show hostnames gives it, and srun inside the batch script", () => {
    const probe = join(cluster!.dir, 'hosts.mjs');
    const slurmJs = join(repoRoot, 'dist', 'launch', 'slurm.js');
    writeFileSync(
      probe,
      `import { slurmAllocationHosts } from ${JSON.stringify(slurmJs)};\n` +
        'console.log(`hosts ${JSON.stringify(slurmAllocationHosts())}`);\n',
    );
    const script = join(cluster!.dir, 'job.sh');
    writeFileSync(
      script,
      [
        '#!/bin/bash',
        '#SBATCH -n 2',
        'set -e',
        'echo "nodelist $SLURM_JOB_NODELIST"',
        `"${process.execPath}" "${probe}"`,
        'echo "scontrol $(scontrol show hostnames "$SLURM_JOB_NODELIST" | tr "\\n" " ")"',
        `srun "${program}" -b 8 -e 64K -f 4`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const out = join(cluster!.dir, 'job.out');
    const r = slurm('sbatch', ['--wait', '-o', out, script]);
    const text = existsSync(out) ? readFileSync(out, 'utf8') : '';
    assert.equal(r.code, 0, `${r.stderr}\n${text}`);
    const hosts = JSON.parse(/^hosts (.*)$/m.exec(text)![1]) as string[];
    const real = /^scontrol (.*)$/m.exec(text)![1].trim().split(' ');
    assert.deepEqual(hosts, real);
    assert.deepEqual(hosts, [hostname()]);
    assert.equal(/^nodelist (.*)$/m.exec(text)![1], hostname());
    assertOneTable(text, 2, 64 * 1024, 'sbatch + srun');
  });
});
