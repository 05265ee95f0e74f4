// The collective matrix shared by the per-backend test files (mpi-collectives, gloo-collectives): which
// arguments one collective's run gets, and the verdict on its output — every checked half #wrong 0, the
// expected rows, N/A exactly where nccl-tests prints it, all roots covered, hypercube's skip line.
import assert from 'node:assert/strict';
import { footer, parseRows, type CliResult } from './cli.js';

const REDUCING = new Set(['all_reduce', 'reduce_scatter', 'reduce']);
const ROOTED = new Set(['broadcast', 'reduce', 'gather', 'scatter']);
const IN_PLACE_NA = new Set(['alltoall', 'alltoallv', 'sendrecv']);

/** Collectives that loop over -o (the reducing ones, and sendrecv as nccl-tests does). */
export const loopsOps = (coll: string): boolean => REDUCING.has(coll) || coll === 'sendrecv';

/** All datatypes, all roots, and all ops where the collective loops over them. */
export function matrixArgs(coll: string): string[] {
  return ['-d', 'all', '-r', '-1', ...(loopsOps(coll) ? ['-o', 'all'] : [])];
}

export function assertCleanMatrixRun(r: CliResult, coll: string, np: number, sizeCount: number): void {
  const whole = `exit ${r.code}\n${r.stderr}\n${r.stdout}`;
  assert.equal(r.code, 0, whole);
  if (coll === 'hypercube' && (np & (np - 1)) !== 0) {
    assert.match(r.stdout, new RegExp(`nRanks ${np} is not a power of 2, skipping`));
    assert.equal(parseRows(r.stdout).length, 0);
    return;
  }
  assert.equal((r.stdout.match(/^#  Rank +\d+ Group/gm) ?? []).length, np, 'one rank line per rank');
  const rows = parseRows(r.stdout);
  const cases = 12 * (loopsOps(coll) ? 6 : 1) * (ROOTED.has(coll) ? np : 1);
  assert.equal(rows.length, cases * sizeCount, r.stdout);
  for (const row of rows) {
    assert.equal(row.oop.wrong, 0, row.line);
    assert.equal(row.ip.wrong, IN_PLACE_NA.has(coll) ? null : 0, row.line);
    assert.ok(row.oop.time > 0 && row.ip.time > 0, row.line);
  }
  if (ROOTED.has(coll)) assert.deepEqual([...new Set(rows.map((x) => x.root))].sort(), [...Array(np).keys()]);
  assert.equal(footer(r.stdout).outOfBounds, 0);
}
