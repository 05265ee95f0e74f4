// Where the timed loop runs (docs/performance.md, native/src/addon/loop_cpu.h): on a small machine the process's other
// threads (JavaScript formatting rows, V8's and libuv's workers, the engine's progress threads) were placed on the
// loop's CPU when they woke and took it from a timed half. One process alone on its host, with two or more CPUs to
// itself, keeps them apart: the loop on one CPU, every other thread on the rest. Where that cannot be decided from one
// process (several ranks on the host: the launcher's binding), and for GPUs (the GPU's launcher and NUMA placement
// decide), nothing is moved.
import { ENV } from '../core/environment.js';

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
