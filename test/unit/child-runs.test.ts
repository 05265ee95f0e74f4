// engine/child-runs.ts with real child processes: a stand-in script in place of collbench writes (or does not write)
// the report named after -J, and the class reads it back as compare, locate and accept would; a real SIGINT or SIGTERM
// to this process, or stop(), ends children that would otherwise run for a minute.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ChildRuns, readReport, withChildRuns } from '../../bench/engine/child-runs.js';
import { failureLine, type ChildOutcome } from '../../bench/launch/child-job.js';
import { ARGV_ENV } from '../../bench/report/provenance.js';
import { childOutcome } from '../helpers/child-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'collbench-child-runs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in for collbench: `-J FILE` gets `content` (unless null); `--sleep S` waits first; prints its env's ARGV. */
const script = join(dir, 'stand-in.mjs');
writeFileSync(
  script,
  `
import { writeFileSync } from 'node:fs';
const a = process.argv.slice(2);
const at = (f) => a.indexOf(f) >= 0 ? a[a.indexOf(f) + 1] : null;
if (at('--sleep')) await new Promise((r) => setTimeout(r, Number(at('--sleep')) * 1000));
if (at('--content') !== 'none') writeFileSync(at('-J'), at('--content'));
process.stdout.write(String(process.env.${ARGV_ENV} ?? 'unset'));
process.exit(Number(at('--exit') ?? 0));
`,
);

describe('child runs', () => {
  const runs = new ChildRuns(script, dir);

  it("runs the script with the words and a report path of its own, without the parent's typed command line", async () => {
    process.env[ARGV_ENV] = '["parent"]';
    try {
      const r = await runs.run('case one/a', (report) => ['--content', '{}', '--exit', '7', '-J', report], {
        timeoutSec: 30,
      });
      assert.equal(r.outcome.exitCode, 7);
      assert.equal(r.outcome.stdoutTail, 'unset');
      assert.equal(r.reportPath, join(dir, 'case_one_a.json'));
      assert.equal(r.report.doc, null);
      assert.match(r.report.error!, /^report does not match the schema: /);
    } finally {
      delete process.env[ARGV_ENV];
    }
  });

  it('says when no report was written, and when it is not JSON', async () => {
    const none = await runs.run('none', (report) => ['--content', 'none', '-J', report], { timeoutSec: 30 });
    assert.equal(none.report.error, 'the run wrote no report');
    const bad = await runs.run('bad', (report) => ['--content', '{"rows": [', '-J', report], { timeoutSec: 30 });
    assert.match(bad.report.error!, /^unreadable report: /);
    assert.deepEqual(readReport(join(dir, 'absent.json')), { doc: null, error: 'the run wrote no report' });
  });

  it('stops every running child at once, keeping the first reason; no signal, no signal exit', async () => {
    const t0 = Date.now();
    let started = 0;
    const both = [1, 2].map((i) =>
      runs.run(`slow${i}`, (report) => ['--sleep', '60', '-J', report], {
        timeoutSec: 120,
        graceMs: 1000,
        started: () => {
          if (++started === 2)
            setTimeout(() => {
              runs.stop('stopped at --max-time');
              runs.stop('later');
            }, 300);
        },
      }),
    );
    const done = await Promise.all(both);
    assert.ok(Date.now() - t0 < 20_000, `stopped after ${Date.now() - t0} ms`);
    for (const r of done) {
      assert.equal(r.outcome.interrupted, true);
      assert.equal(r.report.error, 'the run wrote no report');
    }
    assert.equal(runs.stopped, true);
    assert.equal(runs.stopReason, 'stopped at --max-time');
    assert.equal(runs.signalExit(), null);
  });
});

describe("a command's children under signals", () => {
  for (const [signal, exit] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} to this process stops the running child; the command exits ${exit}; the temporary folder goes`, async () => {
      let folder = '';
      const t0 = Date.now();
      const exitCode = await withChildRuns(script, { prefix: 'collbench-child-runs-test-' }, async (children) => {
        folder = children.dir;
        const r = await children.run('slow', (report) => ['--sleep', '60', '-J', report], {
          timeoutSec: 120,
          graceMs: 1000,
          started: () => {
            setTimeout(() => process.kill(process.pid, signal), 300);
          },
        });
        assert.equal(r.outcome.interrupted, true);
        assert.equal(children.stopReason, 'interrupted');
        return children.signalExit();
      });
      assert.equal(exitCode, exit);
      assert.ok(Date.now() - t0 < 20_000);
      assert.equal(existsSync(folder), false, `${folder} left behind`);
      assert.equal(process.listenerCount(signal), 0, 'the signal handler is removed afterwards');
    });
  }

  it('keeps a folder it was given', async () => {
    const kept = mkdtempSync(join(dir, 'kept-'));
    await withChildRuns(script, { dir: kept }, async (children) => {
      await children.run('one', (report) => ['--content', '{}', '-J', report], { timeoutSec: 30 });
    });
    assert.equal(existsSync(join(kept, 'one.json')), true);
  });
});

describe('why a child failed, in one line', () => {
  const failed = (stderrTail: string): ChildOutcome => childOutcome(1, { stderrTail });

  it("names collbench's own line first, then Open MPI's tagged error, not a PMIx source line printed after it", () => {
    // stderr of an mpirun whose ranks could not select PML ucx (test/cli/compare.test.ts), as Open MPI 4.1 prints it
    // when a rank is torn down during start-up
    const ucx = [
      '--------------------------------------------------------------------------',
      '[vm:25870] PML ucx cannot be selected',
      '[vm:25878] PMIX ERROR: ERROR in file ../../../../../../src/mca/gds/ds21/gds_ds21_lock_pthread.c at line 99',
      '[vm:25865] 1 more process has sent help message help-mca-base.txt / find-available:none found',
      '[vm:25865] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages',
    ].join('\n');
    assert.equal(failureLine(failed(ucx), 60), 'exit 1: [vm:25870] PML ucx cannot be selected');
    assert.equal(
      failureLine(failed(`${ucx}\nall_reduce_perf: -b: bad size`), 60),
      'exit 1: all_reduce_perf: -b: bad size',
    );
    const onlyPmix =
      '[vm:25878] PMIX ERROR: ERROR in file ../../../../../../src/mca/gds/ds21/gds_ds21_lock_pthread.c at line 99';
    assert.equal(failureLine(failed(onlyPmix), 60), `exit 1: ${onlyPmix}`);
  });
  it("a rank's own reason before the --np launcher's account of its exit (accept --backend nccl --np 2, no libnccl)", () => {
    const reason =
      'all_reduce_perf: rank 1 on host vm: nccl backend unavailable (NCCL_NOT_FOUND): libnccl not found; looked in: …';
    const summary =
      'collbench: rank 1 exited with status 5; mpirun ended the other ranks; report files keep the rows finished ' +
      'before ("status": "incomplete")';
    assert.equal(failureLine(failed(`${reason}\n${summary}`), 60), `exit 1: ${reason}`);
    assert.equal(failureLine(failed(summary), 60), `exit 1: ${summary}`);
  });
});
