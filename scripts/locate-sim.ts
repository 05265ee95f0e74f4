// Simulation of `collbench locate`'s decision rule: the real stage flow and rule (bench/locate/flow.ts, decide.ts) fed
// with simulated jobs instead of mpirun ones, under a noise model, to count false suspects and misses over many
// trials. The README's "locate: decision rule under noise" table comes from this script.
//   node --import tsx scripts/locate-sim.ts [--trials 100] [--hosts 8] [--seed 1] [--margins 25,50] [--repeats 2]
//     [--noises 0,1,2] [--iterations 40]
// Noise model, per job: a lognormal factor (sigma `job`), and with probability `contend` a contention factor
// uniform in [0.3, 0.9] (another job on the host's CPUs or links); per iteration: a lognormal factor (sigma `iter`)
// and with probability `dip` a dip uniform in [0.2, 1]. A fault caps every iteration of each job that crosses it at
// 1/slowdown of the healthy busbw (a host fault: every job with that host; a link fault: the jobs on that pair).
import { parseArgs } from 'node:util';
import type { GroupSamples } from '../bench/locate/decide.js';
import type { LocateJob } from '../bench/locate/document.js';
import { runLocate, type GroupSpec, type Measurer } from '../bench/locate/flow.js';
import type { LocateOptions } from '../bench/locate/options.js';
import { DEFAULT_RULE } from '../bench/locate/decide.js';

interface Noise { name: string; job: number; iter: number; contend: number; dip: number }
interface Fault { kind: 'none' | 'host' | 'link'; slowdown: number }

const NOISES: Noise[] = [
  { name: 'calm (cluster-like: ±5 % per job)', job: 0.05, iter: 0.03, contend: 0.02, dip: 0.01 },
  { name: 'busy (±15 %, 20 % of jobs contended)', job: 0.15, iter: 0.1, contend: 0.2, dip: 0.05 },
  { name: 'shared 2-core VM (±30 %, 40 % contended)', job: 0.3, iter: 0.2, contend: 0.4, dip: 0.1 },
];
const FAULTS: Fault[] = [
  { kind: 'none', slowdown: 1 },
  ...[1.25, 1.5, 2, 3, 10].flatMap((s): Fault[] => [{ kind: 'host', slowdown: s }, { kind: 'link', slowdown: s }]),
];

/** mulberry32: a small seeded generator, so that a table can be reproduced. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class SimMeasurer implements Measurer {
  interrupted = false;
  private readonly gauss: () => number;
  constructor(readonly opts: LocateOptions, private readonly noise: Noise, private readonly fault: Fault,
    private readonly badHost: string, private readonly badLink: [string, string], private readonly rand: () => number,
    private readonly iterations: number) {
    this.gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  }

  progress(): void { /* silent */ }

  private cap(hosts: string[]): number {
    if (this.fault.kind === 'host' && hosts.includes(this.badHost)) return 1 / this.fault.slowdown;
    if (this.fault.kind === 'link' && hosts.includes(this.badLink[0]) && hosts.includes(this.badLink[1])) return 1 / this.fault.slowdown;
    return 1;
  }

  measure(rounds: GroupSpec[][], repeats: number): Promise<{ groups: GroupSamples[]; jobs: LocateJob[] }> {
    const groups: GroupSamples[] = [];
    const jobs: LocateJob[] = [];
    const n = this.noise;
    for (const g of rounds.flat()) {
      const runs: number[][] = [];
      for (let r = 1; r <= repeats; r++) {
        let job = Math.exp(n.job * this.gauss());
        if (this.rand() < n.contend) job *= 0.3 + 0.6 * this.rand();
        const samples: number[] = [];
        for (let i = 0; i < this.iterations; i++) {
          let v = 10 * job * Math.exp(n.iter * this.gauss());
          if (this.rand() < n.dip) v *= 0.2 + 0.8 * this.rand();
          samples.push(Math.min(v, 10 * this.cap(g.hosts) * Math.exp(0.02 * this.gauss())));
        }
        runs.push(samples);
        jobs.push({ id: g.id, hosts: g.hosts, repeat: r, status: 'ok', error: null, durationSec: 0 });
      }
      groups.push({ id: g.id, hosts: g.hosts, bySize: new Map([[16 << 20, runs]]), failed: null });
    }
    return Promise.resolve({ groups, jobs });
  }
}

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '100' }, hosts: { type: 'string', default: '8' }, seed: { type: 'string', default: '1' },
    margins: { type: 'string', default: '25,50' }, iterations: { type: 'string', default: '40' },
    repeats: { type: 'string', default: '2' }, noises: { type: 'string', default: '0,1,2' },
  },
});
const trials = Number(values.trials), nHosts = Number(values.hosts), iterations = Number(values.iterations);
const repeats = Number(values.repeats);
const rand = rng(Number(values.seed));
const hosts = Array.from({ length: nHosts }, (_, i) => `n${i + 1}`);

console.log(`# ${trials} trials per line, ${nHosts} hosts, ${repeats} repeats, ${iterations} samples per job (20 iterations × 2 halves), alpha ${DEFAULT_RULE.alpha}`);
console.log('| noise | margin | fault | healthy | right suspect named | false suspect | inconclusive |');
console.log('|---|---|---|---|---|---|---|');
for (const noise of String(values.noises).split(',').map((i) => NOISES[Number(i)]!)) {
  for (const margin of String(values.margins).split(',').map(Number)) {
    for (const fault of FAULTS) {
      let healthy = 0, right = 0, wrong = 0, inconclusive = 0;
      for (let t = 0; t < trials; t++) {
        const bad = hosts[Math.floor(rand() * nHosts)]!;
        let other = hosts[Math.floor(rand() * nHosts)]!;
        while (other === bad) other = hosts[Math.floor(rand() * nHosts)]!;
        const opts: LocateOptions = {
          hosts, npPerHost: 1, jsonFile: null, repeats, rule: { ...DEFAULT_RULE, margin: margin / 100 }, schedule: 'all',
          timeoutSec: 600, parallel: 0, quiet: true, runArgs: [],
        };
        const doc = await runLocate(new SimMeasurer(opts, noise, fault, bad, [bad, other], rand, iterations), []);
        const namedHosts = doc.suspects.map((s) => s.host);
        const namedLinks = doc.links.map((l) => [...l.hosts].sort().join('-'));
        const expected = fault.kind === 'host' ? namedHosts.length === 1 && namedHosts[0] === bad && namedLinks.length === 0
          : fault.kind === 'link' ? namedLinks.length === 1 && namedLinks[0] === [bad, other].sort().join('-') && namedHosts.length === 0 : false;
        if (doc.verdict === 'healthy') healthy++;
        else if (doc.verdict === 'inconclusive') inconclusive++;
        else if (expected) right++;
        else wrong++;
      }
      const p = (k: number) => `${((100 * k) / trials).toFixed(1)}%`;
      const what = fault.kind === 'none' ? 'none' : `${fault.kind} ${fault.slowdown}× slower`;
      console.log(`| ${noise.name} | ${margin}% | ${what} | ${p(healthy)} | ${fault.kind === 'none' ? '-' : p(right)} | ${p(wrong)} | ${p(inconclusive)} |`);
    }
  }
}
