// Slurm without a cluster (bench/launch/slurm.ts): host lists expanded as `scontrol show hostnames` does
// (fixed cases always, and each case compared with the real scontrol when slurm-client is installed),
// the allocation's node list, an srun task's rank and node-local place, the gloo world under srun, and
// the mpi backend's refusal of an srun task without PMIx. test/cli/slurm.test.ts runs a real one-machine Slurm.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { UsageError } from '../../bench/core/errors.js';
import { glooWorld } from '../../bench/backends/gloo.js';
import {
  expandSlurmHostlist,
  expandTasksPerNode,
  MAX_HOSTLIST_HOSTS,
  slurmAllocationHosts,
  slurmMpiRefusal,
  slurmStep,
} from '../../bench/launch/slurm.js';

/** Lists and what scontrol 22.05 prints for them (checked against it when installed, below). */
const VALID: [string, string[]][] = [
  [
    'node[01-03,7],rack[1-2]-gpu[1-2]',
    ['node01', 'node02', 'node03', 'node7', 'rack1-gpu1', 'rack1-gpu2', 'rack2-gpu1', 'rack2-gpu2'],
  ],
  ['node[1-10]', ['node1', 'node2', 'node3', 'node4', 'node5', 'node6', 'node7', 'node8', 'node9', 'node10']],
  ['node[08-11]', ['node08', 'node09', 'node10', 'node11']],
  ['node[001-3]', ['node001', 'node002', 'node003']],
  ['n[099-101]', ['n099', 'n100', 'n101']],
  ['n[1-010]', ['n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9', 'n10']],
  ['n[01-1]', ['n01']],
  ['n[00]', ['n00']],
  ['n[1-]', ['n1']],
  ['n[2,1],n[1-3,2]', ['n2', 'n1', 'n1', 'n2', 'n3', 'n2']],
  ['n[1-2],n[1-2]', ['n1', 'n2', 'n1', 'n2']],
  ['a[1-2]b[3-4]c[5-6]', ['a1b3c5', 'a1b3c6', 'a2b3c5', 'a2b3c6', 'a1b4c5', 'a1b4c6', 'a2b4c5', 'a2b4c6']],
  ['a[1-2].b[3-4]', ['a1.b3', 'a1.b4', 'a2.b3', 'a2.b4']],
  ['n[1-2][3-4]', ['n13', 'n14', 'n23', 'n24']],
  ['n[1-3]-[5-6]', ['n1-5', 'n1-6', 'n2-5', 'n2-6', 'n3-5', 'n3-6']],
  ['[1-2]', ['1', '2']],
  ['0[1-2]', ['01', '02']],
  ['plain,host-7,n01', ['plain', 'host-7', 'n01']],
  ['a b\tc\nd,,e,', ['a', 'b', 'c', 'd', 'e']],
  [',x', ['x']],
  ['a\rb,c\vd', ['a\rb', 'c\vd']], // only blank, tab, newline and comma separate names
  ['n[ 1-2]', ['n01', 'n02']],
  ['n[+1-2]', ['n01', 'n02']],
  ['n[1- 2]', ['n1', 'n2']],
  ['n[ +1- +3]', ['n001', 'n002', 'n003']],
  ['n[1a-3]', ['n01', 'n02', 'n03']], // strtoul: a low bound's trailing text is only checked without a high bound
  ['ñ[1-2]', ['ñ1', 'ñ2']],
];

/** Lists scontrol calls invalid ("Invalid hostlist"): one-line UsageError here. */
const INVALID = [
  'n[3-1]',
  'n[]',
  'n[1-4:2]',
  'n[0-65536]',
  'n[a-b]',
  'n[1,,2]',
  'n[-2]',
  'n[1--2]',
  'n[0x1-0x2]',
  'n[1 ]',
  'n[1a]',
  'n[ ]',
  'n[1-3a]',
  'n[+-1]',
  'n[1]x',
  'n[1-2]a[3-4]b',
  'a.b[1-2].c',
  'n[1-2];m',
  'n[1-2]-',
  'n[1-2\t3]',
  'n[0-40000,40001-65536]s[1]',
  'n[1-2]]',
  'n[[1-2]]',
];

