// Runs the native data-pattern self-test (native/test/pattern_selftest.cc, CMake target
// pattern_selftest, built into build/Release/ by `npm run build:native`): minifloat codec, element
// ops, generator vs. folds in three orders, host fill/check. Mirrors nccl-tests' verifiable/main.cu.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const binary = path.join(repoRoot, 'build', 'Release', 'pattern_selftest');

// dtypes x ops x nranks {1,2,3,4,7,8,33,64,1000}, at least one seed each.
const MIN_COMBOS = 12 * 6 * 9;

test('native pattern self-test: exact reductions in any order, codec, fill/check', { timeout: 600_000 }, () => {
  assert.ok(existsSync(binary), `${binary} is missing: the native build (npm run build:native) makes it`);
  const run = spawnSync(binary, [], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(run.error, undefined, `could not run ${binary}: ${String(run.error)}`);
  const output = `${run.stdout}${run.stderr}`;

  const summary = /^(\d+) passed, (\d+) failed/m.exec(run.stdout);
  assert.ok(summary, `no "N passed, N failed" line in the output:\n${output}`);
  const [, passed, failed] = summary;
  assert.equal(Number(failed), 0, `self-test failures:\n${output}`);
  assert.equal(run.status, 0, `exit status ${String(run.status)}:\n${output}`);

  const scope = /(\d+) generator combos .*?(\d+) indices, 3 orders/.exec(run.stdout);
  assert.ok(scope, `no scope line in the output:\n${output}`);
  assert.ok(Number(scope[1]) >= MIN_COMBOS, `only ${scope[1]} generator combos ran`);
  assert.ok(Number(scope[2]) >= 10000, `only ${scope[2]} indices per combo`);
  assert.ok(Number(passed) >= Number(scope[1]), `only ${passed} checks passed`);
});
