// When the timed loop gets a CPU of its own (engine/loop-cpu.ts): one process alone on its host with two or more CPUs, a
// CPU backend, not switched off; the loop takes the last CPU of the process's set.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loopCpuPlan, PIN_LOOP_ENV } from '../../bench/engine/loop-cpu.js';

describe('loopCpuPlan', () => {
  const base = { allowed: [0, 1, 2, 3], localSize: 1, gpu: false, env: {} };
  it('one process, several CPUs, mpi or gloo: the last CPU of its set', () => {
    assert.deepEqual(loopCpuPlan(base), { cpu: 3 });
    assert.deepEqual(loopCpuPlan({ ...base, gpu: false, allowed: [4, 6, 9] }), { cpu: 9 });
  });
  it('nothing moves with one CPU, several processes on the host, a GPU backend or the switch off', () => {
    assert.match((loopCpuPlan({ ...base, allowed: [2] }) as { skip: string }).skip, /may use 1 CPU/);
    assert.match((loopCpuPlan({ ...base, localSize: 2 }) as { skip: string }).skip, /2 processes on this host/);
    assert.match((loopCpuPlan({ ...base, gpu: true }) as { skip: string }).skip, /GPU backend/);
    assert.match((loopCpuPlan({ ...base, env: { [PIN_LOOP_ENV]: '0' } }) as { skip: string }).skip, /=0/);
    assert.deepEqual(loopCpuPlan({ ...base, env: { [PIN_LOOP_ENV]: '1' } }), { cpu: 3 });
  });
});