/** Lists scontrol turns into mangled names (`n[1-2` prints `n]`) or silently drops a name of: refused here,
 *  not compared. */
const MANGLED = ['n[1-2', 'n1-2]', 'n[[1-2]', 'a,]b', 'n[1-[2]]', '[-1][3][1],x'];

describe('expandSlurmHostlist', () => {
  it('expands ranges, lists, zero padding and several brackets as scontrol show hostnames does', () => {
    for (const [list, hosts] of VALID) assert.deepEqual(expandSlurmHostlist(list), hosts, list);
  });
  it('keeps the maximum range and prefix counts of Slurm (65536)', () => {
    assert.equal(expandSlurmHostlist('n[0-65535]').length, 65536);
    assert.equal(expandSlurmHostlist('n[0-40000,40001-65535]s[1]').length, 65536);
    assert.equal(expandSlurmHostlist('n[0-40000,40001-65536]').length, 65537); // the last bracket has no such cap
  });
  it('an empty list is no hosts', () => {
    assert.deepEqual(expandSlurmHostlist(''), []);
    assert.deepEqual(expandSlurmHostlist(' ,, '), []);
  });
  it('refuses invalid lists with one line naming the source and the list', () => {
    for (const list of [...INVALID, ...MANGLED]) {
      assert.throws(
        () => expandSlurmHostlist(list, '--hosts'),
        (e: unknown) => {
          assert.ok(e instanceof UsageError, list);
          assert.ok(e.message.startsWith('--hosts: invalid Slurm host list '), e.message);
          assert.ok(!e.message.includes('\n'), e.message);
          return true;
        },
      );
    }
    assert.throws(
      () => expandSlurmHostlist('n[3-1]'),
      /^UsageError: hostlist: invalid Slurm host list 'n\[3-1\]': range '3-1' goes down$/,
    );
    assert.throws(() => expandSlurmHostlist('n[1-2'), /\[ without \]/);
    assert.throws(() => expandSlurmHostlist('n[1]x'), /text after its last bracket/);
    assert.throws(() => expandSlurmHostlist('n[99999999999999999999]'), /above 2\^64-1/);
  });
  it(`refuses more than ${MAX_HOSTLIST_HOSTS} names before building them`, () => {
    const t0 = Date.now();
    assert.throws(() => expandSlurmHostlist('a[0-65535]b[0-65535]c[0-9]'), /more than 4194304 hosts/);
    assert.ok(Date.now() - t0 < 1000);
  });
});

/** `scontrol show hostnames LIST`, or null when scontrol is not installed. It needs a slurm.conf to start,
 *  not a controller: a two-line one in a temp directory. */
