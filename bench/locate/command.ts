// `collbench locate --hosts h1,h2,… [--np-per-host K] [-J verdict.json] [-- run arguments]`: names the host or link
// that slows a multi-host job down, every measurement a child job of collbench itself (runs.ts) and the stages, the
// schedule and the decision rule in this folder. Open MPI's configuration comes from the environment, untouched.
import { lookup } from 'node:dns/promises';
import { withChildRuns } from '../engine/child-runs.js';
import { checkReachable, LocateJobs } from './runs.js';
import type { IO } from '../core/io.js';
import { EXIT, UsageError } from '../core/errors.js';
import { documentJson, writeDocument } from '../report/outputs.js';
import { formatSeconds, renderLocateText } from './document.js';
import { runLocate } from './flow.js';
import { LOCATE_OPTIONS, parseLocateArgs, type LocateOptions, type PlanRequest } from './options.js';
import { fitSchedule, locatePlan } from './schedule.js';
import { BUDGET_SLACK } from './budget.js';
import { commandHelp } from '../config/option-parser.js';

/** Names that do not resolve are typos (exit 2). */
async function checkResolvable(hosts: string[]): Promise<void> {
  const failed = (
    await Promise.all(
      hosts.map(async (h) => {
        try {
          await lookup(h);
          return null;
        } catch {
          return h;
        }
      }),
    )
  ).filter((h): h is string => h !== null);
  if (failed.length)
    throw new UsageError(
      `locate: unknown host${failed.length > 1 ? 's' : ''} ${failed.map((h) => `'${h}'`).join(', ')} (does not resolve)`,
    );
}

function renderPlan(p: PlanRequest): string[] {
  const out = [
    `# collbench locate --plan: ${p.npPerHost} rank(s) per host, ${p.repeats} repeats, ${p.schedule} pairs, ` +
      `${p.jobSeconds} s per job, one suspect re-tested`,
  ];
  out.push(
    `# ${'hosts'.padStart(6)} ${'stage'.padEnd(12)} ${'rounds'.padStart(7)} ${'jobs/round'.padStart(10)} ${'ranks/job'.padStart(9)} ${'jobs'.padStart(9)}  note`,
  );
  for (const n of p.counts) {
    const plan = locatePlan({
      hosts: n,
      npPerHost: p.npPerHost,
      repeats: p.repeats,
      schedule: p.schedule,
      perJobSec: p.jobSeconds,
    });
    for (const st of plan.stages) {
      out.push(
        `  ${String(n).padStart(6)} ${st.name.padEnd(12)} ${String(st.rounds).padStart(7)} ${String(st.jobsPerRound).padStart(10)} ` +
          `${String(st.ranksPerJob).padStart(9)} ${String(st.jobs).padStart(9)}  ${st.note}`,
      );
    }
    const h = plan.wallSec / 3600;
    out.push(
      `  ${String(n).padStart(6)} ${'total'.padEnd(12)} ${String(plan.totalRounds).padStart(7)} rounds, wall time ≈ ${plan.wallSec.toFixed(0)} s` +
        `${h >= 1 ? ` (${h.toFixed(1)} h)` : ''}`,
    );
  }
  return out;
}

export async function locateCommand(argv: string[], scriptPath: string, io: IO): Promise<number> {
  const parsed = parseLocateArgs(argv);
  if (parsed.kind === 'help') {
    io.out(commandHelp(LOCATE_OPTIONS));
    return EXIT.OK;
  }
  if (parsed.kind === 'plan') {
    for (const l of renderPlan(parsed.plan)) io.out(l);
    return EXIT.OK;
  }
  const given = parsed.options;
  await checkResolvable(given.hosts);
  const fit = fitSchedule({
    hosts: given.hosts.length,
    npPerHost: given.npPerHost,
    repeats: given.repeats,
    schedule: given.schedule,
    perJobSec: given.jobSeconds,
    maxSec: given.maxTimeSec,
  });
  const opts: LocateOptions = { ...given, repeats: fit.repeats, schedule: fit.schedule, scheduleNote: fit.note };
  return withChildRuns(scriptPath, { prefix: 'collbench-locate-' }, async (children) => {
    const s = new LocateJobs(opts, children, io);
    try {
      s.progress(
        `max time ${formatSeconds(opts.maxTimeSec)}${argv.some((a) => a.startsWith('--max-time')) ? '' : ' (the default; --max-time)'}` +
          `; every job stopped at ${BUDGET_SLACK} × a healthy job's duration`,
      );
      if (fit.note) s.progress(fit.note);
      s.startClock();
      s.progress(`checking that mpirun reaches ${opts.hosts.length} hosts`);
      await checkReachable(s, opts.hosts);
      const doc = await runLocate(s, argv);
      await writeDocument(doc, [{ flag: 'locate: -J', path: opts.jsonFile, render: documentJson }], io, {
        lines: renderLocateText(doc),
        besideStdout: 'stderr',
      });
      // Ctrl-C / SIGTERM: 128 + the signal as any interrupted command; stopped by --max-time: the (partial) verdict's own
      return children.signalExit() ?? doc.exitCode;
    } finally {
      s.stopClock();
    }
  });
}
