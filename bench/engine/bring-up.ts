// A backend brought up as every run does it (runSuite, `collbench workload`): on the preflight's backend and driver,
// init under the watchdog, the timed loop placed on its CPU, the device limits agreed; finalized afterwards, or left at once when
// the process failed and has peers (they would wait for it in a finalize that never ends).
import type { Adjusted, BackendDriver } from '../backends/driver.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { placeLoop } from './loop-cpu.js';
import type { BackendInfo, NativeBackend } from '../native/binding.js';
import type { CheckedHooks } from './context.js';
import { Watchdog } from './watchdog.js';

/** A backend that is up: its driver, module, info and the watchdog every wait goes through. */
export interface BackendUp {
  driver: BackendDriver;
  native: NativeBackend;
  info: BackendInfo;
  dog: Watchdog;
  /** What the job's devices allow (nccl: GPU memory cap, datatypes; CPUs: host memory), agreed on every rank. */
  adjust(): Promise<Adjusted>;
}

/** Whether this process has peers in its job (other processes that may wait for it in a collective). */
export function hasPeers(info: BackendInfo): boolean {
  return ((info as { worldRanks?: number }).worldRanks ?? info.nranks) > (info.localRanks ?? 1);
}

/** Brings the options' backend up as every run does (on the preflight's backend and driver: init, the watchdog),
 *  hands it to `body` and finalizes it afterwards (runSuite and `collbench workload`). Every wait of the bring-up is under the watchdog
 *  (-T, else the default limit). A process that fails leaves at once when it has peers: finalizing would wait for
 *  them in a collective (MPI_Finalize's fence, Gloo's final barrier) while they wait for it in another, and its
 *  reason would never be printed; its non-zero exit ends the job (mpirun, the --np launcher), or their watchdog does. */
export async function withBackend<T>(
  options: ResolvedOptions,
  io: IO,
  hooks: CheckedHooks,
  body: (up: BackendUp) => Promise<T>,
): Promise<T> {
  const env = hooks.env ?? process.env;
  const { record, module: native, driver, passedOver, watchdogMinSec } = hooks.preflight;
  if (passedOver !== null) io.err(passedOver);
  driver.prepare?.(options);
  const dog = new Watchdog(options.timeoutSec, io, native, hooks.onTimeout, watchdogMinSec);
  const info = await dog.watch(
    record.bringUp,
    0,
    driver.init ? driver.init(native, options, dog.limitSec(0)) : Promise.resolve(native.init()),
  );
  let failed = true;
  try {
    const hangView = record.hangView; // the library's own view of a hang (nccl: RAS), printed beside the verdict
    if (hangView) dog.hangView = () => hangView(env, info);
    native.setResultHoldMs(dog.resultHoldMs());
    await placeLoop(native, info, record.gpu, dog, io, env);
    const adjust = async (): Promise<Adjusted> =>
      driver.adjust
        ? dog.watch(
            'the start-up exchange of device and memory limits',
            0,
            Promise.resolve(driver.adjust(options, info, native)),
          )
        : { options, reducedMaxBytes: null };
    const result = await body({ driver, native, info, dog, adjust });
    failed = false;
    return result;
  } finally {
    const leave = failed && hasPeers(info);
    if (!leave) native.finalize();
    driver.shutdown?.({ leave });
  }
}