function scontrolRunner(): ((list: string) => { hosts: string[]; invalid: boolean }) | null {
  const dir = mkdtempSync(join(tmpdir(), 'collbench-scontrol-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, 'slurm.conf');
  writeFileSync(conf, 'ClusterName=collbench\nSlurmctldHost=localhost\n');
  const env = { ...process.env, SLURM_CONF: conf };
  const probe = spawnSync('scontrol', ['--version'], { encoding: 'utf8', env });
  if (probe.error) return null; // ENOENT: not installed
  assert.equal(probe.status, 0, `scontrol --version: ${probe.stderr}`);
  return (list) => {
    const r = spawnSync('scontrol', ['show', 'hostnames', list], { encoding: 'utf8', env, maxBuffer: 64 << 20 });
    assert.equal(r.status, 0, `scontrol show hostnames ${list}: ${r.stderr}`);
    return { hosts: r.stdout.split('\n').filter((l) => l !== ''), invalid: /Invalid hostlist/.test(r.stderr) };
  };
}

describe('expandSlurmHostlist against the real scontrol show hostnames', () => {
  const scontrol = scontrolRunner();
  const skip = scontrol ? false : 'scontrol is not installed (apt install slurm-client)';
  it('gives the same names for every valid list', { skip }, () => {
    for (const [list] of VALID) {
      const real = scontrol!(list);
      assert.equal(real.invalid, false, list);
      assert.deepEqual(expandSlurmHostlist(list), real.hosts, list);
    }
    const big = scontrol!('n[0-1024]s[0-63]');
    assert.deepEqual(expandSlurmHostlist('n[0-1024]s[0-63]'), big.hosts);
  });
  it('agrees on 200 random lists of names, brackets, ranges, blanks and signs', { skip }, () => {
    let seed = 20261123; // fixed: a failure names its list and reproduces
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = (chars: string, max: number) => {
      let s = '';
      for (let n = Math.floor(random() * (max + 1)); n > 0; n--) s += chars[Math.floor(random() * chars.length)];
      return s;
    };
    for (let i = 0; i < 200; i++) {
      let list = '';
      for (let parts = 1 + Math.floor(random() * 5); parts > 0; parts--) {
        list += random() < 0.5 ? pick('na0.-1 ,', 3) : `[${pick('0123909-,+ -01', 6)}]`;
      }
      if (list.startsWith('-')) list = `x${list}`; // scontrol would read it as an option
      const real = scontrol!(list);
      let ours: string[] | Error;
      try {
        ours = expandSlurmHostlist(list);
      } catch (e) {
        ours = e as Error;
      }
      if (real.invalid) {
        assert.ok(
          ours instanceof UsageError,
          `scontrol refuses ${JSON.stringify(list)}, collbench gives ${String(ours)}`,
        );
      } else if (ours instanceof Error) {
        // The one refusal scontrol lacks: it silently drops a name with three or more brackets when one
        // before the last two is bad (its recursion loses the error).
        assert.match(list, /(\[[^\]]*\][^[, ]*){3}/, `${JSON.stringify(list)}: ${ours.message}`);
      } else {
        assert.deepEqual(ours, real.hosts, JSON.stringify(list));
      }
    }
  });
  it('refuses every list scontrol calls invalid', { skip }, () => {
    for (const list of INVALID) {
      assert.equal(scontrol!(list).invalid, true, `scontrol accepts ${list}`);
      assert.throws(() => expandSlurmHostlist(list), UsageError, list);
    }
  });
});

describe('slurmAllocationHosts', () => {
  it('reads SLURM_JOB_NODELIST, else SLURM_NODELIST; null outside an allocation', () => {
    assert.deepEqual(slurmAllocationHosts({ SLURM_JOB_NODELIST: 'gpu[1-2],login', SLURM_NODELIST: 'x' }), [
      'gpu1',
      'gpu2',
      'login',
    ]);
    assert.deepEqual(slurmAllocationHosts({ SLURM_NODELIST: 'n[07-08]' }), ['n07', 'n08']);
    assert.equal(slurmAllocationHosts({}), null);
    assert.equal(slurmAllocationHosts({ SLURM_JOB_NODELIST: '' }), null);
  });
  it('a malformed list is a UsageError naming the variable', () => {
    assert.throws(
      () => slurmAllocationHosts({ SLURM_JOB_NODELIST: 'n[2-1]' }),
      /^UsageError: SLURM_JOB_NODELIST: invalid Slurm host list/,
    );
  });
});

describe('expandTasksPerNode', () => {
  it("expands Slurm's count(xrepeat) lists", () => {
    assert.deepEqual(expandTasksPerNode('2(x3),1'), [2, 2, 2, 1]);
    assert.deepEqual(expandTasksPerNode('4'), [4]);
    assert.throws(() => expandTasksPerNode('2(3)'), /SLURM_STEP_TASKS_PER_NODE: '2\(3\)' is not a list of task counts/);
  });
});

/** What srun gives task `rank` of a step (values as Slurm 22.05 sets them, seen in test/cli/slurm.test.ts). */
function srunTask(rank: number, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    SLURM_JOB_ID: '41',
    SLURM_STEP_ID: '0',
    SLURM_PROCID: String(rank),
    SLURM_LOCALID: String(rank),
    SLURM_NTASKS: '2',
    SLURM_STEP_NUM_TASKS: '2',
    SLURM_STEP_NUM_NODES: '1',
    SLURM_NODEID: '0',
    SLURM_STEP_TASKS_PER_NODE: '2',
    SLURM_JOB_NODELIST: 'vm',
    ...extra,
  };
}

describe('slurmStep', () => {
  it('an srun task: rank, size and node-local place', () => {
    assert.deepEqual(slurmStep(srunTask(1)), {
      rank: 1,
      size: 2,
      localRank: 1,
      localSize: 2,
      nodes: 1,
      jobId: '41',
      stepId: '0',
    });
  });
  it("several nodes: this node's task count from SLURM_STEP_TASKS_PER_NODE", () => {
    const env = srunTask(5, {
      SLURM_STEP_NUM_TASKS: '7',
      SLURM_STEP_NUM_NODES: '3',
      SLURM_NODEID: '2',
      SLURM_LOCALID: '0',
      SLURM_STEP_TASKS_PER_NODE: '3(x2),1',
    });
    assert.equal(slurmStep(env)?.localSize, 1);
    assert.equal(slurmStep({ ...env, SLURM_NODEID: '1', SLURM_LOCALID: '2' })?.localSize, 3);
  });
  it('a batch script or salloc shell is no task of a step', () => {
    assert.equal(
      slurmStep({ SLURM_JOB_ID: '41', SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'vm' }),
      null,
    );
    assert.equal(slurmStep({}), null);
  });
  it('garbage is a UsageError naming the variable', () => {
    assert.throws(() => slurmStep(srunTask(0, { SLURM_PROCID: 'x' })), /^UsageError: SLURM_PROCID=x:/);
    assert.throws(() => slurmStep(srunTask(0, { SLURM_PROCID: '2' })), /not a task of a step of 2 tasks/);
  });
});

describe('the gloo world under srun', () => {
  it('takes rank, size and local place from the step; one node means one host', () => {
    assert.deepEqual(glooWorld(srunTask(1)), {
      launcher: 'slurm',
      rank: 1,
      size: 2,
      localRank: 1,
      localSize: 2,
      runId: 'slurm-41.0',
    });
  });
  it("torchrun's workers started by srun keep their own RANK", () => {
    const w = glooWorld(srunTask(0, { RANK: '3', WORLD_SIZE: '4', MASTER_ADDR: 'n1', MASTER_PORT: '29500' }));
    assert.equal(w.launcher, 'torchrun');
    assert.equal(w.rank, 3);
  });
  it('srun --mpi=pmi2 (PMI_RANK, PMI_SIZE) across nodes: the node-local size comes from the step', () => {
    const env = srunTask(2, {
      PMI_RANK: '2',
      PMI_SIZE: '4',
      PMI_JOBID: '41.0',
      SLURM_STEP_NUM_TASKS: '4',
      SLURM_STEP_NUM_NODES: '2',
      SLURM_NODEID: '1',
      SLURM_LOCALID: '0',
      SLURM_STEP_TASKS_PER_NODE: '2(x2)',
    });
    assert.deepEqual(glooWorld(env), {
      launcher: 'mpi',
      rank: 2,
      size: 4,
      localRank: 0,
      localSize: 2,
      runId: 'mpi-41.0',
    });
  });
});

describe('the mpi backend in an srun task', () => {
  it('refuses a task without PMIx, in one line that says what to do', () => {
    const why = slurmMpiRefusal(srunTask(0)) ?? '';
    assert.match(
      why,
      /^--backend mpi: srun started this task \(job 41, step 0, 2 tasks\) without a PMIx server.*srun --mpi=pmix.*--backend gloo/,
    );
    assert.ok(!why.includes('\n'));
  });
  it('accepts srun --mpi=pmix or pmi2, and anything that is not an srun task', () => {
    assert.equal(slurmMpiRefusal(srunTask(0, { PMIX_RANK: '0', PMIX_NAMESPACE: 'slurm.pmix.41.0' })), null);
    assert.equal(slurmMpiRefusal(srunTask(0, { PMI_FD: '5', PMI_RANK: '0', PMI_SIZE: '2' })), null);
    assert.equal(slurmMpiRefusal({ SLURM_JOB_ID: '41', SLURM_PROCID: '0', SLURM_NTASKS: '2' }), null);
    assert.equal(slurmMpiRefusal({}), null);
  });
});
