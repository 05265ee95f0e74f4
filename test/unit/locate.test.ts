// `collbench locate`'s pure parts: the round-robin and ring schedules, the rank test, the decision rule and host/link
// attribution, the option parser, and the whole stage flow driven by a deterministic in-memory Measurer (the
// netns test, test/cli/locate-netns.test.ts, drives it with real mpirun jobs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeStage, attributePairs, DEFAULT_RULE, mannWhitneyLess, type GroupSamples } from '../../bench/locate/decide.js';
import { locateErrors, type LocateJob } from '../../bench/locate/document.js';
import { runLocate, type GroupSpec, type Measurer } from '../../bench/locate/flow.js';
import { checkHosts, parseHostfile, parseLocateArgs, type LocateOptions } from '../../bench/locate/options.js';
import { locatePlan, ringRounds, roundRobin, type Pair } from '../../bench/locate/schedule.js';
import { UsageError } from '../../bench/core/errors.js';

function checkRounds(n: number, rounds: Pair[][]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const round of rounds) {
    const busy = new Set<number>();
    for (const [a, b] of round) {
      assert.ok(a < b && a >= 0 && b < n, `pair ${a},${b}`);
      assert.ok(!busy.has(a) && !busy.has(b), `round ${JSON.stringify(round)} is not disjoint`);
      busy.add(a).add(b);
      seen.set(`${a},${b}`, (seen.get(`${a},${b}`) ?? 0) + 1);
    }
  }
  return seen;
}

test('round-robin: every pair exactly once, in n−1 (even n) or n (odd n) rounds of disjoint pairs', () => {
  for (let n = 2; n <= 17; n++) {
    const rounds = roundRobin(n);
    assert.equal(rounds.length, n % 2 === 0 ? n - 1 : n, `n=${n}`);
    const seen = checkRounds(n, rounds);
    assert.equal(seen.size, (n * (n - 1)) / 2, `n=${n}`);
    assert.ok([...seen.values()].every((c) => c === 1));
  }
});

test('ring: every host in exactly two pairs with two different partners, 2 rounds (even n) or 3 (odd n)', () => {
  for (let n = 3; n <= 17; n++) {
    const rounds = ringRounds(n);
    assert.equal(rounds.length, n % 2 === 0 ? 2 : 3, `n=${n}`);
    const seen = checkRounds(n, rounds);
    const degree = new Array<number>(n).fill(0);
    for (const key of seen.keys()) for (const h of key.split(',').map(Number)) degree[h]!++;
    assert.deepEqual(degree, new Array<number>(n).fill(2), `n=${n}`);
  }
});

test('plan: rounds and wall time grow with n for all pairs, stay constant for the ring', () => {
  const all = locatePlan({ hosts: 1024, npPerHost: 1, repeats: 2, schedule: 'all', perJobSec: 10 });
  assert.equal(all.stages.find((s) => s.name === 'pairs')!.rounds, 2 * 1023);
  assert.equal(all.wallSec, all.totalRounds * 10);
  const ring = locatePlan({ hosts: 1024, npPerHost: 8, repeats: 2, schedule: 'ring', perJobSec: 10 });
  assert.equal(ring.stages.find((s) => s.name === 'pairs')!.rounds, 4);
  assert.equal(ring.stages.find((s) => s.name === 'host-groups')!.jobsPerRound, 1024);
});

test('Mann-Whitney: a shifted sample is significant, the same or a larger one is not', () => {
  const base = Array.from({ length: 20 }, (_, i) => 1 + (i % 5) * 0.01);
  assert.ok(mannWhitneyLess(base.map((v) => v * 0.5), base) < 0.001);
  assert.ok(mannWhitneyLess(base, base) > 0.3);
  assert.ok(mannWhitneyLess(base.map((v) => v * 2), base) > 0.99);
  assert.equal(mannWhitneyLess([], base), 1);
});

/** Deterministic per-iteration samples around `level` (±3 %), per repeat. */
function samples(level: number | number[], n = 16, repeats = 2): number[][] {
  return Array.from({ length: repeats }, (_, r) => Array.from({ length: n }, (_, i) =>
    (Array.isArray(level) ? level[r]! : level) * (1 + 0.03 * Math.sin(i * 1.7 + r))));
}
const group = (a: string, b: string, level: number | number[]): GroupSamples =>
  ({ id: `${a}+${b}`, hosts: [a, b], bySize: new Map([[4 << 20, samples(level)]]), failed: null });

