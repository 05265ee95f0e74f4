// `--np N` for the gloo backend without MPI (as torchrun --standalone): N local processes of this command, each
// told its rank, the world size and a private store directory in its environment (read by backends/gloo.ts). Rank 0's
// stdout and every stderr pass through; the exit code is the first failed rank's, as mpirun's.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { signalStatus, STOP_GRACE_MS } from './mpirun.js';
import { ENV } from '../core/environment.js';

export interface LocalRanksPlan {
  np: number;
  command: string;
  args: string[];
}

/** `args`: the rank's arguments, built from the parsed options (no --np / --hosts). */
export function localRanksPlan(opts: { np: number; program: string[]; args: readonly string[] }): LocalRanksPlan {
  const [command, ...rest] = opts.program;
  return { np: opts.np, command: command!, args: [...rest, ...opts.args] };
}

/** The environment of rank `rank` (torchrun's names, plus collbench's store and launcher mark). */
export function localRankEnv(
  base: NodeJS.ProcessEnv,
  rank: number,
  np: number,
  storeDir: string,
  runId: string,
): NodeJS.ProcessEnv {
  return {
    ...base,
    [ENV.GLOO_LAUNCHER]: 'collbench',
    RANK: String(rank),
    WORLD_SIZE: String(np),
    LOCAL_RANK: String(rank),
    LOCAL_WORLD_SIZE: String(np),
    [ENV.GLOO_STORE]: `file:${storeDir}`,
    [ENV.GLOO_RUN_ID]: runId,
  };
}

/** Exit status of a child as a shell reports it: its code, or 128 + the signal number. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signalStatus(signal ?? 'SIGTERM');
}

export interface LocalRanksOptions {
  env?: NodeJS.ProcessEnv;
  /** How long the others may take to fail on their own after a rank ended badly (default 5 s). */
  graceMs?: number;
  err?: (line: string) => void;
}

/**
 * Runs the plan. When a rank ends badly (non-zero exit or a signal), the others normally fail within
 * milliseconds (Gloo sees the closed connections); any still running after the grace period are
 * terminated, so a dead or frozen rank never leaves the job hanging. Resolves to the exit status of the first rank
 * that ended badly on its own (a rank failing at bring-up: its code, not the timeout of a peer left waiting for it;
 * ranks this launcher terminated do not count), else 0.
 */
export function runLocalRanks(plan: LocalRanksPlan, opts: LocalRanksOptions = {}): Promise<number> {
  const env = opts.env ?? process.env;
  const graceMs = opts.graceMs ?? 5_000;
  const err = opts.err ?? ((line: string) => process.stderr.write(line + '\n'));
  const storeDir = mkdtempSync(join(tmpdir(), 'collbench-gloo-np-'));
  const runId = `np-${process.pid}-${Date.now()}`;

  return new Promise((resolvePromise, reject) => {
    const children: ChildProcess[] = [];
    const status: (number | null)[] = new Array<number | null>(plan.np).fill(null);
    const terminatedByUs = new Set<number>();
    let firstFailure: number | null = null;
    let running = plan.np;
    let graceTimer: NodeJS.Timeout | null = null;

    const terminateRest = (signal: NodeJS.Signals) => {
      children.forEach((c, r) => {
        if (status[r] === null && c.exitCode === null && c.signalCode === null) {
          terminatedByUs.add(r);
          c.kill(signal);
        }
      });
    };
    const startGrace = () => {
      if (graceTimer !== null) return;
      graceTimer = setTimeout(() => {
        if (running === 0) return;
        err(`collbench: killing ${running} rank(s) still running ${graceMs / 1000} s after another rank failed`);
        // SIGKILL: it also ends a stopped (SIGSTOP) or wedged process, which SIGTERM would not.
        terminateRest('SIGKILL');
      }, graceMs);
    };
    // SIGINT/SIGTERM to this launcher: every rank gets it; the launcher then exits 130/143 (as mpirun's does). A rank
    // still there after STOP_GRACE_MS, or at a second signal, is killed (SIGKILL).
    let received: NodeJS.Signals | null = null;
    let stopTimer: NodeJS.Timeout | null = null;
    const forward = (sig: NodeJS.Signals) => () => {
      if (received !== null) {
        terminateRest('SIGKILL');
        return;
      }
      received = sig;
      children.forEach((c) => c.kill(sig));
      stopTimer = setTimeout(() => terminateRest('SIGKILL'), STOP_GRACE_MS);
    };
    const onInt = forward('SIGINT'),
      onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);

    const finish = () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      if (graceTimer) clearTimeout(graceTimer);
      if (stopTimer) clearTimeout(stopTimer);
      rmSync(storeDir, { recursive: true, force: true });
      const counted = status.filter((s, r) => s !== null && !terminatedByUs.has(r));
      if (received) resolvePromise(signalStatus(received));
      else resolvePromise(counted.length > 0 ? (firstFailure ?? 0) : 1);
    };

    for (let rank = 0; rank < plan.np; rank++) {
      let child: ChildProcess;
      try {
        child = spawn(plan.command, plan.args, {
          env: localRankEnv(env, rank, plan.np, storeDir, runId),
          stdio: ['ignore', rank === 0 ? 'inherit' : 'ignore', 'inherit'],
        });
      } catch (e) {
        terminateRest('SIGKILL');
        rmSync(storeDir, { recursive: true, force: true });
        reject(e);
        return;
      }
      children.push(child);
      child.on('error', (e) => {
        err(`collbench: cannot start rank ${rank}: ${e.message}`);
        if (status[rank] === null) {
          status[rank] = 127;
          firstFailure ??= 127;
          running--;
        }
        startGrace();
        if (running === 0) finish();
      });
      child.on('exit', (code, signal) => {
        if (status[rank] !== null) return;
        status[rank] = exitStatus(code, signal);
        running--;
        if (signal && !terminatedByUs.has(rank) && !received) {
          err(
            `collbench: rank ${rank} (pid ${child.pid}) was killed by ${signal} on host ${hostname()}; ` +
              'the other ranks are ended; report files keep the rows finished before ("status": "incomplete")',
          );
        }
        if (status[rank] !== 0 && !terminatedByUs.has(rank)) firstFailure ??= status[rank];
        if (status[rank] !== 0) startGrace();
        if (running === 0) finish();
      });
    }
  });
}
