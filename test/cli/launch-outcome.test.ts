// How a --np job ends, as the user sees it (issue #36): a finished run with a failing verdict exits with the verdict's
// code, without mpirun's abort banner or an "incomplete" line; a reader that goes away (`| head -1`) gives 141 as a
// single process does; hosts mpirun cannot reach give collbench's line and exit 5 instead of Open MPI's 23 lines.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { binDir, runProgram } from '../helpers/cli.js';

const work = mkdtempSync(join(tmpdir(), 'collbench-first-outcome-'));
after(() => rmSync(work, { recursive: true, force: true }));

describe('--np: a verdict is not a crash', () => {
  for (const backend of ['mpi', 'gloo']) {
    it(`${backend}: --warn-busbw above what is reached: exit 7, the report complete, no abort banner, no "incomplete"`, () => {
      const json = join(work, `verdict-${backend}.json`);
      const r = runProgram('all_reduce_perf', [
        '--backend',
        backend,
        '-b',
        '8',
        '-e',
        '64',
        '-f',
        '8',
        '-n',
        '2',
        '--warn-busbw',
        '1000',
        '--np',
        '2',
        '-J',
        json,
      ]);
      assert.equal(r.code, 7, r.stderr);
      assert.doesNotMatch(r.stderr, /incomplete|Primary job|aborted|exited with status|-{20}/);
      assert.match(r.stdout, /below --warn-busbw|warn/i);
      assert.equal(JSON.parse(readFileSync(json, 'utf8')).status, 'complete');
    });
  }
});

describe("--np: the output's reader goes away", () => {
  for (const backend of ['mpi', 'gloo']) {
    it(`${backend}: \`| head -1\` ends the job with 141 (SIGPIPE), as a single process, and says nothing`, () => {
      const r = spawnSync(
        'bash',
        [
          '-c',
          `${join(binDir, 'all_reduce_perf')} --backend ${backend} -b 8 -e 64M -f 2 --np 2 | head -1; ` +
            'echo "status ${PIPESTATUS[0]}" >&2',
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      assert.match(r.stdout, /^# collbench version/);
      assert.equal(r.stdout.split('\n').length, 2);
      // gloo: rank 0 itself writes to the pipe and ends with 141; rank 1 may say first that its peer went away
      if (backend === 'mpi') assert.equal(r.stderr, 'status 141\n');
      else assert.match(r.stderr, /status 141\n$/);
    });
  }
});

describe('--hosts that mpirun cannot reach', () => {
  it("collbench's line naming the hosts and ssh's reason, exit 5, none of Open MPI's banner", () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', '--np', '2', '--hosts', 'nosuchhost-first:2'], {
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 5, r.stderr);
    assert.match(
      r.stderr,
      /^collbench: mpirun could not start its daemons on --hosts nosuchhost-first:2 \(ssh: Could not resolve hostname nosuchhost-first[^)]*\); every host must be reachable by ssh/m,
    );
    assert.doesNotMatch(r.stderr, /ORTE was unable|-{20}/);
  });
});
