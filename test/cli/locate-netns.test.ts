// `collbench locate` on real hosts: four network-namespace hosts (scripts/netns-hosts.sh) on a bridge, Open MPI
// ranks started inside them through the rsh agent scripts/netns-rsh.sh, all configured through OMPI_MCA_* environment
// (locate passes no mpirun flag of its own for it). A "bad cable" is a tc tbf qdisc on one host's eth0, its rate a
// fraction of the healthy busbw measured by the test itself just before (a fixed rate is 7× slower on one machine
// and 2-3× on another). Checks: healthy → healthy, a strongly, a mildly (≈3×) and a slightly (≈0.78×, degraded)
// throttled host → that host named and no link, every job within its time budget, --max-time stopping a run in time
// with a partial verdict, bad input → one line and exit 2, an unreachable host → exit 5 naming it, and no process
// left behind. Skips, saying why, when namespaces cannot be made or mpirun is missing. Namespaces, qdiscs and
// /etc/hosts lines are removed afterwards.
//
// The hosts share this machine's 2 CPUs (and other work on it), so jobs that run at the same time compete and a
// pair's busbw moves by up to ±50 % from one job to the next: the tests state a 50 % margin and up to 80 %
// repeat-to-repeat noise (--margin 50 --max-noise 80) instead of the defaults (25 %, 50 %).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { attributePairs, degradedHosts, level, samplesOf, type GroupResult } from '../../bench/locate/decide.js';
import { medianOf } from '../../bench/numbers/stats.js';
import { locateErrors, type LocateDocument, type LocateStage } from '../../bench/locate/document.js';
import type { ReportDocument } from '../../bench/report/schema.js';
import { binDir, repoRoot, runProgram } from '../helpers/cli.js';

const SCRIPT = join(repoRoot, 'scripts', 'netns-hosts.sh');
const PREFIX = `cbl${process.pid % 100000}`;
const SUBNET = 71 + (process.pid % 9);
const HOSTS = 5; // h5 is deleted again to play an unreachable host that still resolves
const host = (i: number) => `${PREFIX}-h${i}`;
const FOUR = [1, 2, 3, 4].map(host).join(',');
/** Bandwidth-bound on this machine's TCP over veth, short enough for a throttled job (a few seconds each). */
const RUN_ARGS = ['--', '-b', '4M', '-e', '4M', '-n', '8'];
/** This machine's noise (see above), stated: margin 50 % instead of 25 %, repeat-to-repeat noise up to 80 %. */
const RULE = ['--margin', '50', '--max-noise', '80'];

let skipReason: string | null = null;
let mpiEnv: NodeJS.ProcessEnv = {};
const dir = mkdtempSync(join(tmpdir(), 'collbench-locate-test-'));

/** Processes that carry this test's Open MPI environment (mpirun, daemons, ranks, jobs): none may outlive a run. */
function leftovers(): string[] {
  const marker = `OMPI_MCA_btl_tcp_if_include=10.250.${SUBNET}.0/24`;
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) {
        found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 120)}`);
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

async function noLeftovers(): Promise<void> {
  // mpirun's daemons exit a moment after mpirun reports; give them a few seconds.
  for (let i = 0; i < 50 && leftovers().length; i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(leftovers(), [], 'processes left running');
}

function locate(args: string[], timeoutMs = 170_000) {
  return runProgram('collbench', ['locate', ...args], { env: mpiEnv, timeoutMs });
}

/** Every job with a time budget ended within it (plus the 3 s SIGTERM grace and mpirun's teardown). */
function withinBudgets(doc: LocateDocument): void {
  for (const st of doc.stages) {
    for (const j of st.jobs)
      if (j.budgetSec !== null)
        assert.ok(j.durationSec <= j.budgetSec + 10, `${st.name} ${j.id}: ${j.durationSec} s of ${j.budgetSec} s`);
  }
}

function verdict(file: string): LocateDocument {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  assert.deepEqual(locateErrors(doc), [], 'the verdict matches schema/collbench-locate.v2.schema.json');
  return doc as LocateDocument;
}

/** `burst` 1 mbit: a 4 KB bucket keeps the kernel's timers busy at these rates and slows the other "hosts" too. */
function throttle(i: number, rate: string | null, burst = '1mbit'): void {
  const args =
    rate === null
      ? ['qdisc', 'del', 'dev', 'eth0', 'root']
      : ['qdisc', 'add', 'dev', 'eth0', 'root', 'tbf', 'rate', rate, 'burst', burst, 'latency', '400ms'];
  const r = spawnSync('ip', ['netns', 'exec', host(i), 'tc', ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tc ${args.join(' ')} in ${host(i)}: ${r.stderr}`);
}

