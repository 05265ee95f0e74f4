// `collbench locate`'s command line: its own flags before `--` (tokenize(), the one getopt-style parser), the host
// list (--hosts or an Open MPI / Slurm-style hostfile), and the run arguments after `--`, checked here with the run
// command's own parser so that a typo fails before any job starts. Pure apart from reading the hostfile.
import { readFileSync } from 'node:fs';
import { slurmAllocationHosts } from '../launch/slurm.js';
import { parseCommandLine, tokenize, RUN_OPTIONS, type OptionSpec } from '../config/parse.js';
import { parseDuration } from '../config/resolve.js';
import { UsageError } from '../core/errors.js';
import { DEFAULT_RULE, type DecisionRule } from './decide.js';
import { PAIR_SCHEDULES, type PairSchedule } from './schedule.js';

export const LOCATE_USAGE = `USAGE: collbench locate (--hosts h1,h2,… | --hostfile FILE) [options] [-- run arguments]
       collbench locate --plan 8,64,512,1024 [--np-per-host K] [--repeats R] [--pairs all|ring] [--job-seconds S]
  Finds the host or link that slows a job down. Stages, each a set of all_reduce_perf jobs started with mpirun:
    whole-job    every host together (the symptom; busbw compared with the pairs' reference)
    host-groups  each host alone with its --np-per-host ranks, all hosts at once (only when K > 1)
    pairs        every pair of hosts, in rounds of disjoint pairs that run at the same time (round-robin)
    retest       each suspect again with a known-good partner, beside a control pair of two good hosts
  Each stage runs --repeats times; a group is slow when its median busbw is below (1 − margin) × the reference AND
  a one-sided Mann-Whitney test over its per-iteration samples gives p < alpha. A host whose every pair is slow is
  a host suspect; a slow pair between otherwise good hosts is a link suspect; only a suspect slow again in its
  re-test is named. A host every pair of which is slower than every pair without it, within the margin, is
  degraded (host-level rank test, corrected over hosts). Every job has a time budget (1.5 × a healthy job's
  duration, measured in this run): a slow job is stopped there and keeps the sizes it finished.
Options:
  --hosts LIST          host names, comma-separated (at least 2, no duplicates)
  --hostfile FILE       one host per line (Open MPI "host slots=N" or "host:N" lines; # comments)
  --np-per-host K       ranks per host (default 1)
  -J, --json FILE       the verdict as JSON (kind "collbench-locate", schema/collbench-locate.v2.schema.json); - = stdout
  --repeats R           times each stage is measured, at least 2 (default 2)
  --margin PCT          how much slower than the reference a group must be, in percent (default 25)
  --alpha P             significance level of the rank test (default 0.01)
  --max-noise PCT       above this repeat-to-repeat change of a good pair's busbw, in percent, a run without a
                        confirmed suspect is inconclusive rather than healthy (default 50)
  --pairs all|ring      all pairs (n−1 rounds), or neighbour pairs only (2-3 rounds, for many hosts) (default all)
  --parallel N          at most N jobs of a round at once (default 0 = the whole round: its pairs share no host);
                        1 when the hosts share something the jobs compete for (CPUs of one machine, a shared uplink)
  --timeout S           seconds one job may take before it is stopped and counted as failed (default 600)
  --max-time DURATION   the whole run at most this long (90s, 30m, 2h; default 1h): the schedule is shortened to
                        fit before anything runs (fewer repeats, then ring pairs), and a run stopped there reports
                        what it found so far (verdict marked partial, the stages not run listed)
  --plan COUNTS         print the schedule and its cost for these host counts, run nothing
  --job-seconds S       the time one job takes, start-up included, for --plan and to fit --max-time (default 10)
  --quiet               no progress lines on stderr
Run arguments (after --) go to every job: flags of all_reduce_perf (-b, -e, -f, -n, -w, -d, --backend, …), not
  --np, --hosts, -J, -I or -N. Default sizes 4 MiB to 64 MiB (-b 4M -e 64M -f 4), -n 20 -w 2, -c 0.
Open MPI's own configuration comes from its environment (OMPI_MCA_plm_rsh_agent, OMPI_MCA_btl, …) and is honoured.
Exit status: 0 healthy, 7 a suspect named, 8 degraded (a host slower within the margin), 6 inconclusive (the
  reason and what to run are printed), 2 bad input, 5 a host cannot be reached (named).`;

