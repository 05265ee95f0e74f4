// `collbench locate --hosts h1,h2,… [--np-per-host K] [-J verdict.json] [-- run arguments]`: names the host or link
// that slows a multi-host job down. Every measurement is a child job of collbench itself (all_reduce --np … --hosts …,
// an argument array, never a shell) writing its JSON report to a temporary file; the stages, the schedule and the
// decision rule live in bench/locate/. Open MPI's configuration comes from the environment (OMPI_MCA_*), untouched.
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failureLine, startChild, type ChildOutcome, type RunningChild } from '../compare/runner.js';
import { EXIT, UsageError } from '../core/errors.js';
import { mpirunPlan } from '../launch/mpirun.js';
import { writeFileAtomic } from '../report/atomic-write.js';
import { isoLocal } from '../report/exporters/json.js';
import { OutputError } from '../report/outputs.js';
import { ARGV_ENV } from '../report/provenance.js';
import { reportErrors, type ReportDocument } from '../report/schema.js';
import {
  analyzeStage, attributeHostGroups, attributePairs, formatP, goodHosts,
  type Attribution, type GroupResult, type GroupSamples, type StageAnalysis,
} from '../locate/decide.js';
import {
  LOCATE_KIND, LOCATE_SCHEMA_VERSION, renderLocateText,
  type LinkSuspect, type LocateDocument, type LocateJob, type LocateStage, type Suspect, type Verdict,
} from '../locate/document.js';
import { DEFAULT_RUN_ARGS, LOCATE_USAGE, parseLocateArgs, type LocateOptions, type PlanRequest } from '../locate/options.js';
import { locatePlan, pairRounds } from '../locate/schedule.js';

export interface LocateIO { out: (line: string) => void; err: (line: string) => void }

/** A host that resolves but where mpirun cannot start a process: exit 5, naming it. */
export class UnreachableHostError extends Error {}

/** Progress lines and children's process groups; stop() ends every running job (Ctrl-C on locate). */
class Session {
  readonly running = new Set<RunningChild>();
  interrupted = false;
  readonly env: NodeJS.ProcessEnv;
  constructor(readonly opts: LocateOptions, readonly dir: string, readonly scriptPath: string, readonly io: LocateIO) {
    this.env = { ...process.env };
    delete this.env[ARGV_ENV]; // each job records its own command line
  }

  readonly onSignal = (): void => { this.interrupted = true; for (const c of this.running) c.stop(); };

  progress(line: string): void { if (!this.opts.quiet) this.io.err(`locate: ${line}`); }

  async child(command: string, args: string[], timeoutSec: number): Promise<ChildOutcome> {
    const c = startChild({ command, args, env: this.env, timeoutMs: timeoutSec * 1000, graceMs: 3000 });
    this.running.add(c);
    try {
      return await c.done;
    } finally {
      this.running.delete(c);
    }
  }

  /** One all_reduce job over `hosts` with K ranks each; its samples per size (busbw GB/s per iteration, both halves). */
  async job(id: string, hosts: string[], repeat: number): Promise<{ job: LocateJob; samples: Map<number, number[]> }> {
    const k = this.opts.npPerHost;
    const report = join(this.dir, `${id.replace(/[^A-Za-z0-9._-]/g, '_')}-r${repeat}.json`);
    rmSync(report, { force: true });
    const args = [...process.execArgv, this.scriptPath, 'all_reduce', '--np', String(hosts.length * k),
      '--hosts', hosts.map((h) => `${h}:${k}`).join(','), ...DEFAULT_RUN_ARGS, ...this.opts.runArgs,
      '-I', '1', '-J', report, '--json-format', 'collbench', '--quiet'];
    const o = this.interrupted ? null : await this.child(process.execPath, args, this.opts.timeoutSec);
    const samples = new Map<number, number[]>();
    let status: LocateJob['status'] = 'ok';
    let error: string | null = null;
    if (o === null || o.interrupted) { status = 'interrupted'; error = 'interrupted'; }
    else if (o.timedOut) { status = 'timeout'; error = failureLine(o, this.opts.timeoutSec); }
    else if (o.exitCode !== 0) { status = 'failed'; error = failureLine(o, this.opts.timeoutSec); }
    else {
      const doc = readReport(report);
      if (typeof doc === 'string') { status = 'failed'; error = doc; }
      else for (const [size, values] of samplesOf(doc)) samples.set(size, values);
      if (status === 'ok' && samples.size === 0) { status = 'failed'; error = 'the report has no per-iteration samples'; }
    }
    this.progress(`${id} (repeat ${repeat}): ${status}${error ? ` (${error})` : ''}${o ? ` ${o.durationSec.toFixed(1)} s` : ''}`);
    return { job: { id, hosts, repeat, status, error, durationSec: o?.durationSec ?? 0 }, samples };
  }

