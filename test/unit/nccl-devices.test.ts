// Several nccl ranks on one GPU (issue #38): the device plan of a process (bench/backends/nccl-devices.ts) under
// NCCL_MULTI_RANK_GPU_ENABLE (NCCL >= 2.30) and per-rank NCCL_HOSTID (any NCCL), the one-line refusal naming both
// ways out, what `collbench info` says of a library, and the rank line that says a GPU is shared.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyPerRankHostId,
  MULTI_RANK_GPU_SINCE,
  multiRankGpuSupport,
  multiRankGpuSwitch,
  planDevices,
  type DevicePlan,
  type DevicePlanInput,
} from '../../bench/backends/nccl-devices.js';
import { firstDevice } from '../../bench/backends/nccl.js';
import { rankLine } from '../../bench/report/reporters/nccl-table.js';

const nccl230 = { version: '2.30.7', versionCode: 23007 };
const nccl228 = { version: '2.28.9', versionCode: 22809 };

/** The plan of local process rank `localRank` driving t x g ranks on a machine with `gpus` GPUs. */
function plan(
  localRank: number,
  tg: [number, number],
  gpus: number,
  lib: typeof nccl230,
  env: NodeJS.ProcessEnv,
  processes?: number,
): DevicePlan | { refusal: string } {
  const input: DevicePlanInput = {
    first: firstDevice(localRank, { nThreads: tg[0], nGpus: tg[1] }, env),
    localRanks: tg[0] * tg[1],
    localProcesses: processes,
    deviceCount: gpus,
    ...lib,
  };
  return planDevices(input, env);
}

/** The ordinals every local rank of `processes` processes ends on (as native does: (first + i) mod the count). */
function ordinals(
  processes: number,
  tg: [number, number],
  gpus: number,
  lib: typeof nccl230,
  env: NodeJS.ProcessEnv,
): number[] {
  const out: number[] = [];
  for (let p = 0; p < processes; p++) {
    const r = plan(p, tg, gpus, lib, env, processes);
    if ('refusal' in r) throw new Error(r.refusal);
    for (let i = 0; i < tg[0] * tg[1]; i++) out.push(r.sharing === 'own' ? r.first + i : (r.first + i) % gpus);
  }
  return out;
}

