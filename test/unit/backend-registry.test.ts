// The backend registry: one record per backend in core/types.ts's order of preference, the one
// selectBackend() that every command calls, and its messages when a module is missing.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BACKENDS, builtBackends, missingBackendMessage, selectBackend } from '../../bench/backends/registry.js';
import { BackendUnavailableError } from '../../bench/core/errors.js';
import { BACKEND_NAMES } from '../../bench/core/types.js';

describe('backend registry', () => {
  it('has one record per backend name, in the order of preference', () => {
    assert.deepEqual(
      BACKENDS.map((b) => b.name),
      [...BACKEND_NAMES],
    );
  });
  it('gives every run a fresh driver (no state shared between runs)', () => {
    for (const b of BACKENDS) assert.notEqual(b.createDriver(), b.createDriver(), b.name);
  });
  it('with no module built: nothing is built, and the message says how to get the backend asked for', () => {
    const env = { COLLBENCH_NATIVE_DIR: mkdtempSync(join(tmpdir(), 'collbench-empty-')) };
    assert.deepEqual(builtBackends(env), []);
    assert.throws(
      () => selectBackend('gloo', {}, env),
      (e: unknown) =>
        e instanceof BackendUnavailableError &&
        /^backend gloo is not built \(.*collbench_gloo\.node missing\): install Gloo/.test(e.message),
    );
    assert.throws(
      () => selectBackend(null, {}, env),
      (e: unknown) => e instanceof BackendUnavailableError && e.message === missingBackendMessage(null, env),
    );
  });
});