  /**
   * Runs `rounds` (each a list of groups whose jobs run at the same time) `repeats` times, reversing the round
   * order on even repeats so that a drift in time does not favour the groups measured first.
   */
  async measure(rounds: { id: string; hosts: string[] }[][], repeats: number): Promise<{ groups: GroupSamples[]; jobs: LocateJob[] }> {
    const byId = new Map<string, GroupSamples>();
    const jobs: LocateJob[] = [];
    for (const round of rounds) for (const g of round) byId.set(g.id, { id: g.id, hosts: g.hosts, bySize: new Map(), failed: null });
    for (let r = 1; r <= repeats && !this.interrupted; r++) {
      const order = r % 2 === 1 ? rounds : [...rounds].reverse();
      for (const round of order) {
        if (this.interrupted) break;
        const width = this.opts.parallel > 0 ? this.opts.parallel : round.length;
        const results: Awaited<ReturnType<Session['job']>>[] = [];
        for (let i = 0; i < round.length; i += width) {
          results.push(...await Promise.all(round.slice(i, i + width).map((g) => this.job(g.id, g.hosts, r))));
        }
        results.forEach((res, i) => {
          const group = byId.get(round[i]!.id)!;
          jobs.push(res.job);
          if (res.job.status !== 'ok') { group.failed ??= res.job.error; return; }
          for (const [size, values] of res.samples) {
            const runs = group.bySize.get(size) ?? [];
            runs.push(values);
            group.bySize.set(size, runs);
          }
        });
      }
    }
    return { groups: [...byId.values()], jobs };
  }
}

function readReport(path: string): ReportDocument | string {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'the job wrote no report' : `unreadable report: ${(e as Error).message}`;
  }
  const errors = reportErrors(json);
  if (errors.length) return `report does not match the schema: ${errors.slice(0, 2).join('; ')}`;
  return json as ReportDocument;
}

/** Per size, every per-iteration busbw (GB/s) of both halves: the row's busbw scaled by its mean time / the sample. */
export function samplesOf(doc: ReportDocument): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const row of doc.rows) {
    for (const half of [row.outOfPlace, row.inPlace]) {
      if (!half.perIter || half.busBwGBps === null || half.timeUs === null) continue;
      const list = out.get(row.sizeBytes) ?? [];
      for (const s of half.perIter.samplesUs) if (s > 0) list.push((half.busBwGBps * half.timeUs) / s);
      out.set(row.sizeBytes, list);
    }
  }
  return out;
}

/** Names that do not resolve are typos (exit 2). */
async function checkResolvable(hosts: string[]): Promise<void> {
  const failed = (await Promise.all(hosts.map(async (h) => {
    try { await lookup(h); return null; } catch { return h; }
  }))).filter((h): h is string => h !== null);
  if (failed.length) throw new UsageError(`locate: unknown host${failed.length > 1 ? 's' : ''} ${failed.map((h) => `'${h}'`).join(', ')} (does not resolve)`);
}

/**
 * Can mpirun start a process on every host? One job over all hosts; when it fails, one job per host (in parallel,
 * a few at a time) names those that cannot be reached.
 */
