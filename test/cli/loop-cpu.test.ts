// The timed loop on a CPU of its own (engine/loop-cpu.ts, native/src/addon/loop_cpu.cc), read from the kernel while a
// real run goes on: one thread (the loop's) on the last CPU of the process's set, every other thread on the rest; with
// COLLBENCH_PIN_LOOP=0, or a process limited to one CPU (taskset), nothing is moved and nothing is said.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { binDir } from '../helpers/cli.js';

const cpusOf = (pid: number, tid: string): string => {
  const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)![1]!;
};

/** Every thread's CPU list once the run is timing (after `settleMs`), then the run is stopped; and its stderr. */
async function threadCpus(
  cmd: string[],
  env: NodeJS.ProcessEnv,
  settleMs = 2500,
): Promise<{ lists: string[]; stderr: string }> {
  const child = spawn(cmd[0]!, cmd.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    await sleep(settleMs);
    // the node process: the child itself, or (taskset) the program it became
    const pid = child.pid!;
    const lists = readdirSync(`/proc/${pid}/task`).map((tid) => cpusOf(pid, tid));
    return { lists, stderr };
  } finally {
    child.kill('SIGKILL');
    await new Promise((res) => child.once('exit', res));
  }
}

const cpuCount = availableParallelism();
const all = cpuCount > 1 ? `0-${cpuCount - 1}` : '0';
const RUN = ['-b', '1M', '-e', '1M', '-n', '100', '-w', '1', '-c', '0', '--duration', '30s', '-T', '60'];

describe(
  'the timed loop on a CPU of its own',
  { skip: cpuCount < 2 ? `this machine has ${cpuCount} CPU` : false },
  () => {
    for (const backend of ['mpi', 'gloo']) {
      it(`${backend}, one process: the loop thread alone on CPU ${cpuCount - 1}, every other thread on the rest`, async () => {
        const { lists, stderr } = await threadCpus([join(binDir, 'all_reduce_perf'), '--backend', backend, ...RUN], {});
        const last = String(cpuCount - 1);
        const rest = cpuCount === 2 ? '0' : `0-${cpuCount - 2}`;
        assert.equal(lists.filter((l) => l === last).length, 1, `${lists.join(' ')}\n${stderr}`);
        assert.equal(lists.filter((l) => l === rest).length, lists.length - 1, lists.join(' '));
        assert.doesNotMatch(stderr, /Warning/);
      });
    }

    it('COLLBENCH_PIN_LOOP=0: every thread keeps the whole set', async () => {
      const { lists, stderr } = await threadCpus([join(binDir, 'all_reduce_perf'), ...RUN], {
        COLLBENCH_PIN_LOOP: '0',
      });
      assert.deepEqual([...new Set(lists)], [all], stderr);
    });

    it('a process limited to one CPU (taskset -c 0): nothing moves, nothing is said', async () => {
      const { lists, stderr } = await threadCpus(['taskset', '-c', '0', join(binDir, 'all_reduce_perf'), ...RUN], {});
      assert.deepEqual([...new Set(lists)], ['0'], stderr);
      assert.doesNotMatch(stderr, /Warning/);
    });
  },
);
