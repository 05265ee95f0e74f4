// Row-halves queued ahead (engine/measure.ts HalfQueue, native/src/addon/executor.h): the table still has every row of
// every cycle in order with its data checked, on one and two ranks of MPI and Gloo; and a reader that goes away while
// halves are queued and one is running ends the process with 141 (SIGPIPE's code), not a crash or a hang.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir, footer, parseRows, runProgram } from '../helpers/cli.js';

const SIZES = [8, 64, 512, 4096, 32768, 262144];

function assertSweeps(stdout: string, cycles: number): void {
  const rows = parseRows(stdout);
  assert.deepEqual(
    rows.map((r) => r.size),
    Array.from({ length: cycles }, () => SIZES).flat(),
    stdout,
  );
  for (const r of rows) {
    assert.equal(r.oop.wrong, 0, r.line);
    assert.equal(r.ip.wrong, 0, r.line);
    assert.ok(r.oop.time > 0 && r.ip.time > 0, r.line);
  }
  assert.equal(footer(stdout).outOfBounds, 0);
}

describe('row-halves queued ahead', () => {
  for (const backend of ['mpi', 'gloo']) {
    for (const np of [1, 2]) {
      it(`${backend}, ${np} rank(s), -N 2: every row of both cycles, in order, checked`, () => {
        const r = runProgram('all_reduce_perf', [
          '--backend',
          backend,
          '-b',
          '8',
          '-e',
          '256K',
          '-f',
          '8',
          '-n',
          '5',
          '-w',
          '2',
          '-c',
          '1',
          '-N',
          '2',
          ...(np > 1 ? ['--np', String(np)] : []),
        ]);
        assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
        assertSweeps(r.stdout, 2);
      });
    }
  }

  it('a closed stdout with halves queued and one running: exit 141, no crash', async () => {
    // -N 0: rows of 128 KiB without end, each half short enough (~1 ms) to be queued ahead: the native thread is
    // always inside one when the process exits, and its buffers must outlive it.
    const child = spawn(
      join(binDir, 'all_reduce_perf'),
      ['--backend', 'mpi', '-b', '128K', '-e', '128K', '-n', '200', '-w', '2', '-c', '0', '-N', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    let seen = '';
    child.stdout.on('data', (d: Buffer) => {
      seen += d.toString();
      // The first data row is out: the halves after it are queued or running. The reader goes away.
      if (parseRows(seen).length >= 1) child.stdout.destroy();
    });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('exit', (c, s) => {
        clearTimeout(timer);
        done([c, s]);
      });
    });
    assert.equal(signal, null, stderr);
    assert.equal(code, 141, stderr);
  });
});