async function checkReachable(s: Session, hosts: string[]): Promise<void> {
  const probe = (list: string[]): Promise<ChildOutcome> => {
    const plan = mpirunPlan({ np: list.length, hosts: list.join(','), program: [process.execPath, '-e', 'process.stdout.write(require("os").hostname())'], args: [], env: s.env });
    return s.child(plan.command, plan.args, Math.min(s.opts.timeoutSec, 120));
  };
  const all = await probe(hosts);
  if (all.exitCode === 0 && !all.timedOut) return;
  if (s.interrupted) throw new UnreachableHostError('locate: interrupted');
  s.progress(`not every host can be reached (${failureLine(all, 120)}); trying each one`);
  const bad: { host: string; why: string }[] = [];
  for (let i = 0; i < hosts.length; i += 8) {
    const batch = hosts.slice(i, i + 8);
    const res = await Promise.all(batch.map((h) => probe([h])));
    res.forEach((r, j) => { if (r.exitCode !== 0 || r.timedOut) bad.push({ host: batch[j]!, why: failureLine(r, 120) }); });
  }
  if (bad.length) {
    throw new UnreachableHostError(`locate: host${bad.length > 1 ? 's' : ''} ${bad.map((b) => `'${b.host}'`).join(', ')} unreachable: mpirun cannot start a process there (${bad[0]!.why})`);
  }
  throw new UnreachableHostError(`locate: mpirun cannot start a job over all hosts although each one works alone (${failureLine(all, 120)})`);
}

function stageOf(name: LocateStage['name'], a: StageAnalysis, jobs: LocateJob[]): LocateStage {
  return { name, referenceNote: a.referenceNote, reference: a.reference, noise: a.noise, groups: a.groups, jobs };
}

const pairId = (a: string, b: string): string => `${a}+${b}`;
const ratioText = (g: GroupResult): string => (g.ratio === null ? `failed (${g.failed})` : `${(g.ratio * 100).toFixed(0)}% of the reference (p ${formatP(g.pValue)})`);

interface Retest { subject: GroupResult; control: GroupResult | null; stage: LocateStage }

/**
 * One suspect again: with a known-good partner (or the link itself), beside a control pair of two other hosts
 * measured at the same time (known-good ones first; any others when there are not enough), so that both see the
 * same load. `ranked` is every host, best first.
 */
async function retest(s: Session, hostsUnder: string[], ranked: string[], pairsStage: StageAnalysis, pairGroups: GroupSamples[]): Promise<Retest> {
  const partner = hostsUnder.length === 1 ? ranked.find((g) => !hostsUnder.includes(g)) : undefined;
  const subjectHosts = hostsUnder.length === 1 ? [hostsUnder[0]!, partner!] : hostsUnder;
  const others = ranked.filter((g) => !subjectHosts.includes(g));
  const subject = { id: `retest:${subjectHosts.join('+')}`, hosts: subjectHosts };
  const round: { id: string; hosts: string[] }[] = [subject];
  let controlId: string | null = null;
  if (others.length >= 2) {
    controlId = `control:${others[0]}+${others[1]}`;
    round.push({ id: controlId, hosts: [others[0]!, others[1]!] });
  }
  const { groups, jobs } = await s.measure([round], s.opts.repeats);
  const subjectSamples = groups.find((g) => g.id === subject.id)!;
  // Without a control the pairs stage's reference groups stand in for it (measured earlier).
  const refIds = new Set(pairsStage.groups.filter((g) => g.state === 'ok').sort((a, b) => (b.ratio ?? 0) - (a.ratio ?? 0))
    .slice(0, Math.max(1, Math.ceil(pairsStage.groups.length / 3))).map((g) => g.id));
  const control = controlId ? groups.filter((g) => g.id === controlId) : pairGroups.filter((g) => refIds.has(g.id));
  const a = analyzeStage([subjectSamples], s.opts.rule, control);
  if (controlId) {
    const c = analyzeStage(groups.filter((g) => g.id === controlId), s.opts.rule, control).groups[0]!;
    a.groups.push(c);
  }
  return { subject: a.groups[0]!, control: a.groups[1] ?? null, stage: stageOf('retest', a, jobs) };
}

function confidenceOf(first: (number | null)[], second: number | null): number {
  const ps = [...first, second].map((p) => p ?? 1);
  return Math.max(0, 1 - Math.max(...ps));
}