/** One all_reduce job of two hosts with the run arguments locate gives its jobs; its per-iteration busbw (GB/s). */
function pairJob(a: number, b: number, file: string): Promise<number[]> {
  const args = [
    'all_reduce',
    '--np',
    '2',
    '--hosts',
    `${host(a)}:1,${host(b)}:1`,
    ...RUN_ARGS.slice(1),
    '-w',
    '2',
    '-c',
    '0',
    '-I',
    '1',
    '-J',
    file,
    '--json-format',
    'collbench',
    '--quiet',
  ];
  return new Promise((done, fail) => {
    const child = spawn(join(binDir, 'collbench'), args, {
      env: { ...process.env, ...mpiEnv },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('close', (code) => {
      if (code !== 0) {
        fail(new Error(`${args.join(' ')}: exit ${code}: ${err}`));
        return;
      }
      done([...samplesOf(JSON.parse(readFileSync(file, 'utf8')) as ReportDocument).values()].flat());
    });
  });
}

/**
 * The healthy busbw here and now, as locate's pairs stage measures it: two rounds of two pairs at the same time
 * (every host busy, as in a locate round), each job's level the 90th percentile of its iterations (decide.ts), the
 * reference the median of the best third of the jobs. The machine's speed (and its load at the minute) sets it.
 */
async function healthyBusbw(tag: string): Promise<number> {
  const levels: number[] = [];
  for (const [round, pairs] of [
    [
      [1, 2],
      [3, 4],
    ],
    [
      [1, 3],
      [2, 4],
    ],
  ].entries()) {
    const jobs = await Promise.all(
      pairs.map(([a, b]) => pairJob(a!, b!, join(dir, `${tag}-healthy-${round}-${a}${b}.json`))),
    );
    levels.push(...jobs.map((samples) => level(samples)));
  }
  return medianOf(levels.sort((x, y) => y - x).slice(0, Math.ceil(levels.length / 3)));
}

/**
 * What a tbf at `mbit` on host i's eth0 does here and now: two rounds, each one of its pairs beside a pair of two
 * other hosts at the same time (both see the same load, as in a locate round); its pairs' levels over the others'.
 */
async function throttledRatio(i: number, mbit: number, tag: string): Promise<number> {
  const [a, b, c] = [1, 2, 3, 4].filter((h) => h !== i) as [number, number, number];
  throttle(i, `${Math.round(mbit)}mbit`);
  try {
    const mine: number[] = [];
    const others: number[] = [];
    // round 1: i-a beside b-c; round 2: i-b beside a-c
    for (const [partner, x, y] of [
      [a, b, c],
      [b, a, c],
    ]) {
      const [m, o] = await Promise.all([
        pairJob(i, partner!, join(dir, `${tag}-${partner}-mine.json`)),
        pairJob(x!, y!, join(dir, `${tag}-${partner}-other.json`)),
      ]);
      mine.push(level(m));
      others.push(level(o));
    }
    return medianOf(mine) / medianOf(others);
  } finally {
    throttle(i, null);
  }
}

/**
 * A tbf rate (mbit/s) that makes host i's pairs carry `fraction` of the busbw of pairs without it, found here and now:
 * first `fraction` of the healthy busbw (a rank's egress is the busbw in a 2-rank all-reduce), then scaled by how
 * far the measured ratio is from `fraction`, until within 15 % (at most 3 tries). A tbf at the busbw itself slows a
 * pair more than that (the busbw is an average, the transfers are bursts), so a fixed rule would not give 0.78.
 */
async function calibrate(
  i: number,
  fraction: number,
  tag: string,
  t: TestContext,
): Promise<{ mbit: number; measured: number }> {
  const busbw = await healthyBusbw(tag);
  let mbit = busbw * fraction * 8000;
  let measured = 0;
  for (let step = 1; step <= 3; step++) {
    measured = await throttledRatio(i, mbit, `${tag}-cal${step}`);
    t.diagnostic(
      `calibration ${step}: healthy busbw ${busbw.toFixed(3)} GB/s, tbf ${Math.round(mbit)} mbit on ${host(i)}: its pairs at ${measured.toFixed(2)} of the others' (load ${load()})`,
    );
    if (Math.abs(measured / fraction - 1) <= 0.15 || step === 3) break;
    mbit = Math.min(100_000, Math.max(1, (mbit * fraction) / Math.max(measured, 0.01)));
  }
  return { mbit, measured };
}

/**
 * Whether a run's pairs stage shows host i slower than the rest: every pair with it below every pair without it,
 * its pairs' median under 0.9 of the others' (`ratio`). What the jobs measured, not what locate concluded.
 */
function shownSlow(
  pairs: readonly { hosts: string[]; ratio: number | null }[],
  i: number,
): { shown: boolean; ratio: number; mine: number[]; others: number[] } {
  const ratios = (mine: boolean): number[] =>
    pairs.filter((g) => g.hosts.includes(host(i)) === mine).map((g) => g.ratio ?? 0);
  const [mine, others] = [ratios(true), ratios(false)];
  const ratio = medianOf(mine) / medianOf(others);
  return { shown: ratio < 0.9 && Math.max(...mine) < Math.min(...others), ratio, mine, others };
}

/** A stage's groups (none where the stage did not run). */
const groupsOf = (doc: LocateDocument, stage: LocateStage['name']): GroupResult[] =>
  doc.stages.find((st) => st.name === stage)?.groups ?? [];

/**
 * Whether locate's own rules for a host in the pairs stage name host i on what its jobs measured, before any re-test:
 * every pair with it slow or failed (attributePairs), or the pattern of a degraded host, below every pair without it
 * in each repeat and by a rank test of the jobs (degradedHosts; docs/locate.md). Where neither does, naming the host
 * is left to the re-tests and the load of the minute, and the run is not judged.
 */
const namedByPairsStage = (doc: LocateDocument, i: number): boolean => {
  const pairs = groupsOf(doc, 'pairs');
  return (
    attributePairs(doc.hosts, pairs).hostSuspects.some((s) => s.host === host(i)) ||
    degradedHosts(doc.hosts, pairs, doc.rule).some((d) => d.host === host(i))
  );
};

/** A group and its level against the stage's reference, for the diagnostics: `h1-h2 at 0.55`. */
const atRatio = (g: GroupResult): string => `${g.hosts.join('-')} at ${(g.ratio ?? 0).toFixed(2)}`;

/** The same group of hosts, in any order (a re-test may name a pair the other way round). */
const sameHosts = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((h) => b.includes(h));

/**
 * Whatever locate named is in its own data: a named link's pair, and some pair of a named host, measured slow in the
 * pairs stage or a re-test (every rule by which locate names a host asks for such a pair). For runs whose data does
 * not show the one throttled host alone: locate may name what the load made, never what its measurements do not show.
 */
function backedByData(doc: LocateDocument, out: string): void {
  const slow = [...groupsOf(doc, 'pairs'), ...groupsOf(doc, 'retest')].filter((g) => g.state === 'slow');
  for (const l of doc.links)
    assert.ok(
      slow.some((g) => sameHosts(g.hosts, l.hosts)),
      `link ${l.hosts.join('-')} named, never measured slow\n${out}`,
    );
  for (const h of [...doc.suspects.map((x) => x.host), ...doc.degraded.map((d) => d.host)])
    assert.ok(
      slow.some((g) => g.hosts.includes(h)),
      `host ${h} named, no pair with it measured slow\n${out}`,
    );
}

/**
 * The pairs the pairs stage measured slow (below the margin in every repeat, the rank test sure of it) and their
 * re-test, if any, did not clear: a slow spot in the data (`without`: leaving out the pairs of that host).
 */
function persistentlySlow(doc: LocateDocument, without?: number): string[] {
  const cleared = (hosts: readonly string[]): boolean =>
    groupsOf(doc, 'retest').some((g) => g.state === 'ok' && sameHosts(g.hosts, hosts));
  return groupsOf(doc, 'pairs')
    .filter((g) => g.state === 'slow' && !cleared(g.hosts) && !(without && g.hosts.includes(host(without))))
    .map(atRatio);
}

/**
 * The pairs with host i that a re-test measured within the margin of its control (state ok): the closer look did not
 * show that pair beyond the margin, so the data does not show host i slow with every partner. locate clears such a
 * pair (and may then name a link, or nothing): host i is named only from the pairs stage's pattern, which the load
 * can break. A test that counted only re-tests at 0.9 or more as clearing failed once in CI (h3 at 0.78: its pairs at
 * 0.43-0.50 in the pairs stage, a pair without it at 0.33 in one repeat; the rest of its log cut). The controls
 * themselves (ids `control…`, a ratio of 1 by definition) measure nothing of the kind.
 */
const clearedWith = (doc: LocateDocument, i: number): string[] =>
  groupsOf(doc, 'retest')
    .filter((g) => !g.id.startsWith('control') && g.hosts.includes(host(i)) && g.state === 'ok')
    .map(atRatio);

/** locate's own answer to a pairs stage whose noise is the size of the margin: it names nothing, and says so. */
const isNoise = (doc: LocateDocument): boolean =>
  doc.verdict === 'inconclusive' && /below the margin but not consistently .*: noise/.test(doc.reason);

/** Load average (1, 5, 15 min), for the messages: the verdicts compare jobs that share this machine's CPUs. */
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

describe('collbench locate: bad input (no hosts needed)', () => {
  const cases: [string, string[], RegExp][] = [
    ['no hosts', [], /^collbench: locate: no hosts: give --hosts or --hostfile, or run inside a Slurm allocation$/],
    ['one host', ['--hosts', 'localhost'], /needs at least 2 hosts, got 1/],
    ['duplicates', ['--hosts', 'localhost,localhost'], /host 'localhost' is listed twice/],
    [
      'unknown host',
      ['--hosts', 'localhost,no-such-host.invalid'],
      /unknown host 'no-such-host\.invalid' \(does not resolve\)/,
    ],
    ['a run argument locate sets', ['--hosts', 'a,b', '--', '--np', '4'], /--np is set by locate itself/],
    ['a bad run argument', ['--hosts', 'a,b', '--', '-b', 'lots'], /-b/],
    [
      'one repeat',
      ['--hosts', 'a,b', '--repeats', '1'],
      /--repeats: repeat count must be an integer between 2 and 100, got 1/,
    ],
  ];
  for (const [name, args, message] of cases) {
    it(`${name} → one line, exit 2`, () => {
      const r = locate(args, 30_000);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr.trimEnd(), message);
      assert.equal(r.stdout, '');
    });
  }

  it('--plan prints the schedule and its cost for 8 … 1024 hosts', () => {
    const r = locate(['--plan', '8,64,512,1024', '--job-seconds', '10']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ +8 pairs +14 +4 /m); // 7 rounds × 2 repeats, 4 disjoint pairs a round
    assert.match(r.stdout, /^ +1024 pairs +2046 +512 /m);
  });
});

describe('collbench locate on network-namespace hosts', () => {
  before(() => {
    if (spawnSync('sh', ['-c', 'command -v mpirun']).status !== 0) {
      skipReason = 'mpirun is not installed';
      return;
    }
    const up = spawnSync(SCRIPT, ['up', String(HOSTS), PREFIX, String(SUBNET)], { encoding: 'utf8' });
    if (up.status !== 0) {
      skipReason = `cannot create network namespaces: ${(up.stderr || up.stdout).trim().split('\n').pop()}`;
      return;
    }
    spawnSync('ip', ['netns', 'del', host(5)]);
    const env = spawnSync(SCRIPT, ['mpi-env', String(SUBNET)], { encoding: 'utf8' }).stdout;
    mpiEnv = Object.fromEntries(
      env
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  });
  after(() => {
    spawnSync(SCRIPT, ['down', PREFIX]);
    rmSync(dir, { recursive: true, force: true });
    assert.doesNotMatch(
      spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout,
      new RegExp(`${PREFIX}-h`),
      'namespaces deleted',
    );
    assert.doesNotMatch(readFileSync('/etc/hosts', 'utf8'), new RegExp(`${PREFIX}-h`), '/etc/hosts lines removed');
  });

  /**
   * Healthy hosts: judged only when the run's own pairs stage does not show one host slower than the rest (every
   * pair with it below every pair without it, at under 0.9 of them), measured no pair slow that its re-test did not
   * clear (persistentlySlow) and locate did not find the stage as noisy as the margin. These "hosts" share 2
   * CPUs: on a CI machine one of them carried half the busbw of the others in all six of its pair jobs, and here one
   * pair (h1-h4) was at 0.43 in the pairs stage and 0.45 in its re-test: a slow host or link in the data, which locate
   * is there to report. Such a run is run again, up to 3 attempts (none judgeable: skipped, saying so); a judged run
   * must be healthy, and a run that names something its data does not show fails at once (backedByData).
   */
  it('healthy hosts → verdict healthy, exit 0, no suspect', async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    for (let attempt = 1; ; attempt++) {
      const file = join(dir, `healthy-${attempt}.json`);
      const r = locate(['--hosts', FOUR, ...RULE, '-J', file, '--quiet', ...RUN_ARGS]);
      const out = `load ${load()}\n${r.stdout}\n${r.stderr}`;
      assert.ok([0, 6, 7, 8].includes(r.code ?? -1), out);
      const doc = verdict(file);
      const pairs = doc.stages.find((st) => st.name === 'pairs')!;
      const slow = [1, 2, 3, 4].map((i) => ({ i, ...shownSlow(pairs.groups, i) })).find((x) => x.shown);
      const slowPairs = persistentlySlow(doc);
      const noisy = isNoise(doc);
      t.diagnostic(
        `attempt ${attempt}: load ${load()}; ${doc.verdict}: ${doc.reason}` +
          (slow ? `; the data shows ${host(slow.i)} slow (its pairs at ${slow.ratio.toFixed(2)} of the others')` : '') +
          (slowPairs.length ? `; measured slow: ${slowPairs.join(', ')}` : ''),
      );
      const unlike = slow !== undefined || slowPairs.length > 0 || noisy;
      if (unlike) backedByData(doc, out);
      if (unlike && attempt < 3) continue;
      if (unlike) {
        // the premise (hosts that measure alike) did not hold in any of 3 runs: nothing to judge, said so
        await noLeftovers();
        t.skip(`no run of the 3 had hosts that measured alike here (load ${load()}): see the diagnostics`);
        return;
      }
      assert.equal(r.code, 0, out);
      assert.equal(doc.verdict, 'healthy');
      assert.deepEqual(doc.suspects, []);
      assert.deepEqual(doc.links, []);
      assert.equal(pairs.groups.length, 6); // all pairs of 4 hosts
      assert.equal(pairs.jobs.length, 12); // twice each
      assert.match(r.stdout, /^# verdict: healthy/m);
      break;
    }
    await noLeftovers();
  });

  /**
   * locate with host i's eth0 throttled so that its pairs carry `fraction` of the others' busbw (calibrated just
   * before; `fraction` below 0.1: simply that fraction of the healthy busbw, far slower whatever the load does). The
   * load on this machine can change the busbw 2-3× within a minute (and a healthy pair's by ±30 % from one job to the
   * next), and with it what a rate does: when locate's own rules for the pairs stage do not name host i on what its
   * jobs measured (namedByPairsStage: a clean-clone run once judged h3 at 0.78 on a looser test of the test's own, its
   * pairs at 0.96 0.85 0.76 against 0.99-1.01 but h2-h3 at 0.98 in repeat 2, and locate said healthy, as its rule
   * says), or a re-test measured one of its pairs within the margin (here once h1-h3 at 1.06 after 0.61: locate then
   * named link h2-h3), or locate answered inconclusive naming nothing (the noise it measured, or a re-test that did
   * not settle it: it then says to run again with more repeats), or a pair without host i was measured slow too (CI
   * once had h1-h2 at 0.55 in both repeats beside a throttled h3; `unclean` counts these), it is calibrated and run
   * again, up to 3 attempts; what such a run named must still be in its data (backedByData). A run whose data shows
   * host i slow, and nothing else, is judged (`judged`); its verdict line heads `out`, which CI's log keeps when it
   * cuts the middle of a long message.
   */
  async function throttledRun(
    i: number,
    fraction: number,
    rule: string[],
    tag: string,
    t: TestContext,
  ): Promise<{ doc: LocateDocument; out: string; code: number | null; judged: boolean; unclean: number }> {
    let unclean = 0;
    for (let attempt = 1; ; attempt++) {
      const { mbit, measured } =
        fraction < 0.1
          ? { mbit: (await healthyBusbw(`${tag}-${attempt}`)) * fraction * 8000, measured: NaN }
          : await calibrate(i, fraction, `${tag}-${attempt}`, t);
      const loadBefore = load();
      throttle(i, `${Math.round(mbit)}mbit`);
      let r: ReturnType<typeof locate>;
      const file = join(dir, `${tag}-${attempt}.json`);
      try {
        r = locate(['--hosts', FOUR, ...rule, '-J', file, '--quiet', ...RUN_ARGS]);
      } finally {
        throttle(i, null);
      }
      const note = `tbf ${Math.round(mbit)} mbit on ${host(i)} (calibrated to ${fraction.toFixed(2)}: measured ${measured.toFixed(2)}), load ${loadBefore} before, ${load()} after`;
      assert.ok([0, 6, 7, 8].includes(r.code ?? -1), `${note}\n${r.stdout}\n${r.stderr}`);
      const doc = verdict(file);
      // what the run saw, in the test's output whether it passes or not (the verdicts depend on the load)
      const seen = shownSlow(groupsOf(doc, 'pairs'), i);
      const byPairs = namedByPairsStage(doc, i);
      const elsewhere = persistentlySlow(doc, i);
      const cleared = clearedWith(doc, i);
      const list = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(' ');
      t.diagnostic(
        `attempt ${attempt}: ${note}; in the run its pairs at ${list(seen.mine)}, the others at ` +
          `${list(seen.others)} (${seen.ratio.toFixed(2)}${byPairs ? '' : ", not named by the pairs stage's rules"})` +
          (elsewhere.length ? `, slow without it: ${elsewhere.join(', ')}` : '') +
          (cleared.length ? `, within the margin in a re-test: ${cleared.join(', ')}` : '') +
          `; ${doc.verdict}: ${doc.reason}`,
      );
      if (elsewhere.length) unclean++;
      // inconclusive, naming nothing (the noise form among them): locate's answer to evidence that does not settle it
      const undecided =
        doc.verdict === 'inconclusive' && doc.suspects.length + doc.links.length + doc.degraded.length === 0;
      const judged = elsewhere.length === 0 && byPairs && cleared.length === 0 && !undecided;
      const out = `${note}\nverdict ${doc.verdict} (exit ${r.code}): ${doc.reason}\n${r.stdout}`;
      if (!judged) backedByData(doc, out);
      if (judged || attempt === 3) return { doc, out, code: r.code, judged, unclean };
    }
  }

  /**
   * Whether every attempt had a second slow spot in the data (`unclean`), skipped saying so: the premise (one slow
   * host among hosts that measure alike) did not hold here, so what locate named proves nothing either way.
   */
  function skippedAsUnclean(t: TestContext, run: { judged: boolean; unclean: number }): boolean {
    if (run.judged || run.unclean < 3) return false;
    t.skip(`every run of the 3 had a pair without the throttled host measured slow here (load ${load()})`);
    return true;
  }

  /** The host is named (a suspect, or degraded within the margin) and no link: the sentence says host, not links. */
  function namesTheHost(doc: LocateDocument, i: number, out: string): void {
    assert.deepEqual(doc.links, [], out);
    assert.deepEqual([...doc.suspects.map((s) => s.host), ...doc.degraded.map((d) => d.host)], [host(i)], out);
    const named = doc.suspects[0] ?? doc.degraded[0]!;
    assert.ok(named.confidence > 0.95, out);
    assert.match(out, new RegExp(`^# (suspect|degraded) host ${host(i)} `, 'm'));
    assert.doesNotMatch(out, /^# suspect link /m);
  }

  it('tbf at 1/25 of the healthy busbw on h4 (far slower) → h4 named, exit 7', async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    const run = await throttledRun(4, 1 / 25, RULE, 'throttled-far', t);
    if (skippedAsUnclean(t, run)) return;
    const { doc, out, code, judged } = run;
    assert.ok(judged, out);
    assert.equal(code, 7, out);
    assert.equal(doc.verdict, 'suspect');
    namesTheHost(doc, 4, out);
    withinBudgets(doc);
    await noLeftovers();
  });

  // ≈3× as calibrated; a busier or calmer minute can make it milder or stronger, and the host is named as a suspect
  // (exit 7) or, within the 50 % margin, as degraded (exit 8): the host either way.
  it("h2 throttled so that its pairs carry 0.3 of the others' busbw (mild: ≈3× slower) → h2 named as the host, not as links", async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    const run = await throttledRun(2, 0.3, RULE, 'throttled-mild', t);
    if (skippedAsUnclean(t, run)) return;
    const { doc, out, code, judged } = run;
    assert.ok(judged, out);
    assert.ok(code === 7 || code === 8, out);
    namesTheHost(doc, 2, out);
    // re-tested and slow again, or so clearly slow in the pairs stage that no re-test was run
    const retest = doc.stages.find((s) => s.name === 'retest');
    if (doc.suspects[0] && doc.suspects[0].confirmedBy === 'retest') {
      assert.ok(
        retest!.groups.some((g) => g.hosts.includes(host(2)) && (g.state === 'slow' || g.state === 'failed')),
        're-tested and slow again',
      );
    } else if (doc.suspects[0]) assert.equal(doc.suspects[0].confirmedBy, 'pairs');
    withinBudgets(doc);
    await noLeftovers();
  });

  // A steady 22 % degradation at the default margin (25 %): some of h3's pairs cross the margin, some do not (issue
  // #41 named two of them as links). The host, as a suspect or as degraded, whichever the load makes of it.
  it("h3 throttled to 0.78 of the others' busbw (degraded), default margin → h3 named (suspect or degraded), no link", async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    const { doc, out, code, judged } = await throttledRun(3, 0.78, ['--max-noise', '80'], 'throttled-degraded', t);
    // a 22 % fault inside this machine's noise (or beside another slow pair) in every attempt: nothing to judge
    if (!judged) {
      t.skip(`no run of the 3 showed h3 at 0.78 slow alone here (load ${load()}): see the diagnostics`);
      return;
    }
    assert.ok(code === 7 || code === 8, out);
    namesTheHost(doc, 3, out);
    withinBudgets(doc);
    await noLeftovers();
  });

  it('--max-time 10s with a throttled host → stopped in time, partial, the stages not run listed, only that host named', async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    throttle(4, `${Math.max(1, Math.round(((await healthyBusbw('max-time')) * 8000) / 25))}mbit`);
    try {
      const file = join(dir, 'max-time.json');
      const started = Date.now();
      const r = locate(['--hosts', FOUR, ...RULE, '--max-time', '10s', '-J', file, ...RUN_ARGS]);
      const wall = (Date.now() - started) / 1000;
      assert.ok(r.code === 7 || r.code === 6, `${r.code}\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, /^locate: max time 10 s; every job stopped at 1\.5 × a healthy job's duration$/m);
      // 10 s (a healthy run of these short jobs takes about 30 s here), then the running jobs stopped (SIGTERM, 3 s
      // grace) and the verdict written
      assert.ok(wall < 10 + 20, `took ${wall} s`);
      const doc = verdict(file);
      assert.equal(doc.partial, true);
      assert.equal(doc.maxTimeSec, 10);
      assert.ok(doc.notRun.includes('whole-job'), doc.notRun.join(', '));
      assert.match(doc.reason, /^partial \(not run: /);
      assert.match(r.stdout, /^# partial: not run: /m);
      for (const x of [...doc.suspects.map((s) => [s.host]), ...doc.links.map((l) => l.hosts)])
        assert.ok(x.includes(host(4)), r.stdout);
      assert.ok(
        [...doc.suspects, ...doc.links].every(
          (x) => x.confirmedBy !== 'retest' || doc.stages.some((s) => s.name === 'retest'),
        ),
      );
    } finally {
      throttle(4, null);
    }
    await noLeftovers();
  });

  it('a host that resolves but cannot be reached → one line naming it, exit 5, nothing left running', async (t) => {
    if (skipReason) {
      t.skip(skipReason);
      return;
    }
    const r = locate(['--hosts', `${host(1)},${host(5)}`, '--quiet', ...RUN_ARGS], 120_000);
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr.trimEnd(), new RegExp(`^collbench: locate: host '${host(5)}' unreachable: `));
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    await noLeftovers();
  });
});
