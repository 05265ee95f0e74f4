// `--np N [--hosts h1,h2:4]`: this command again under mpirun (an argument array, never a shell) with what this
// machine needs (--allow-run-as-root, --oversubscribe when asked, the ob1 PML); a dead rank named in one line from
// mpirun's notice; a signal stops mpirun, then its process group, then SIGKILLs it.
import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';
import { availableParallelism, constants } from 'node:os';
import { ENV } from '../core/environment.js';
import { EXIT } from '../core/errors.js';
import { daemonFailure, daemonFailureLine, MpirunNotices } from './mpirun-notices.js';

export interface MpirunPlan {
  command: string;
  args: string[];
  /** --hosts as given (messages name them), or null: this host only. */
  hosts?: string | null;
}

export function mpirunPlan(opts: {
  np: number;
  hosts: string | null;
  program: string[];
  /** The rank's arguments (built from the parsed options: no --np / --hosts). */
  args: readonly string[];
  /** --oversubscribe was given: more ranks than cores (or than --hosts' slots) are meant. */
  oversubscribe?: boolean;
  env?: NodeJS.ProcessEnv;
  isRoot?: boolean;
}): MpirunPlan {
  const env = opts.env ?? process.env;
  const isRoot = opts.isRoot ?? process.getuid?.() === 0;
  const args: string[] = [];
  if (isRoot) args.push('--allow-run-as-root');
  if (opts.oversubscribe) args.push('--oversubscribe');
  if (!env.OMPI_MCA_pml) args.push('--mca', 'pml', 'ob1');
  args.push('-np', String(opts.np));
  if (opts.hosts) args.push('--host', opts.hosts);
  args.push(...opts.program, ...opts.args);
  return { command: env[ENV.MPIRUN] ?? 'mpirun', args, hosts: opts.hosts };
}

/** Open MPI's MCA setting that lets mpirun place more ranks on a host than it has slots (env or --mca). */
const OVERSUBSCRIBE_ENV = 'OMPI_MCA_rmaps_base_oversubscribe';
const oversubscribeAllowed = (env: NodeJS.ProcessEnv): boolean =>
  /^(1|true|yes|on)$/i.test(env[OVERSUBSCRIBE_ENV] ?? '');

/**
 * Whether `--np` ranks on this host alone (no --hosts) fit its cores, as Open MPI's own default counts slots. Returns
 * the one line that refuses it and names the fixes, or null (also with --oversubscribe or the MCA setting). Without
 * it, --np 1000 on 2 cores started 1000 ranks and left the machine unusable for minutes.
 */
export function coresRefusal(
  np: number,
  oversubscribe: boolean,
  env: NodeJS.ProcessEnv = process.env,
  cores: number = availableParallelism(),
): string | null {
  if (np <= cores || oversubscribe || oversubscribeAllowed(env)) return null;
  return (
    `--np ${np}: this host has ${cores} core${cores === 1 ? '' : 's'}; add --oversubscribe to start ${np} ranks on it ` +
    'anyway (slow, timings meaningless), or spread them with --hosts h1:N,h2:N'
  );
}

/**
 * Whether `--np` fits the slots `--hosts` gives, counted as Open MPI counts them: host:N gives N, a plain name 1, a
 * name listed again adds its slots. Returns the one line that says it does not and how to fix it, or null (also
 * when the user allows oversubscription: OMPI_MCA_rmaps_base_oversubscribe). mpirun's own refusal is 25 lines.
 */
export function slotsRefusal(np: number, hosts: string, env: NodeJS.ProcessEnv = process.env): string | null {
  if (oversubscribeAllowed(env)) return null;
  const slots = new Map<string, number>();
  for (const entry of hosts.split(',')) {
    const [name, n] = entry.split(':');
    slots.set(name!, (slots.get(name!) ?? 0) + (n === undefined ? 1 : Number(n)));
  }
  const total = [...slots.values()].reduce((a, b) => a + b, 0);
  if (np <= total) return null;
  const each = Math.ceil(np / slots.size);
  const fix = [...slots].map(([name, n]) => `${name}:${Math.max(n, each)}`).join(',');
  return (
    `--np ${np}: --hosts ${hosts} gives ${total} slot${total === 1 ? '' : 's'} (a host without :N counts as 1, as ` +
    `Open MPI counts it); give each host its ranks, e.g. --hosts ${fix} (or --oversubscribe to mean it)`
  );
}

/** More ranks than this host's cores (no --hosts) or than --hosts' slots, without --oversubscribe: the line that
 *  refuses it, or null. The --np launcher checks it, and so do the commands that start runs (compare, accept) before
 *  their first one. */
