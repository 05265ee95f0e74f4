// Counts above 2^31-1 elements: a uint8 all_reduce of 2^31 + 4096 elements (2 GiB + 4 KiB per buffer) runs and
// checks clean on MPI (split into <= INT_MAX-element MPI calls: Open MPI 4.1 has no big-count calls) and on Gloo
// (its API takes size_t), on 1 and 2 ranks; collectives MPI cannot split are refused before any allocation with
// one line, exit 2. The runs need about 4.3 GB per rank and minutes of CPU, so they run under make stress
// (COLLBENCH_STRESS=1) and when the host has the memory; the refusal runs always.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freemem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseRows, runProgram } from '../helpers/cli.js';

const COUNT = 2 ** 31 + 4096;
const work = mkdtempSync(join(tmpdir(), 'cbh-bigcount-'));
after(() => rmSync(work, { recursive: true, force: true }));

function memAvailable(): number {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : freemem();
}

/** Why the big runs cannot run here, or null. */
function skipBig(ranks: number): string | null {
  if (process.env.COLLBENCH_STRESS !== '1')
    return 'a run with 2^31 + 4096 elements takes minutes and 4.3 GB per rank: make stress runs it';
  const need = ranks * 2.3 * COUNT + 1e9;
  if (memAvailable() < need)
    return `needs ${(need / 2 ** 30).toFixed(1)} GiB available, this host has ${(memAvailable() / 2 ** 30).toFixed(1)} GiB`;
  return null;
}

describe('counts above INT_MAX', () => {
  for (const backend of ['mpi', 'gloo'] as const) {
    for (const np of [1, 2]) {
      it(`${backend}, ${np} rank(s): all_reduce uint8 of ${COUNT} elements, checked, 0 wrong`, (t) => {
        const skip = skipBig(np);
        if (skip) {
          t.skip(skip);
          return;
        }
        const json = join(work, `${backend}-${np}.json`);
        const args = [
          '--backend',
          backend,
          '-b',
          String(COUNT),
          '-e',
          String(COUNT),
          '-d',
          'uint8',
          '-o',
          'max',
          '-c',
          '1',
          '-n',
          '1',
          '-w',
          '0',
          '-J',
          json,
          ...(np > 1 ? ['--np', String(np)] : []),
        ];
        const r = runProgram('all_reduce_perf', args, { timeoutMs: 900_000 });
        assert.equal(r.code, 0, r.stderr);
        assert.doesNotMatch(r.stdout, /Reducing maxBytes/, 'the size was not reduced for memory');
        const rows = parseRows(r.stdout);
        assert.equal(rows.length, 1);
        assert.equal(rows[0]!.count, COUNT);
        assert.equal(rows[0]!.oop.wrong, 0);
        assert.equal(rows[0]!.ip.wrong, 0);
        const doc = JSON.parse(readFileSync(json, 'utf8')) as { status: string; rows: { count: number }[] };
        assert.equal(doc.status, 'complete');
        assert.equal(doc.rows[0]!.count, COUNT);
      });
    }
  }

  it('MPI collectives that are not split (all_gather, alltoall, gather, scatter, reduce_scatter) refuse such counts: one line, exit 2', () => {
    // 2^31 int8 elements per rank: refused after start-up, before any buffer is allocated (so little memory is used)
    const size = String(2 ** 31);
    for (const program of ['all_gather_perf', 'alltoall_perf', 'reduce_scatter_perf']) {
      const r = runProgram(program, ['--backend', 'mpi', '-b', size, '-e', size, '-d', 'int8']);
      assert.equal(r.code, 2, `${program}: ${r.stderr}`);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `^${program}: -e: \\w+ int8 at \\d+ bytes needs a count of \\d+ elements in one call, above 2147483647 on the mpi backend \\(MPI counts are int`,
        ),
      );
    }
  });
});
