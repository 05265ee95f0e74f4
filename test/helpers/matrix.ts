// The collective matrix shared by the per-backend test files (mpi-collectives, gloo-collectives): which
// arguments one collective's run gets, and the verdict on its output — every checked half #wrong 0, the
// expected rows, N/A exactly where nccl-tests prints it, all roots covered, hypercube's skip line.
import assert from 'node:assert/strict';
import { findCollective } from '../../bench/collectives/index.js';
import { footer, parseRows, type CliResult } from './cli.js';

// The traits come from the descriptors, which test/unit/collectives-def.test.ts holds against native collectives.def.
const traits = (coll: string): { rooted: boolean; loopsOps: boolean; inPlaceChecked: boolean } => {
  const d = findCollective(coll);
  assert.ok(d, `no collective ${coll}`);
  return d;
};

/** Collectives that loop over -o (the reducing ones, and sendrecv as nccl-tests does). */
export const loopsOps = (coll: string): boolean => traits(coll).loopsOps;

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
  const { rooted, inPlaceChecked } = traits(coll);
  const cases = 12 * (loopsOps(coll) ? 6 : 1) * (rooted ? np : 1);
  assert.equal(rows.length, cases * sizeCount, r.stdout);
  for (const row of rows) {
    assert.equal(row.oop.wrong, 0, row.line);
    assert.equal(row.ip.wrong, inPlaceChecked ? 0 : null, row.line);
    assert.ok(row.oop.time > 0 && row.ip.time > 0, row.line);
  }
  if (rooted) assert.deepEqual([...new Set(rows.map((x) => x.root))].sort(), [...Array(np).keys()]);
  assert.equal(footer(r.stdout).outOfBounds, 0);
}