/** Sizes that are bandwidth-bound on every fabric from TCP to NVLink, and short enough per job (docs/locate.md, "Sizes"). */
export const DEFAULT_RUN_ARGS: readonly string[] = ['-b', '4M', '-e', '64M', '-f', '4', '-n', '20', '-w', '2', '-c', '0'];

export interface LocateOptions {
  hosts: string[];
  npPerHost: number;
  jsonFile: string | null;
  repeats: number;
  rule: DecisionRule;
  schedule: PairSchedule;
  timeoutSec: number;
  /** Jobs at once within a round; 0 = the whole round. */
  parallel: number;
  quiet: boolean;
  /** Run arguments after `--`. */
  runArgs: string[];
  /** Timed iterations of a job (-n, from the run arguments). */
  iterations: number;
  /** --max-time: the whole run stops here and reports what it knows (partial). */
  maxTimeSec: number;
  /** How the schedule was shortened to fit --max-time (set before anything runs), or null. */
  scheduleNote: string | null;
  /** --job-seconds: the time one job is expected to take, to fit the schedule into --max-time. */
  jobSeconds: number;
}

/** --max-time when not given: long enough for all pairs of a few dozen hosts at the default sizes. */
export const DEFAULT_MAX_TIME_SEC = 3600;

export interface PlanRequest { counts: number[]; npPerHost: number; repeats: number; schedule: PairSchedule; jobSeconds: number }

const OPTIONS: readonly OptionSpec[] = [
  ...['hosts', 'hostfile', 'np-per-host', 'repeats', 'margin', 'alpha', 'max-noise', 'pairs', 'parallel', 'timeout', 'plan', 'job-seconds', 'max-time']
    .map((long): OptionSpec => ({ long, key: long, takesValue: true })),
  { short: 'J', long: 'json', key: 'json', takesValue: true, value: 'FILE' },
  { long: 'quiet', key: 'quiet', takesValue: false },
  { short: 'h', long: 'help', key: 'help', takesValue: false, stops: true },
];

function number(flag: string, text: string | undefined, dflt: number, min: number, max: number, integer: boolean): number {
  if (text === undefined) return dflt;
  const v = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    throw UsageError.forFlag(`locate: ${flag}`, `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got '${text}'`);
  }
  return v;
}

const HOST_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A host list: trimmed, each a plausible host name, no duplicates, at least two. */
export function checkHosts(hosts: string[], source: string): string[] {
  if (hosts.some((h) => h === '')) throw UsageError.forFlag(`locate: ${source}`, 'empty host name in the list');
  for (const h of hosts) {
    if (h.includes(':')) throw UsageError.forFlag(`locate: ${source}`, `'${h}': give host names only; ranks per host come from --np-per-host`);
    if (!HOST_RE.test(h)) throw UsageError.forFlag(`locate: ${source}`, `'${h}' is not a host name`);
  }
  const seen = new Set<string>();
  for (const h of hosts) {
    if (seen.has(h)) throw UsageError.forFlag(`locate: ${source}`, `host '${h}' is listed twice`);
    seen.add(h);
  }
  if (hosts.length < 2) throw UsageError.forFlag(`locate: ${source}`, `needs at least 2 hosts, got ${hosts.length}`);
  return hosts;
}

/** Host names of a hostfile: first word of each line ("host slots=4", "host:4", "host"); # starts a comment. */
export function parseHostfile(text: string): string[] {
  return text.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l !== '')
    .map((l) => l.split(/\s+/)[0]!.replace(/:\d+$/, ''));
}

const FORBIDDEN_RUN_KEYS: Record<string, string> = {
  np: '--np', hosts: '--hosts', jsonFile: '-J', jsonFormat: '--json-format', perIterTiming: '-I', runCycles: '-N',
};

/** The run arguments: flags only, none that locate sets itself, and acceptable to the run command's parser; their -n. */
export function checkRunArgs(args: string[]): { args: string[]; iterations: number } {
  const tokens = tokenize(args, RUN_OPTIONS, 'locate: ');
  if (tokens.stop) throw new UsageError(`locate: run arguments: -h/--version are not run arguments`);
  if (tokens.positionals.length) {
    throw new UsageError(`locate: run arguments: unexpected '${tokens.positionals[0]}' (locate runs all_reduce; give only flags after --)`);
  }
  for (const t of tokens.ordered) {
    const flag = FORBIDDEN_RUN_KEYS[t.key];
    if (flag) throw new UsageError(`locate: run arguments: ${flag} is set by locate itself`);
  }
  const parsed = parseCommandLine(['all_reduce', ...DEFAULT_RUN_ARGS, ...args], 'collbench');
  if (parsed.kind !== 'run') throw new UsageError('locate: run arguments: not a run');
  return { args, iterations: parsed.options.iters };
}

