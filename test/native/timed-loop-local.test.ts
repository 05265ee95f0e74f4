// The shared timed loop's paths that the NCCL backend takes, without a GPU: native/test/
// timed_loop_local_test.cc drives benchLocal/warmupLocal on a small host-memory backend with several
// ranks per process, asynchronous completion, device-timer marks (-I) and graph capture/replay (-G).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

describe('timed loop with several local ranks (C++)', () => {
  it('ops on every local rank, per-rank checks, -I marks, -G replay, refused mismatches', () => {
    const exe = join(repoRoot, 'build', 'Release', 'timed_loop_local_test');
    assert.ok(existsSync(exe), `${exe} missing: run make build`);
    const r = spawnSync(exe, [], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /timed loop \(local ranks\): [1-9]\d* checks, 0 failures/);
  });
});