test('decision: a host in only slow pairs is a host suspect; one slow pair between good hosts is a link suspect', () => {
  const hosts = ['a', 'b', 'c', 'd'];
  const bad = analyzeStage([group('a', 'b', 10), group('c', 'd', 2), group('a', 'c', 10), group('b', 'd', 2), group('a', 'd', 2), group('b', 'c', 9.5)], DEFAULT_RULE);
  const attr = attributePairs(hosts, bad.groups);
  assert.deepEqual(attr.hostSuspects.map((s) => s.host), ['d']);
  assert.deepEqual(attr.linkSuspects, []);
  const link = analyzeStage([group('a', 'b', 10), group('c', 'd', 10), group('a', 'c', 10), group('b', 'd', 10), group('a', 'd', 3), group('b', 'c', 10)], DEFAULT_RULE);
  const l = attributePairs(hosts, link.groups);
  assert.deepEqual(l.hostSuspects, []);
  assert.deepEqual(l.linkSuspects.map((g) => g.id), ['a+d']);
});

test('decision: slow in one repeat only is not slow (contention); within the margin is ok', () => {
  const a = analyzeStage([group('a', 'b', 10), group('c', 'd', 10), group('a', 'c', 10), group('b', 'd', [10, 3]), group('a', 'd', 8.5), group('b', 'c', 10)], DEFAULT_RULE);
  const state = Object.fromEntries(a.groups.map((g) => [g.id, g.state]));
  assert.equal(state['b+d'], 'ok'); // its level (90th percentile) comes from the good repeat
  assert.equal(state['a+d'], 'ok');
  assert.ok(a.noise !== null && a.noise < 0.05);
});

test('options: host lists, hostfiles, run arguments and --plan', () => {
  assert.deepEqual(parseHostfile('# cluster\nn1 slots=8\nn2:8\n\n  n3  # spare\n'), ['n1', 'n2', 'n3']);
  assert.throws(() => checkHosts(['a'], '--hosts'), /needs at least 2 hosts, got 1/);
  assert.throws(() => checkHosts(['a', 'b', 'a'], '--hosts'), /host 'a' is listed twice/);
  assert.throws(() => checkHosts(['a', 'b:4'], '--hosts'), /ranks per host come from --np-per-host/);
  assert.throws(() => parseLocateArgs([]), (e: unknown) => e instanceof UsageError && e.message === 'locate: no hosts: give --hosts or --hostfile');
  assert.throws(() => parseLocateArgs(['--hosts', 'a,b', '--hostfile', 'f']), /not both/);
  assert.throws(() => parseLocateArgs(['--hostfile', '/nonexistent/hosts']), /--hostfile: cannot read \/nonexistent\/hosts: ENOENT/);
  assert.throws(() => parseLocateArgs(['--hosts', 'a,b', '--', '-J', 'x.json']), /-J is set by locate itself/);
  assert.throws(() => parseLocateArgs(['--hosts', 'a,b', '--', 'all_reduce']), /give only flags after --/);
  const run = parseLocateArgs(['--hostfile', 'H', '--np-per-host', '2', '--margin', '40', '-J', 'v.json', '--', '-b', '1M'], () => 'x1\nx2\n');
  assert.equal(run.kind, 'run');
  if (run.kind === 'run') {
    assert.deepEqual(run.options.hosts, ['x1', 'x2']);
    assert.equal(run.options.npPerHost, 2);
    assert.equal(run.options.rule.margin, 0.4);
    assert.equal(run.options.jsonFile, 'v.json');
    assert.deepEqual(run.options.runArgs, ['-b', '1M']);
  }
  const plan = parseLocateArgs(['--plan', '8,64', '--pairs', 'ring']);
  assert.deepEqual(plan.kind === 'plan' && plan.plan.counts, [8, 64]);
});

/** Every job's busbw is 10 GB/s, capped by the slowest host or link it uses; a tiny deterministic wobble. */
class FakeMeasurer implements Measurer {
  interrupted = false;
  readonly calls: GroupSpec[][][] = [];
  constructor(readonly opts: LocateOptions, private readonly cap: (hosts: string[]) => number) {}
  progress(): void { /* quiet */ }
  measure(rounds: GroupSpec[][], repeats: number): Promise<{ groups: GroupSamples[]; jobs: LocateJob[] }> {
    this.calls.push(rounds);
    const flat = rounds.flat();
    return Promise.resolve({
      groups: flat.map((g) => ({ id: g.id, hosts: g.hosts, bySize: new Map([[4 << 20, samples(this.cap(g.hosts), 16, repeats)]]), failed: null })),
      jobs: flat.flatMap((g) => Array.from({ length: repeats }, (_, r) => ({ id: g.id, hosts: g.hosts, repeat: r + 1, status: 'ok' as const, error: null, durationSec: 1 }))),
    });
  }
}

