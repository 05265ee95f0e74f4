// Where the timed loop runs, and putting it there: one process alone on its host with two or more CPUs keeps its
// other threads off the loop's CPU (they took it from timed halves on small machines); with several ranks on the
// host, or GPUs, the launcher's placement decides and nothing is moved (docs/performance.md).
import { ENV } from '../core/environment.js';
import type { IO } from '../core/io.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import type { Watchdog } from './watchdog.js';

/** COLLBENCH_PIN_LOOP=0 leaves every thread where the system puts it. */
export const PIN_LOOP_ENV = ENV.PIN_LOOP;

export type LoopCpuPlan = { cpu: number } | { skip: string };

/** The loop's CPU: the last of the process's CPUs (CPU 0 tends to take more interrupts), or why nothing is moved. */
export function loopCpuPlan(p: {
  allowed: readonly number[];
  localSize: number;
  gpu: boolean;
  env: NodeJS.ProcessEnv;
}): LoopCpuPlan {
  if (p.env[PIN_LOOP_ENV] === '0') return { skip: `${PIN_LOOP_ENV}=0` };
  if (p.gpu) return { skip: "a GPU backend: placement is the launcher's" };
  if (p.localSize > 1) return { skip: `${p.localSize} processes on this host: placement is the launcher's` };
  if (p.allowed.length < 2) return { skip: `this process may use ${p.allowed.length} CPU` };
  return { cpu: p.allowed[p.allowed.length - 1]! };
}

/** Keeps the process's other threads off the timed loop's CPU where this process may decide it (loopCpuPlan above).
 *  A refusal (a container without sched_setaffinity, another system) is said once; the run goes on unplaced. */
export async function placeLoop(
  native: NativeBackend,
  info: BackendInfo,
  gpu: boolean,
  dog: Watchdog,
  io: IO,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  try {
    const plan = loopCpuPlan({ allowed: native.allowedCpus(), localSize: info.localSize, gpu, env });
    if ('cpu' in plan)
      await dog.watch('placing the timed loop on a CPU of its own', 0, native.isolateLoopAsync(plan.cpu));
  } catch (e) {
    io.err(
      `# Warning: the timed loop shares its CPU with the other threads (${(e as Error).message}); ${PIN_LOOP_ENV}=0 ` +
        'silences this',
    );
  }
}
