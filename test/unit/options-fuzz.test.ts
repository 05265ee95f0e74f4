// Fuzzing the command line: 10,000 argument vectors built from the real flag table (every letter and long name,
// values of the right kind, of the wrong kind, and garbage) must each end, quickly, in parsed options or in one
// UsageError line naming what is wrong: never another exception (a stack trace for the user), never a hang.
// test/cli/usage-fuzz.test.ts sends a sample through the real binary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCommandLine } from '../../bench/config/run-options.js';
import { UsageError } from '../../bench/core/errors.js';
import { COLLECTIVES } from '../../bench/core/types.js';
import { fuzzSeed, rng, vector } from '../helpers/fuzz-argv.js';

const SEED = fuzzSeed();

test(`10,000 fuzzed command lines: parsed options or one UsageError line, each in well under a second (seed ${SEED})`, () => {
  const r = rng(SEED);
  const outcomes = { run: 0, usage: 0, help: 0, version: 0 };
  for (let i = 0; i < 10_000; i++) {
    const argv = vector(r);
    const program = r() < 0.5 ? 'all_reduce_perf' : 'collbench';
    const words =
      program === 'collbench' && r() < 0.9 ? [COLLECTIVES[Math.floor(r() * COLLECTIVES.length)]!, ...argv] : argv;
    const t0 = performance.now();
    try {
      const p = parseCommandLine(words, program);
      outcomes[p.kind]++;
      if (p.kind === 'run') assert.ok(Object.isFrozen(p.options));
    } catch (e) {
      if (!(e instanceof UsageError)) {
        assert.fail(`#${i} ${program} ${JSON.stringify(words)}: ${e instanceof Error ? e.stack : String(e)}`);
      }
      assert.ok(
        !e.message.includes('\n') && e.message.length > 0,
        `#${i} ${JSON.stringify(words)}: '${e.message}' is not one line`,
      );
      outcomes.usage++;
    }
    const ms = performance.now() - t0;
    assert.ok(ms < 250, `#${i} ${JSON.stringify(words)} took ${ms.toFixed(0)} ms`);
  }
  // The generator must reach every outcome, or it tests less than it claims.
  for (const [k, n] of Object.entries(outcomes))
    assert.ok(n > 0, `no ${k} outcome in 10,000 vectors: ${JSON.stringify(outcomes)}`);
});
