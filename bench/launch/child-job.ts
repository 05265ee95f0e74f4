// Runs one combination's benchmark as a child process (child_process.spawn with an argument array, no
// shell) in its own process group, with a time limit: on timeout the whole group (the child, mpirun or
// the Gloo rank launcher, and their ranks) gets SIGTERM, then SIGKILL after a grace period. Mirrors how
// the *_perf --np launchers forward signals to mpirun; a hung child never blocks the other combinations.
import { spawn } from 'node:child_process';
import { setLongTimeout } from './long-timeout.js';

export interface ChildSpec {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  timeoutMs: number; // 0 = no limit
  graceMs?: number; // SIGTERM → SIGKILL (default 5 s)
}

export interface ChildOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  interrupted: boolean; // stopped because compare itself was interrupted
  durationSec: number;
  stdoutTail: string; // last TAIL_BYTES of each stream
  stderrTail: string;
  spawnError: string | null; // the executable could not be started
}

const TAIL_BYTES = 16 * 1024;

function tail(buf: string, chunk: string): string {
  const s = buf + chunk;
  return s.length > TAIL_BYTES ? s.slice(s.length - TAIL_BYTES) : s;
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

/** A running child; `stop()` ends it early (Ctrl-C on compare). */
export interface RunningChild {
  done: Promise<ChildOutcome>;
  stop(): void;
}

export function startChild(spec: ChildSpec): RunningChild {
  const started = process.hrtime.bigint();
  let stdoutTail = '',
    stderrTail = '';
  let timedOut = false,
    interrupted = false;
  const child = spawn(spec.command, spec.args, { env: spec.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdoutTail = tail(stdoutTail, d);
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderrTail = tail(stderrTail, d);
  });
  const graceMs = spec.graceMs ?? 5_000;
  let killTimer: NodeJS.Timeout | null = null;
  const terminate = (): void => {
    killGroup(child.pid, 'SIGTERM');
    killTimer ??= setTimeout(() => killGroup(child.pid, 'SIGKILL'), graceMs);
  };
  const limit =
    spec.timeoutMs > 0
      ? setLongTimeout(() => {
          timedOut = true;
          terminate();
        }, spec.timeoutMs)
      : null;
  const done = new Promise<ChildOutcome>((resolve) => {
    let spawnError: string | null = null;
    child.on('error', (e) => {
      spawnError = e.message;
    });
    child.on('close', (code, signal) => {
      limit?.clear();
      if (killTimer) clearTimeout(killTimer);
      // Whatever the child left behind in its group (ranks of a killed launcher) goes with it.
      if (timedOut || interrupted) killGroup(child.pid, 'SIGKILL');
      resolve({
        exitCode: code,
        signal,
        timedOut,
        interrupted,
        durationSec: Number(process.hrtime.bigint() - started) / 1e9,
        stdoutTail,
        stderrTail,
        spawnError,
      });
    });
  });
  return {
    done,
    stop: () => {
      interrupted = true;
      terminate();
    },
  };
}

/** Lines of a tail without decoration: mpirun's rulers, '#' table lines, Node's stack frames and version line. */
function meaningfulLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => {
      const t = l.trim();
      return (
        t !== '' &&
        !/^[-=*]{5,}$/.test(t) &&
        !l.startsWith('#') &&
        !/^at /.test(t) &&
        !/^Node\.js v\d/.test(t) &&
        !/^[{}[\]]$/.test(t) &&
        !/^\^+$/.test(t) &&
        !/^progress: \d/.test(t)
      ); // a run's periodic progress line
    });
}

/**
 * One line saying why a child failed: collbench's own one-line error (`<program>: …` or
 * `<host>: <backend> failure <CODE> at …`, a rank's before the --np launcher's account of it) when there is one, else
 * the MPI library's own tagged error line, else the last line it printed.
 */
export function failureLine(o: ChildOutcome, timeoutSec: number): string {
  if (o.spawnError) return `could not start: ${o.spawnError}`;
  if (o.timedOut) return `timed out after ${timeoutSec} s (killed)`;
  if (o.interrupted) return 'interrupted';
  const how = o.exitCode !== null ? `exit ${o.exitCode}` : `killed by ${o.signal}`;
  const lines = meaningfulLines(o.stderrTail);
  const last = (re: RegExp): string | undefined => [...lines].reverse().find((l) => re.test(l));
  // Open MPI's own process-tagged errors ("[host:pid] PML ucx cannot be selected"), not its help-aggregation notes;
  // one that names only a source line of PMIx ("PMIX ERROR: ERROR in file …gds_ds21_lock_pthread.c at line 99", a
  // rank torn down during start-up) says less than the error that tore it down, printed before it.
  const mpiError = /^\[[^\]\s]+:\d+\] (?!\d+ more process)(?!Set MCA parameter)/;
  const sourceLineOnly = /ERROR in file \S+ at line \d+$/;
  // a rank's own reason ("all_reduce_perf: rank 1 on host vm: nccl backend unavailable …") says more than the --np
  // launcher's account of its exit printed after it ("collbench: rank 1 exited with status 5; …")
  const launcherSummary = /^collbench: rank \d+ .*(?:exited with status|was killed by signal) /;
  const own = [...lines].reverse().find((l) => /^(?:collbench|[a-z_]+_perf): /.test(l) && !launcherSummary.test(l));
  const pick =
    last(/ failure [A-Z0-9_]+ at /) ??
    own ??
    last(launcherSummary) ??
    last(/^\w*Error\b/) ??
    [...lines].reverse().find((l) => mpiError.test(l) && !sourceLineOnly.test(l)) ??
    last(mpiError) ??
    lines[lines.length - 1] ??
    meaningfulLines(o.stdoutTail).pop();
  return pick ? `${how}: ${pick.trim()}` : how;
}