export function parseLocateArgs(argv: string[], readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  env: NodeJS.ProcessEnv = process.env):
  { kind: 'help' } | { kind: 'plan'; plan: PlanRequest } | { kind: 'run'; options: LocateOptions } {
  const dash = argv.indexOf('--');
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const runArgs = dash < 0 ? [] : argv.slice(dash + 1);
  const tokens = tokenize(own, OPTIONS, 'locate: ');
  if (tokens.stop === 'help') return { kind: 'help' };
  if (tokens.positionals.length) throw new UsageError(`locate: unexpected argument '${tokens.positionals[0]}' (run arguments go after --)`);
  const v = (key: string): string | undefined => {
    const value = tokens.values.get(key);
    return value === undefined || value === true ? undefined : value;
  };
  const npPerHost = number('--np-per-host', v('np-per-host'), 1, 1, 1024, true);
  const repeats = number('--repeats', v('repeats'), 2, 2, 100, true);
  const schedule = (v('pairs') ?? 'all') as PairSchedule;
  if (!PAIR_SCHEDULES.includes(schedule)) throw UsageError.forFlag('locate: --pairs', `expected all or ring, got '${v('pairs')}'`);
  const planText = v('plan');
  if (planText !== undefined) {
    const counts = planText.split(',').map((c) => number('--plan', c, 0, 2, 1_000_000, true));
    return { kind: 'plan', plan: { counts, npPerHost, repeats, schedule, jobSeconds: number('--job-seconds', v('job-seconds'), 10, 0.01, 86400, false) } };
  }
  const jobSeconds = number('--job-seconds', v('job-seconds'), 10, 0.01, 86400, false);
  let maxTimeSec = DEFAULT_MAX_TIME_SEC;
  const maxTime = v('max-time');
  if (maxTime !== undefined) {
    maxTimeSec = parseDuration(maxTime);
    if (!(maxTimeSec >= 1)) throw UsageError.forFlag('locate: --max-time', `expected a duration of at least 1 s (90s, 30m, 2h), got '${maxTime}'`);
  }
  let hosts: string[];
  const list = v('hosts'), file = v('hostfile');
  if (list !== undefined && file !== undefined) throw new UsageError('locate: give --hosts or --hostfile, not both');
  if (list !== undefined) {
    hosts = checkHosts(list.split(',').map((h) => h.trim()), '--hosts');
  } else if (file !== undefined) {
    let text: string;
    try {
      text = readFile(file);
    } catch (e) {
      throw UsageError.forFlag('locate: --hostfile', `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    hosts = checkHosts(parseHostfile(text), `--hostfile ${file}`);
  } else {
    // Inside a Slurm allocation (salloc, sbatch): its node list, expanded as `scontrol show hostnames` does.
    const allocated = slurmAllocationHosts(env);
    if (allocated === null) throw new UsageError('locate: no hosts: give --hosts or --hostfile, or run inside a Slurm allocation');
    hosts = checkHosts(allocated, 'the Slurm allocation (SLURM_JOB_NODELIST)');
  }
  const run = checkRunArgs(runArgs);
  const margin = number('--margin', v('margin'), DEFAULT_RULE.margin * 100, 1, 95, false) / 100;
  const alpha = number('--alpha', v('alpha'), DEFAULT_RULE.alpha, 1e-4, 0.5, false);
  return {
    kind: 'run',
    options: {
      hosts, npPerHost, repeats, schedule, runArgs: run.args, iterations: run.iterations, maxTimeSec, scheduleNote: null, jobSeconds,
      jsonFile: v('json') ?? null, quiet: tokens.values.get('quiet') === true,
      rule: { ...DEFAULT_RULE, margin, alpha, maxNoise: number('--max-noise', v('max-noise'), DEFAULT_RULE.maxNoise * 100, 1, 1000, false) / 100 },
      timeoutSec: number('--timeout', v('timeout'), 600, 1, 7 * 24 * 3600, true),
      parallel: number('--parallel', v('parallel'), 0, 0, 1_000_000, true),
    },
  };
}