const options = (hosts: string[]): LocateOptions => ({
  hosts, npPerHost: 1, jsonFile: null, repeats: 2, rule: DEFAULT_RULE, schedule: 'all', timeoutSec: 600, parallel: 0, quiet: true, runArgs: [],
});

test('flow: healthy, a slow host, a slow link, two hosts; every document matches the published schema', async () => {
  const hosts = ['h1', 'h2', 'h3', 'h4', 'h5'];
  const healthy = await runLocate(new FakeMeasurer(options(hosts), () => 10), []);
  assert.equal(healthy.verdict, 'healthy');
  assert.equal(healthy.exitCode, 0);
  assert.deepEqual(locateErrors(healthy), []);
  assert.deepEqual(healthy.stages.map((s) => s.name), ['whole-job', 'pairs']);

  const slowHost = new FakeMeasurer(options(hosts), (h) => (h.includes('h3') ? 1 : 10));
  const host = await runLocate(slowHost, []);
  assert.equal(host.verdict, 'suspect');
  assert.equal(host.exitCode, 7);
  assert.deepEqual(host.suspects.map((s) => s.host), ['h3']);
  assert.deepEqual(host.links, []);
  assert.deepEqual(locateErrors(host), []);
  // the re-test: h3 with a good partner, beside a control pair of two other hosts, at the same time
  const retest = slowHost.calls.at(-1)!;
  assert.equal(retest.length, 1);
  assert.equal(retest[0]!.length, 2);
  assert.ok(retest[0]![0]!.hosts.includes('h3'));
  assert.ok(!retest[0]![1]!.hosts.includes('h3'));

  const link = await runLocate(new FakeMeasurer(options(hosts), (h) => (h.includes('h2') && h.includes('h5') ? 2 : 10)), []);
  assert.equal(link.verdict, 'suspect');
  assert.deepEqual(link.suspects, []);
  assert.deepEqual(link.links.map((l) => l.hosts), [['h2', 'h5']]);

  const two = await runLocate(new FakeMeasurer(options(['a', 'b']), () => 10), []);
  assert.equal(two.verdict, 'inconclusive');
  assert.equal(two.exitCode, 6);
  assert.match(two.reason, /2 hosts make one pair/);
  assert.ok(two.advice);
  assert.deepEqual(locateErrors(two), []);
});

test('flow, several ranks per host: a host slow on its own (host-groups) is re-tested alone beside another host alone', async () => {
  const hosts = ['h1', 'h2', 'h3', 'h4'];
  const m = new FakeMeasurer({ ...options(hosts), npPerHost: 2 }, (h) => (h.length === 1 && h[0] === 'h3' ? 2 : 10));
  const doc = await runLocate(m, []);
  assert.deepEqual(doc.stages.map((s) => s.name), ['whole-job', 'host-groups', 'pairs', 'retest']);
  assert.equal(doc.verdict, 'suspect');
  assert.deepEqual(doc.suspects.map((s) => [s.host, s.stage]), [['h3', 'host-groups']]);
  const retest = m.calls.at(-1)![0]!;
  assert.deepEqual(retest.map((g) => g.hosts.length), [1, 1]);
  assert.deepEqual(retest[0]!.hosts, ['h3']);
  assert.deepEqual(locateErrors(doc), []);
});

test('flow: a pair slow in the pairs stage but fine in its re-test is cleared, not named: healthy', async () => {
  const hosts = ['h1', 'h2', 'h3', 'h4'];
  const m: FakeMeasurer = new FakeMeasurer(options(hosts), (h) => (m.calls.length <= 2 && h.length === 2 && h.includes('h1') && h.includes('h4') ? 2 : 10));
  const doc = await runLocate(m, []);
  assert.equal(doc.verdict, 'healthy', doc.reason);
  assert.deepEqual(doc.suspects, []);
  assert.deepEqual(doc.links, []);
  assert.deepEqual(doc.cleared.map((c) => c.hosts), [['h1', 'h4']]);
  assert.match(doc.reason, /cleared: h1-h4/);
  assert.deepEqual(locateErrors(doc), []);
});