export function crowdingRefusal(
  o: { np: number | null; hosts: string | null; oversubscribe: boolean },
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  if (o.np === null || o.oversubscribe) return null;
  return o.hosts === null ? coresRefusal(o.np, false, env) : slotsRefusal(o.np, o.hosts, env);
}

/** What `--np N` starts a backend's ranks with: mpirun, or N local processes of this command (no MPI). */
export type RankLauncher = 'mpirun' | 'local-processes';

/**
 * What `--np N [--hosts …]` cannot start, as the line that refuses it and the flag it names, or null: ranks of a
 * backend that carries its own data (`launcher` 'local-processes': gloo; mpirun only starts them) on several hosts
 * without a store they all reach; more ranks than cores or slots without --oversubscribe (crowdingRefusal).
 */
export function jobRefusal(
  o: { np: number | null; hosts: string | null; oversubscribe: boolean; glooStore: string | null },
  launcher: RankLauncher,
  env: NodeJS.ProcessEnv = process.env,
): { line: string; flag: string } | null {
  if (launcher === 'local-processes' && o.hosts !== null && o.glooStore === null)
    return {
      line:
        '--hosts: gloo ranks on several hosts need --gloo-store (file:DIR on a shared file system, or ' +
        'redis://HOST:PORT)',
      flag: '--hosts',
    };
  const crowded = crowdingRefusal(o, env);
  return crowded === null ? null : { line: crowded, flag: '--np' };
}

/** What mpirun's notices say about the rank that ended the job (Open MPI 4.1's wording), or null. */
export interface RankDeath {
  rank: number;
  host: string | null;
  pid: number | null;
  signal: number | null;
  exitCode: number | null;
}

/** Reads mpirun's own notice of a failed rank from its stderr text (the rank, host, pid and signal or exit code). */
export function parseMpirunDeath(text: string): RankDeath | null {
  // "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
  const sig = /process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)/.exec(text);
  if (sig) {
    const pid = Number(sig[2]);
    return { rank: Number(sig[1]), pid: pid > 0 ? pid : null, host: sig[3]!, signal: Number(sig[4]), exitCode: null };
  }
  // "mpirun detected that one or more processes exited with non-zero status … Process name: [[29542,1],1] Exit code: 3"
  const code = /Process name:\s+\[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(\d+)/.exec(text);
  if (code) return { rank: Number(code[1]), pid: null, host: null, signal: null, exitCode: Number(code[2]) };
  return null;
}

/** collbench's one line about a rank that ended the job, from mpirun's notice. */
export function deathLine(d: RankDeath): string {
  const where = `rank ${d.rank}${d.pid !== null ? ` (pid ${d.pid})` : ''}${d.host !== null ? ` on host ${d.host}` : ''}`;
  const name = d.signal !== null ? Object.entries(constants.signals).find(([, n]) => n === d.signal)?.[0] : undefined;
  const how =
    d.signal !== null
      ? `was killed by signal ${d.signal}${name ? ` (${name})` : ''}`
      : `exited with status ${d.exitCode}`;
  return `collbench: ${where} ${how}; mpirun ended the other ranks; report files keep the rows finished before ("status": "incomplete")`;
}

/** How long mpirun has to end its ranks after a forwarded signal before its process group gets it, and the group
 *  after that before SIGKILL: mpirun ignores signals while it is still starting ranks. */
export const STOP_GRACE_MS = 2000;

/**
 * Runs the plan; resolves to the exit code. mpirun gets a process group of its own (its ranks stay in it), so that a
 * stop reaches every process it started: SIGINT and SIGTERM to this launcher are forwarded to mpirun (which stops the
 * ranks); if mpirun is still there `graceMs` later its whole group gets the signal, and `graceMs` after that SIGKILL
 * (a second signal goes straight to SIGKILL; SIGHUP is forwarded alike). Once it has exited, the launcher gives 128 +
 * the signal's number (130, 143) as a shell reports an interrupted command, whatever mpirun itself returns.
 * mpirun's stdout passes through this launcher: a reader that went away (`| head -1`) stops the job and gives 141, as
 * SIGPIPE ends a single process. Its stderr passes through as it comes, less the banners collbench explains in one
 * line of its own (a rank that died or failed: rank, host, signal or status; daemons that could not start: exit 5);
 * a rank that exited 7 ended its run with a failing verdict, which is not a crash.
 */