async function runLocate(s: Session, argv: string[]): Promise<LocateDocument> {
  const { opts } = s;
  const hosts = opts.hosts;
  const startTime = new Date();
  const stages: LocateStage[] = [];
  const suspects: Suspect[] = [];
  const links: LinkSuspect[] = [];
  let verdict = 'healthy' as Verdict;
  let reason = '';
  let advice: string | null = null;
  const inconclusive = (why: string, next: string): void => {
    if (verdict !== 'suspect') verdict = 'inconclusive';
    reason = reason ? `${reason}; ${why}` : why;
    advice ??= next;
  };
  const rerun = `collbench locate --hosts ${hosts.join(',')}${opts.npPerHost > 1 ? ` --np-per-host ${opts.npPerHost}` : ''}`;

  // 1. The whole job: the symptom (reported against the pairs' reference; not used to decide).
  s.progress(`stage whole-job: ${hosts.length} hosts × ${opts.npPerHost}`);
  const whole = await s.measure([[{ id: 'whole-job', hosts }]], 1);

  // 2. Each host alone (K ranks), all at once.
  let hostAttr: Attribution | null = null;
  let hostStage: StageAnalysis | null = null;
  if (opts.npPerHost > 1 && !s.interrupted) {
    s.progress(`stage host-groups: ${hosts.length} hosts at once, ${opts.repeats} repeats`);
    const m = await s.measure([hosts.map((h) => ({ id: h, hosts: [h] }))], opts.repeats);
    hostStage = analyzeStage(m.groups, opts.rule);
    hostAttr = attributeHostGroups(hostStage.groups);
    stages.push(stageOf('host-groups', hostStage, m.jobs));
  }

  // 3. Pairs, round-robin, disjoint pairs at once.
  const rounds = pairRounds(hosts.length, opts.schedule).map((round) => round.map(([a, b]) => ({ id: pairId(hosts[a]!, hosts[b]!), hosts: [hosts[a]!, hosts[b]!] })));
  s.progress(`stage pairs: ${rounds.length} rounds × ${opts.repeats} repeats`);
  const pm = s.interrupted ? { groups: [], jobs: [] } : await s.measure(rounds, opts.repeats);
  const pairsStage = analyzeStage(pm.groups, opts.rule);
  const wholeStage = analyzeStage(whole.groups, opts.rule, pm.groups.filter((g) => pairsStage.groups.find((r) => r.id === g.id)?.state === 'ok'));
  stages.unshift(stageOf('whole-job', wholeStage, whole.jobs));
  stages.push(stageOf('pairs', pairsStage, pm.jobs));
  const pairAttr = attributePairs(hosts, pairsStage.groups);

  if (s.interrupted) {
    inconclusive('interrupted before the stages finished', `run it again: ${rerun}`);
  } else if (pm.groups.length && pairsStage.groups.filter((g) => g.state === 'failed').length * 2 > pairsStage.groups.length) {
    const first = pairsStage.groups.find((g) => g.state === 'failed')!;
    inconclusive(`most pair jobs failed (${first.id}: ${first.failed})`, 'check that a plain all_reduce_perf --np 2 --hosts runs between two of these hosts');
  } else if (hosts.length === 2 && opts.npPerHost === 1) {
    inconclusive('2 hosts make one pair: there is no second pair to compare it with', `add a third host known to be good: ${rerun},<good host>`);
  } else if (pairsStage.noise !== null && pairsStage.noise > opts.rule.maxNoise) {
    inconclusive(`noise too high: the same pair's busbw moved by ${pct(pairsStage.noise)} between repeats (limit ${pct(opts.rule.maxNoise)})`,
      `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
  } else {
    const bad = [...(hostAttr?.hostSuspects ?? []).map((h) => ({ kind: 'host' as const, stage: 'host-groups' as const, hosts: [h.host], found: h.pairs })),
      ...pairAttr.hostSuspects.filter((h) => !(hostAttr?.hostSuspects ?? []).some((x) => x.host === h.host))
        .map((h) => ({ kind: 'host' as const, stage: 'pairs' as const, hosts: [h.host], found: h.pairs })),
      ...pairAttr.linkSuspects.map((p) => ({ kind: 'link' as const, stage: 'pairs' as const, hosts: p.hosts, found: [p] }))];
    const suspectHosts = new Set(bad.flatMap((b) => (b.kind === 'host' ? b.hosts : [])));
    if (suspectHosts.size * 2 > hosts.length) {
      inconclusive(`${suspectHosts.size} of ${hosts.length} hosts look slow: with most hosts slow there is no good reference`,
        'run locate on a subset of hosts that includes some known to be good');
    } else {
      const suspected = new Set(bad.flatMap((b) => b.hosts));
      const good = goodHosts(hosts, pairsStage.groups, suspected);
      // every host, known-good ones first: partners come from the good ones, controls may take the rest
      const ranked = [...good, ...goodHosts(hosts, pairsStage.groups, new Set(good))];
      for (const b of bad) {
        if (s.interrupted) break;
        if (b.kind === 'host' && good.length === 0) { inconclusive(`no known-good partner to re-test ${b.hosts[0]} with`, 'add hosts known to be good'); continue; }
        s.progress(`stage retest: ${b.hosts.join(' - ')}`);
        const r = await retest(s, b.hosts, ranked, pairsStage, pm.groups);
        stages.push(r.stage);
        const found = b.found.map((g) => `${g.hosts.join('-')} ${ratioText(g)}`).join(', ');
        const again = `re-test ${r.subject.hosts.join('-')}: ${ratioText(r.subject)}${r.control ? ` beside control ${r.control.hosts.join('-')}` : ''}`;
        if (r.subject.state === 'slow' || r.subject.state === 'failed') {
          const confidence = confidenceOf(b.found.map((g) => g.pValue ?? 0), r.subject.pValue ?? 0);
          const what = b.stage === 'host-groups' ? 'its own ranks are slow together' : `every pair with it is slow`;
          if (b.kind === 'host') suspects.push({ host: b.hosts[0]!, confidence, ratio: r.subject.ratio, stage: b.stage, evidence: `${what}: ${found}; ${again}` });
          else links.push({ hosts: [b.hosts[0]!, b.hosts[1]!], confidence, ratio: r.subject.ratio, evidence: `only this pair is slow: ${found}; both hosts are fine with others; ${again}` });
          verdict = 'suspect';
        } else {
          inconclusive(`${b.hosts.join(' - ')} was slow (${found}) but not in its re-test (${ratioText(r.subject)}): intermittent, or noise`,
            `run it again, with more repeats: ${rerun} --repeats ${opts.repeats + 2}`);
        }
      }
      // Below the margin but not in every repeat or not significantly: measured again beside a control; cleared
      // when fine there, else the verdict cannot be healthy.
      const uncertain = [...pairAttr.uncertain, ...(hostAttr?.uncertain ?? [])]
        .filter((g) => !g.hosts.some((h) => suspects.some((x) => x.host === h)));
      if (uncertain.length > MAX_UNCERTAIN_RETESTS) {
        inconclusive(`${uncertain.length} groups below the margin but not consistently (${uncertain.map((g) => g.hosts.join('-')).join(', ')}): noise`,
          `run on an idle fabric, or with more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
      } else {
        for (const u of uncertain) {
          if (s.interrupted) break;
          s.progress(`stage retest (uncertain): ${u.hosts.join(' - ')}`);
          const r = await retest(s, u.hosts, ranked, pairsStage, pm.groups);
          stages.push(r.stage);
          if (r.subject.state !== 'ok') {
            inconclusive(`${u.hosts.join('-')} below the margin in the pairs stage (${ratioText(u)}, repeats ${u.repeatRatios.map((x) => x.toFixed(2)).join(' ')}) and again in its re-test (${ratioText(r.subject)}), not consistently enough to name it`,
              `more samples: ${rerun} --repeats ${opts.repeats + 2} -- -n 50`);
          }
        }
      }
    }
  }
  if (verdict === 'healthy') {
    const worst = [...pairsStage.groups, ...(hostStage?.groups ?? [])].filter((g) => g.ratio !== null).sort((a, b) => a.ratio! - b.ratio!)[0];
    reason = `no group slower than ${pct(1 - opts.rule.margin)} of the reference${worst ? ` (slowest ${worst.hosts.join('-')}: ${ratioText(worst)})` : ''}`;
  } else if (verdict === 'suspect') {
    const named = [...suspects.map((x) => `host ${x.host}`), ...links.map((l) => `link ${l.hosts.join(' - ')}`)];
    reason = `${named.join(', ')} slow in the pairwise stage and again in the re-test${reason ? `; also: ${reason}` : ''}`;
  }
  return {
    kind: LOCATE_KIND, schemaVersion: LOCATE_SCHEMA_VERSION, verdict,
    exitCode: verdict === 'healthy' ? EXIT.OK : verdict === 'suspect' ? EXIT.WRONG_RESULTS : EXIT.INCONCLUSIVE,
    reason, advice: verdict === 'inconclusive' ? advice : null,
    startTime: isoLocal(startTime), endTime: isoLocal(new Date()), argv: ['collbench', 'locate', ...argv],
    hosts, npPerHost: opts.npPerHost, repeats: opts.repeats, runArgs: opts.runArgs,
    rule: { ...opts.rule, reference: 'median of the best third of the groups per size, or a control pair measured at the same time',
      test: 'one-sided Mann-Whitney U (normal approximation, tie-corrected) of the per-iteration busbw ratios' },
    suspects, links, stages,
  };
}

