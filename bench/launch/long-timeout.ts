// A timer for limits a user gives in seconds. A Node.js timer holds at most 2^31 - 1 ms (about 24.8 days) and fires at
// once for a longer delay (TimeoutOverflowWarning); -T takes any int, as nccl-tests does, so a long limit waits through
// as many full timers as it needs instead.

/** The longest delay one Node.js timer holds. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fire` after `ms` milliseconds, however long; `clear()` cancels it. `chunkMs`: the longest single timer. */
export function setLongTimeout(fire: () => void, ms: number, chunkMs = MAX_TIMER_MS): { clear(): void } {
  const due = Date.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const left = due - Date.now();
    timer = setTimeout(left > chunkMs ? arm : fire, Math.max(0, Math.min(left, chunkMs)));
  };
  arm();
  return {
    clear: () => {
      clearTimeout(timer);
    },
  };
}
