// A fuzzed sample of invalid command lines through the real binary (test/helpers/fuzz-argv.ts): each ends with
// exit 2, one line on stderr naming what is wrong and nothing on stdout (or a clean --help/--version); never a
// stack trace, a signal or a hang.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseCommandLine } from '../../bench/config/run-options.js';
import { fuzzSeed, rng, vector } from '../helpers/fuzz-argv.js';

const SEED = fuzzSeed();
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'all_reduce_perf');

test(
  'a sample through the real binary: exit 2 with one line on stderr and nothing on stdout, or --help/--version',
  { skip: !existsSync(BIN) && 'bin/ not built (make build)' },
  () => {
    const r = rng(SEED + 1);
    let tried = 0;
    while (tried < 40) {
      const argv = vector(r);
      let parsed: string;
      try {
        parsed = parseCommandLine(argv, 'all_reduce_perf').kind;
      } catch {
        parsed = 'usage';
      }
      if (parsed === 'run') continue; // a valid command line would run a benchmark: the in-process test covers it
      if (argv.some((w) => w.includes('\u0000'))) continue; // no process can be given a NUL inside an argument
      tried++;
      const p = spawnSync(BIN, argv, { encoding: 'utf8', timeout: 20_000 });
      assert.equal(p.signal, null, `${JSON.stringify(argv)}: killed by ${p.signal}`);
      if (parsed === 'usage') {
        assert.equal(p.status, 2, `${JSON.stringify(argv)}: ${p.stderr}`);
        assert.equal(p.stdout, '');
        assert.match(p.stderr, /^all_reduce_perf: [^\n]+\n$/, JSON.stringify(argv));
      } else {
        assert.equal(p.status, 0, `${JSON.stringify(argv)}: ${p.stderr}`);
      }
    }
  },
);