export function runUnderMpirun(
  plan: MpirunPlan,
  env: NodeJS.ProcessEnv = process.env,
  err: (line: string) => void = (line) => {
    process.stderr.write(line + '\n');
  },
  graceMs = STOP_GRACE_MS,
): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(plan.command, plan.args, { stdio: ['ignore', 'pipe', 'pipe'], env, detached: true });
    const group = child.pid;
    /** Why the launcher stopped the job (a signal it received, or SIGPIPE: its stdout reader went away). */
    let received: NodeJS.Signals | null = null;
    let exited = false;
    const timers: NodeJS.Timeout[] = [];
    const signalGroup = (sig: NodeJS.Signals) => {
      if (group === undefined) return;
      try {
        process.kill(-group, sig);
      } catch {
        /* ESRCH: the group is gone already */
      }
    };
    const killGroup = () => {
      timers.forEach(clearTimeout);
      signalGroup('SIGKILL');
    };
    const stop = (reason: NodeJS.Signals, sig: NodeJS.Signals) => {
      if (received !== null) {
        killGroup();
        return;
      }
      received = reason;
      child.kill(sig);
      timers.push(
        setTimeout(() => signalGroup(sig), graceMs),
        setTimeout(killGroup, 2 * graceMs),
      );
    };
    const forward = (sig: NodeJS.Signals) => () => stop(sig, sig);
    const onInt = forward('SIGINT'),
      onTerm = forward('SIGTERM'),
      onHup = forward('SIGHUP');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    process.on('SIGHUP', onHup); // its own group no longer gets the terminal's hang-up
    // The launcher itself ends (an uncaught error, an exit call): nothing it started may outlive it.
    const onExit = () => {
      if (!exited) signalGroup('SIGKILL');
    };
    process.on('exit', onExit);
    // Rank 0's progress bar (on a terminal) and its table rows reach this launcher through two pipes, so a row may
    // come before the bar's erasure: a bar line still open on the terminal is erased before stdout text is written.
    let barOpen = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (received === 'SIGPIPE') return;
      if (barOpen && process.stderr.isTTY) {
        writeAll(2, Buffer.from('\r\u001b[K'));
        barOpen = false;
      }
      if (!writeAll(1, chunk)) stop('SIGPIPE', 'SIGTERM');
    });
    // After a broken stdout the ranks' deaths are the launcher's doing: nothing more to say.
    const notices = new MpirunNotices((text) => {
      if (received === 'SIGPIPE' || text === '') return;
      process.stderr.write(text);
      barOpen = !text.endsWith('\n');
    });
    child.stderr!.on('data', (chunk: Buffer) => notices.push(chunk.toString('utf8')));
    let status: number | null = null;
    child.on('error', (e) => {
      process.off('exit', onExit);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      exited = true;
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
      process.off('exit', onExit);
      // Stopped by a signal: whatever mpirun left behind in its group (a rank still starting) goes too.
      if (received) killGroup();
      status = received ? signalStatus(received) : (code ?? (signal ? signalStatus(signal) : 1));
    });
    // 'close': the process has exited and its output is drained, so the notices have been read. Its pipes may stay
    // open in a rank that outlived it: that rank is killed above, so 'close' comes.
    child.on('close', () => {
      notices.end();
      resolvePromise(
        received || status === 0 ? (status ?? 1) : explainFailure(status ?? 1, notices, plan.hosts ?? null, err),
      );
    });
  });
}

/** collbench's line for a job mpirun ended with `status` (its banners were held back); the exit code to give. */
function explainFailure(
  status: number,
  notices: MpirunNotices,
  hosts: string | null,
  err: (line: string) => void,
): number {
  const death = parseMpirunDeath(notices.text);
  if (death) {
    // 7: a rank finished its run with a failing verdict (on a host where the verdict folder is not): no crash
    if (death.exitCode !== EXIT.WRONG_RESULTS) err(deathLine(death));
    return status;
  }
  const daemons = daemonFailure(notices.text);
  if (daemons) {
    err(daemonFailureLine(hosts, daemons.reason));
    return EXIT.ENVIRONMENT;
  }
  if (notices.held) err(`collbench: mpirun ended the job with status ${status}`);
  return status;
}

/** Writes all of `data` to `fd`; false when its reader has gone (EPIPE). */
function writeAll(fd: number, data: Buffer): boolean {
  for (let off = 0; off < data.length;) {
    try {
      off += writeSync(fd, data, off);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return false;
      if (code !== 'EAGAIN') throw e;
    }
  }
  return true;
}

/** 128 + the signal's number, as a shell reports a process ended by it (SIGINT 130, SIGTERM 143). */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 15);
}
