// The GPU check's judge (scripts/gpu-check/expect.sh) run here on tables of this tool's format, so that its reading of
// a table is proven before the lent GPU time is spent on it: the #wrong columns of both halves with and without -I 1's
// four extra columns, -S's timestamp, hypercube's empty redop column, and the skipped-pairs check.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { splitTableRow } from '../../bench/report/reporters/nccl-table.js';
import { parseRows } from '../helpers/cli.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const EXPECT = join(ROOT, 'scripts', 'gpu-check', 'expect.sh');
const fixture = (name: string): string => readFileSync(join(ROOT, 'test', 'fixtures', name), 'utf8');

/** expect.sh's verdict line on `table` (fed through printf as the command's stdout). */
function verdict(table: string, ...checks: string[]): string {
  const r = spawnSync('bash', [EXPECT, ...checks, '--', 'printf', '%s', table], { encoding: 'utf8' });
  return r.stdout.trimEnd().split('\n').pop()!;
}

/** `table` with the in-place #wrong of its first data row set to `wrong` (found by the tests' own parser). */
function wrongInPlace(table: string, wrong: string): string {
  const first = parseRows(table)[0]!;
  const target = 5 + splitTableRow(first.line)!.oop.length + 4; // the in-place #wrong, counted from 1
  const cells = first.line.trimEnd().split(/(\s+)/);
  let field = 0;
  const out = cells.map((c) => (c.trim() === '' ? c : ++field === target ? wrong : c));
  return table.replace(first.line, out.join(''));
}

describe('gpu-check expect.sh reads the table as the tool prints it', () => {
  const cases: [string, string][] = [
    ['-I 1 (4 more columns per half)', 'vs-nccl-tests/collbench-sendrecv-I1.txt'],
    ['-S 1 (a timestamp after the row)', 'golden/reduce-cputime-ts.txt'],
    ['-I 1 and -S 1', 'golden/broadcast-periter.txt'],
    ['plain', 'golden/allreduce-cpu.txt'],
  ];
  for (const [what, name] of cases) {
    it(`${what}: every #wrong 0 passes; an in-place #wrong of 3 fails`, () => {
      const table = fixture(name);
      assert.equal(verdict(table, '-c'), 'expect: all 1 met');
      const bad = wrongInPlace(table, '3');
      assert.equal(parseRows(bad)[0]!.ip.wrong, 3, "the tests' parser sees the planted count");
      assert.equal(verdict(bad, '-c'), 'expect: not met: 1 rows with #wrong > 0');
    });
  }

  it('a table without rows, and a skipped pair that ran anyway, are failures', () => {
    assert.equal(verdict('# nothing\n', '-c'), "expect: not met: no table rows; no '# Out of bounds values : 0 OK'");
    const table = fixture('golden/allreduce-cpu.txt');
    const row = parseRows(table)[0]!;
    const skipped = `# Skipped 1 datatype x op pair that NCCL 2.28.9 refuses (NCCL_INVALID_ARGUMENT): ${row.type} ${row.redop}\n`;
    assert.match(
      verdict(skipped + table, '-k'),
      new RegExp(`^expect: not met: skipped pairs in the table: ${row.type} ${row.redop}`),
    );
  });
});
