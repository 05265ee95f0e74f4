// launch/long-timeout.ts: a limit longer than one Node.js timer holds (2^31 - 1 ms) waits through several timers
// instead of firing at once, as a plain setTimeout does (the -T 2200000 a run used to abort with immediately).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_TIMER_MS, setLongTimeout } from '../../bench/launch/long-timeout.js';

describe('long timers', () => {
  it('a delay beyond one timer does not fire early, and clear() cancels it', async () => {
    let fired = false;
    const t = setLongTimeout(() => {
      fired = true;
    }, MAX_TIMER_MS + 60_000);
    await sleep(100);
    t.clear();
    assert.equal(fired, false);
  });

  it('fires once, after the whole delay, through as many timers as it takes', async () => {
    const t0 = Date.now();
    let firedAt = 0,
      times = 0;
    setLongTimeout(
      () => {
        firedAt = Date.now();
        times++;
      },
      250,
      40,
    ); // 40 ms per timer: 7 timers
    await sleep(600);
    assert.equal(times, 1);
    assert.ok(firedAt - t0 >= 245, `fired after ${firedAt - t0} ms`);
  });
});