const pct = (v: number): string => `${(v * 100).toFixed(0)}%`;
/** More groups than this below the margin but not consistently: the stage is noise, not worth re-testing each. */
const MAX_UNCERTAIN_RETESTS = 3;

function renderPlan(p: PlanRequest): string[] {
  const out = [`# collbench locate --plan: ${p.npPerHost} rank(s) per host, ${p.repeats} repeats, ${p.schedule} pairs, ` +
    `${p.jobSeconds} s per job, one suspect re-tested`];
  out.push(`# ${'hosts'.padStart(6)} ${'stage'.padEnd(12)} ${'rounds'.padStart(7)} ${'jobs/round'.padStart(10)} ${'ranks/job'.padStart(9)} ${'jobs'.padStart(9)}  note`);
  for (const n of p.counts) {
    const plan = locatePlan({ hosts: n, npPerHost: p.npPerHost, repeats: p.repeats, schedule: p.schedule, perJobSec: p.jobSeconds });
    for (const st of plan.stages) {
      out.push(`  ${String(n).padStart(6)} ${st.name.padEnd(12)} ${String(st.rounds).padStart(7)} ${String(st.jobsPerRound).padStart(10)} ` +
        `${String(st.ranksPerJob).padStart(9)} ${String(st.jobs).padStart(9)}  ${st.note}`);
    }
    const h = plan.wallSec / 3600;
    out.push(`  ${String(n).padStart(6)} ${'total'.padEnd(12)} ${String(plan.totalRounds).padStart(7)} rounds, wall time ≈ ${plan.wallSec.toFixed(0)} s` +
      `${h >= 1 ? ` (${h.toFixed(1)} h)` : ''}`);
  }
  return out;
}

