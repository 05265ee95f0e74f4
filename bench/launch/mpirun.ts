// `--np N [--hosts h1,h2:4]`: re-executes this very command under mpirun through child_process
// (arguments as an array, never a shell), adding what this machine needs: --allow-run-as-root as root,
// --oversubscribe when N exceeds the cores, the ob1 PML (UCX probing only slows start-up here).
import { spawn } from 'node:child_process';
import { availableParallelism, constants } from 'node:os';

export interface MpirunPlan {
  command: string;
  args: string[];
}

export function mpirunPlan(opts: {
  np: number; hosts: string | null; program: string[];
  /** The rank's arguments (built from the parsed options: no --np / --hosts). */
  args: readonly string[];
  env?: NodeJS.ProcessEnv; cores?: number; isRoot?: boolean;
}): MpirunPlan {
  const env = opts.env ?? process.env;
  const cores = opts.cores ?? availableParallelism();
  const isRoot = opts.isRoot ?? process.getuid?.() === 0;
  const args: string[] = [];
  if (isRoot) args.push('--allow-run-as-root');
  if (opts.np > cores && !opts.hosts) args.push('--oversubscribe');
  if (!env.OMPI_MCA_pml) args.push('--mca', 'pml', 'ob1');
  args.push('-np', String(opts.np));
  if (opts.hosts) args.push('--host', opts.hosts);
  args.push(...opts.program, ...opts.args);
  return { command: env.COLLBENCH_MPIRUN ?? 'mpirun', args };
}

/**
 * Runs the plan with inherited stdio; resolves to the exit code. SIGINT and SIGTERM to this launcher are
 * forwarded to mpirun (which stops the ranks) and, once it has exited, give 128 + the signal's number (130,
 * 143) as a shell reports an interrupted command, whatever mpirun itself returns.
 */
export function runUnderMpirun(plan: MpirunPlan, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(plan.command, plan.args, { stdio: 'inherit', env });
    let received: NodeJS.Signals | null = null;
    const forward = (sig: NodeJS.Signals) => () => { received ??= sig; child.kill(sig); };
    const onInt = forward('SIGINT'), onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    child.on('error', (e) => reject(e));
    child.on('exit', (code, signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      if (received) resolvePromise(signalStatus(received));
      else resolvePromise(code ?? (signal ? signalStatus(signal) : 1));
    });
  });
}

/** 128 + the signal's number, as a shell reports a process ended by it (SIGINT 130, SIGTERM 143). */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 15);
}
