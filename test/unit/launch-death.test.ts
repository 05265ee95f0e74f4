// The launchers' account of a dead rank: mpirun's notice (Open MPI 4.1 wording, as captured from real runs) read
// into rank, host, pid and signal or exit status, and collbench's one line; launcherRank() (who checks outputs).
// The real faults are in test/cli/rank-death.test.ts; these pin the parsing on mpirun's exact text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launcherRank } from '../../bench/launch/launcher.js';
import { deathLine, parseMpirunDeath } from '../../bench/launch/mpirun.js';
import { daemonFailure, daemonFailureLine, MpirunNotices } from '../../bench/launch/mpirun-notices.js';
import { filterEnv } from '../../bench/report/provenance.js';

const SIGNALLED = `--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
--------------------------------------------------------------------------
`;
const EXITED = `--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[17999,1],2]
  Exit code:    4
--------------------------------------------------------------------------
`;

describe('parseMpirunDeath / deathLine', () => {
  it("a rank killed by a signal: rank, host and signal; mpirun's PID 0 is left out", () => {
    const d = parseMpirunDeath(SIGNALLED);
    assert.deepEqual(d, { rank: 1, pid: null, host: 'vm', signal: 9, exitCode: null });
    assert.match(
      deathLine(d!),
      /^collbench: rank 1 on host vm was killed by signal 9 \(SIGKILL\); mpirun ended the other ranks/,
    );
  });
  it('a real pid is kept', () => {
    const d = parseMpirunDeath(SIGNALLED.replace('PID 0', 'PID 4242').replace('node vm', 'node h2.example'));
    assert.equal(
      deathLine(d!).split(';')[0],
      'collbench: rank 1 (pid 4242) on host h2.example was killed by signal 9 (SIGKILL)',
    );
  });
  it('a rank that exited non-zero: rank and status', () => {
    const d = parseMpirunDeath(EXITED);
    assert.deepEqual(d, { rank: 2, pid: null, host: null, signal: null, exitCode: 4 });
    assert.match(deathLine(d!), /^collbench: rank 2 exited with status 4;/);
  });
  it('no notice: null', () => {
    assert.equal(parseMpirunDeath('some other stderr\n'), null);
  });
});

// Open MPI 4.1.4's text for --hosts nosuchhost:2 (ssh's line, then the banner), trimmed in the middle.
const NO_DAEMONS = `ssh: Could not resolve hostname nosuchhost: Name or service not known\r
--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:

* not finding the required libraries and/or binaries on
  one or more nodes. Please check your PATH and LD_LIBRARY_PATH
--------------------------------------------------------------------------
`;

describe('MpirunNotices: the banners collbench explains are held back, everything else passes', () => {
  const passed = (chunks: string[]): { out: string; held: boolean } => {
    let out = '';
    const n = new MpirunNotices((t) => {
      out += t;
    });
    for (const c of chunks) n.push(c);
    n.end();
    return { out, held: n.held };
  };
  it("a signalled rank: both banners held, the rank's own line kept, in chunks split anywhere", () => {
    const text = 'rank 1 on host vm: gloo failure X\n' + SIGNALLED;
    for (const cut of [0, 5, 40, 100, text.length - 3]) {
      assert.deepEqual(passed([text.slice(0, cut), text.slice(cut)]), {
        out: 'rank 1 on host vm: gloo failure X\n',
        held: true,
      });
    }
  });
  it("the exit-code banner and the daemons banner are held; ssh's line is kept", () => {
    assert.deepEqual(passed([EXITED]), { out: '', held: true });
    assert.deepEqual(passed([NO_DAEMONS]), {
      out: 'ssh: Could not resolve hostname nosuchhost: Name or service not known\r\n',
      held: true,
    });
  });
  it('a banner collbench does not explain passes whole; a banner that never closes, and a half line, pass at the end', () => {
    const other = '-'.repeat(74) + '\nWARNING: something else\n' + '-'.repeat(74) + '\n';
    assert.deepEqual(passed([other]), { out: other, held: false });
    assert.deepEqual(passed(['-'.repeat(74) + '\nunfinished\n', 'tail']), {
      out: '-'.repeat(74) + '\nunfinished\ntail',
      held: false,
    });
  });
  it("daemonFailure reads ssh's reason; its line names the hosts", () => {
    const d = daemonFailure(NO_DAEMONS);
    assert.deepEqual(d, { reason: 'ssh: Could not resolve hostname nosuchhost: Name or service not known' });
    assert.match(
      daemonFailureLine('nosuchhost:2', d!.reason),
      /^collbench: mpirun could not start its daemons on --hosts nosuchhost:2 \(ssh: Could not resolve hostname nosuchhost: /,
    );
    assert.equal(daemonFailure(SIGNALLED), null);
  });
});

describe('launcherRank', () => {
  it("reads the launcher's rank variable, else null", () => {
    assert.equal(launcherRank({ OMPI_COMM_WORLD_RANK: '3' }), 3);
    assert.equal(launcherRank({ RANK: '0' }), 0);
    assert.equal(launcherRank({ SLURM_PROCID: 'x' }), null);
    assert.equal(launcherRank({}), null);
  });
});

describe('filterEnv leaves out credentials whatever the prefix', () => {
  it('drops *_PASSWORD, *_TOKEN, *_SECRET*, *AUTH* and *_KEY variables', () => {
    const env = {
      COLLBENCH_GLOO_REDIS_PASSWORD: 'x',
      NCCL_DEBUG: 'INFO',
      GLOO_TOKEN: 'y',
      OMPI_MCA_secret_thing: 'z',
      COLLBENCH_AUTH: 'a',
      UCX_PRIVATE_KEY: 'k',
      REDISCLI_AUTH: 'r',
      COLLBENCH_GLOO_STORE: 'redis://h:1',
    };
    assert.deepEqual(Object.keys(filterEnv(env)), ['COLLBENCH_GLOO_STORE', 'NCCL_DEBUG']);
  });
});