export async function locateCommand(argv: string[], scriptPath: string, io: LocateIO): Promise<number> {
  const parsed = parseLocateArgs(argv);
  if (parsed.kind === 'help') { io.out(LOCATE_USAGE); return EXIT.OK; }
  if (parsed.kind === 'plan') { for (const l of renderPlan(parsed.plan)) io.out(l); return EXIT.OK; }
  const opts = parsed.options;
  await checkResolvable(opts.hosts);
  const dir = mkdtempSync(join(tmpdir(), 'collbench-locate-'));
  const s = new Session(opts, dir, scriptPath, io);
  process.on('SIGINT', s.onSignal);
  process.on('SIGTERM', s.onSignal);
  try {
    s.progress(`checking that mpirun reaches ${opts.hosts.length} hosts`);
    await checkReachable(s, opts.hosts);
    const doc = await runLocate(s, argv);
    const toStdout = opts.jsonFile === '-';
    for (const line of renderLocateText(doc)) (toStdout ? io.err : io.out)(line);
    if (opts.jsonFile !== null) {
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (toStdout) io.out(text.trimEnd());
      else {
        try {
          writeFileAtomic(opts.jsonFile, text);
        } catch (e) {
          throw new OutputError(`locate: -J: cannot write ${opts.jsonFile}: ${(e as Error).message}`);
        }
      }
    }
    return s.interrupted ? 130 : doc.exitCode;
  } finally {
    process.off('SIGINT', s.onSignal);
    process.off('SIGTERM', s.onSignal);
    rmSync(dir, { recursive: true, force: true });
  }
}