describe('device plan: several ranks per GPU', () => {
  const on = { NCCL_MULTI_RANK_GPU_ENABLE: '1' };

  it('enough GPUs: one each, nothing shared, no note, whatever the switches', () => {
    assert.deepEqual(plan(1, [1, 1], 2, nccl228, {}), { first: 1, sharing: 'own', note: '' });
    assert.deepEqual(ordinals(2, [1, 2], 4, nccl230, on), [0, 1, 2, 3]);
    assert.deepEqual(plan(0, [1, 1], 1, nccl228, { NCCL_HOSTID: 'h0' }), { first: 0, sharing: 'own', note: '' });
  });

  it('NCCL_MULTI_RANK_GPU_ENABLE=1 on NCCL 2.30: ranks round-robin over the GPUs, across and within processes', () => {
    assert.deepEqual(ordinals(4, [1, 1], 1, nccl230, on), [0, 0, 0, 0]);
    assert.deepEqual(ordinals(3, [1, 1], 2, nccl230, on), [0, 1, 0]);
    assert.deepEqual(ordinals(1, [1, 2], 1, nccl230, on), [0, 0], '-g 2 in one process on one GPU');
    assert.deepEqual(ordinals(2, [2, 2], 3, nccl230, on), [0, 1, 2, 0, 1, 2, 0, 1]);
    const p = plan(3, [1, 1], 2, nccl230, on) as DevicePlan;
    assert.deepEqual(p, {
      first: 1,
      sharing: 'multi-rank-gpu',
      note: 'round-robin over 2 GPUs: NCCL_MULTI_RANK_GPU_ENABLE=1',
    });
  });

  it('the switch is read as NCCL reads an integer parameter: non-zero is on', () => {
    const on = (v: string | undefined): boolean => multiRankGpuSwitch({ NCCL_MULTI_RANK_GPU_ENABLE: v });
    for (const v of ['1', '2', ' 1 ', '-1']) assert.equal(on(v), true, v);
    for (const v of ['0', '', 'yes', 'true', undefined]) assert.equal(on(v), false, String(v));
    assert.ok('refusal' in plan(1, [1, 1], 1, nccl230, { NCCL_MULTI_RANK_GPU_ENABLE: '0' }));
  });

  it('a per-rank NCCL_HOSTID on any NCCL: one rank per process round-robin; several in one process refused', () => {
    assert.deepEqual(ordinals(4, [1, 1], 1, nccl228, { NCCL_HOSTID: 'r' }), [0, 0, 0, 0]);
    assert.deepEqual(plan(2, [1, 1], 1, nccl228, { NCCL_HOSTID: 'rank2' }), {
      first: 0,
      sharing: 'host-id',
      note: 'round-robin over 1 GPU: own node, NCCL_HOSTID=rank2',
    });
    const r = plan(0, [1, 2], 1, nccl228, { NCCL_HOSTID: 'p0' });
    assert.ok('refusal' in r);
    assert.match(
      r.refusal,
      new RegExp(
        '^Invalid number of GPUs: 2 requested but only 1 were found .*share its ' +
          "NCCL_HOSTID 'p0', and NCCL 2\\.28\\.9 refuses two of them on one GPU: one rank per process, or " +
          'NCCL_MULTI_RANK_GPU_ENABLE=1 \\(NCCL 2\\.30 or newer\\)$',
      ),
    );
    assert.deepEqual(ordinals(1, [1, 2], 2, nccl228, { NCCL_HOSTID: 'p0' }), [0, 1], 'fits: no sharing at all');
  });

  it('neither: one line (no newline) naming the devices asked for and both ways out', () => {
    const r = plan(1, [1, 1], 1, nccl228, {});
    assert.ok('refusal' in r);
    assert.equal(
      r.refusal,
      'Invalid number of GPUs: 2 requested but only 1 were found (this process uses devices ' +
        '1..1: local process rank x -t x -g, or NCCL_TESTS_DEVICE); several ranks on one GPU need ' +
        'NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30 or newer) or a distinct NCCL_HOSTID per rank (each its own node to ' +
        'NCCL: the network transport, e.g. NCCL_SOCKET_IFNAME=lo); the loaded NCCL is 2.28.9',
    );
    const old = plan(1, [1, 1], 1, nccl228, { NCCL_MULTI_RANK_GPU_ENABLE: '1' });
    assert.ok('refusal' in old);
    assert.match(old.refusal, /; NCCL_MULTI_RANK_GPU_ENABLE=1 is set but the loaded NCCL is 2\.28\.9$/);
    const onNew = plan(0, [2, 1], 1, nccl230, {});
    assert.ok('refusal' in onNew && !onNew.refusal.includes('\n'));
    assert.match(onNew.refusal, /devices 0\.\.1: .*the loaded NCCL is 2\.30\.7$/);
  });

  it("local process 0 knows its GPU is shared when the host's processes outnumber the GPUs (GPU check, H100)", () => {
    // Measured on one H100: rank 0 of 2 said nothing while rank 1 said "(round-robin over 1 GPU: ...)", and without
    // host ids rank 0 waited for the watchdog after rank 1 was refused.
    assert.deepEqual(plan(0, [1, 1], 1, nccl228, { NCCL_HOSTID: 'r0' }, 2), {
      first: 0,
      sharing: 'host-id',
      note: 'round-robin over 1 GPU: own node, NCCL_HOSTID=r0',
    });
    const alone = plan(0, [1, 1], 1, nccl228, {}, 2);
    assert.ok('refusal' in alone);
    assert.match(
      alone.refusal,
      /^Invalid number of GPUs: 2 requested but only 1 were found \(this process uses devices 0\.\.0: /,
    );
    assert.deepEqual(plan(0, [1, 1], 8, nccl228, {}, 8), { first: 0, sharing: 'own', note: '' }, 'a GPU each');
    const named = plan(0, [1, 1], 1, nccl228, { NCCL_TESTS_DEVICE: '0' }, 8);
    assert.deepEqual(named, { first: 0, sharing: 'own', note: '' }, 'one visible GPU per process, named');
  });

  it('NCCL_TESTS_DEVICE beyond the GPUs: refused without a switch, wrapped with one', () => {
    assert.ok('refusal' in plan(0, [1, 1], 1, nccl228, { NCCL_TESTS_DEVICE: '3' }));
    assert.equal((plan(0, [1, 1], 2, nccl230, { NCCL_TESTS_DEVICE: '3', ...on }) as DevicePlan).first, 1);
  });

  it('no GPU at all is left to the native module (it asks NCCL why)', () => {
    assert.deepEqual(plan(3, [2, 2], 0, nccl228, {}), { first: 12, sharing: 'own', note: '' });
  });

  it('collbench info names what the loaded NCCL supports, from 2.30.0 on', () => {
    assert.equal(MULTI_RANK_GPU_SINCE, 23000);
    assert.equal(
      multiRankGpuSupport('2.30.0', 23000),
      'NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30.0 has it), or a distinct NCCL_HOSTID per rank',
    );
    assert.equal(
      multiRankGpuSupport('2.29.7', 22907),
      'a distinct NCCL_HOSTID per rank (NCCL 2.29.7; NCCL_MULTI_RANK_GPU_ENABLE needs 2.30 or newer)',
    );
  });

  it("the rank line says how its GPU is shared, after the name; unshared lines are nccl-tests' own", () => {
    const r = { rank: 2, group: 0, pid: 42, host: 'gpu1.example', device: 0, bus: '0000:19:00', name: 'NVIDIA H100' };
    assert.equal(rankLine(r), '#  Rank  2 Group  0 Pid     42 on       gpu1 device  0 [0000:19:00] NVIDIA H100');
    assert.equal(
      rankLine({ ...r, note: 'round-robin over 1 GPU: NCCL_MULTI_RANK_GPU_ENABLE=1' }),
      '#  Rank  2 Group  0 Pid     42 on       gpu1 device  0 [0000:19:00] NVIDIA H100 ' +
        '(round-robin over 1 GPU: NCCL_MULTI_RANK_GPU_ENABLE=1)',
    );
  });

  it('COLLBENCH_NCCL_HOSTID_PER_RANK=1: NCCL_HOSTID <host>-rank<N> where NCCL reads it, the GPU shared', () => {
    const saved = process.env.NCCL_HOSTID;
    try {
      assert.equal(applyPerRankHostId({}, 3, 'gpu1.example'), null);
      assert.equal(process.env.NCCL_HOSTID, saved, 'off: nothing set');
      const env: NodeJS.ProcessEnv = { COLLBENCH_NCCL_HOSTID_PER_RANK: '1' };
      assert.equal(applyPerRankHostId(env, 3, 'gpu1.example'), 'gpu1-rank3');
      assert.equal(env.NCCL_HOSTID, 'gpu1-rank3');
      assert.equal(process.env.NCCL_HOSTID, 'gpu1-rank3', 'in the process environment, where NCCL reads it');
      assert.deepEqual(plan(3, [1, 1], 1, nccl228, env), {
        first: 0,
        sharing: 'host-id',
        note: 'round-robin over 1 GPU: own node, NCCL_HOSTID=gpu1-rank3',
      });
    } finally {
      if (saved === undefined) delete process.env.NCCL_HOSTID;
      else process.env.NCCL_HOSTID = saved;
    }
  });
});
