// `collbench locate`'s command line: its own flags before `--` (LOCATE_OPTIONS, read by config/option-parser.ts like every command's), the host
// list (--hosts or an Open MPI / Slurm-style hostfile), and the run arguments after `--`, checked here with the run
// command's own parser so that a typo fails before any job starts. Pure apart from reading the hostfile.
import { readFileSync } from 'node:fs';
import { slurmAllocationHosts } from '../launch/slurm.js';
import { parseOptions, tokenize, type CommandOptions } from '../config/option-parser.js';
import { parseCommandLine, RUN_OPTIONS } from '../config/run-options.js';
import { parseField } from '../config/resolve.js';
import { flag, helpFlag, MAX_TIMEOUT_SEC } from '../config/flags.js';
import { UsageError } from '../core/errors.js';
import { DEFAULT_RULE, type DecisionRule } from './decide.js';
import { PAIR_SCHEDULES, type PairSchedule } from './schedule.js';

/** Sizes that are bandwidth-bound on every fabric from TCP to NVLink, and short enough per job (docs/locate.md, "Sizes"). */
export const DEFAULT_RUN_ARGS: readonly string[] = [
  '-b',
  '4M',
  '-e',
  '64M',
  '-f',
  '4',
  '-n',
  '20',
  '-w',
  '2',
  '-c',
  '0',
];

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

export interface PlanRequest {
  counts: number[];
  npPerHost: number;
  repeats: number;
  schedule: PairSchedule;
  jobSeconds: number;
}

const OPTIONS = 'Options';
const LOCATE_FLAGS = [
  flag.text(undefined, 'hosts', 'hosts', OPTIONS, 'host names, comma-separated (at least 2, no duplicates)', {
    value: '<list>',
  }),
  flag.text(
    undefined,
    'hostfile',
    'hostfile',
    OPTIONS,
    'one host per line (Open MPI "host slots=N" or "host:N" lines; # comments)',
    { value: '<file>' },
  ),
  flag.int(undefined, 'np-per-host', 'npPerHost', 1, 'ranks per host', 1, 1024, OPTIONS, 'ranks per host', {
    value: '<K>',
  }),
  flag.output(
    'J',
    'json',
    'json',
    OPTIONS,
    'the verdict as JSON (kind "collbench-locate", schema/collbench-locate.v2.schema.json); ' + '- = stdout',
  ),
  flag.int(undefined, 'repeats', 'repeats', 2, 'repeat count', 2, 100, OPTIONS, 'times each stage is measured', {
    value: '<R>',
  }),
  flag.number(
    'margin',
    'margin',
    DEFAULT_RULE.margin * 100,
    'margin (%)',
    1,
    95,
    OPTIONS,
    'how much slower than the reference a ' + 'group must be, in percent',
    { value: '<pct>' },
  ),
  flag.number(
    'alpha',
    'alpha',
    DEFAULT_RULE.alpha,
    'significance level',
    1e-4,
    0.5,
    OPTIONS,
    'significance level of the rank test',
    { value: '<p>' },
  ),
  flag.number(
    'max-noise',
    'maxNoise',
    DEFAULT_RULE.maxNoise * 100,
    'noise limit (%)',
    1,
    1000,
    OPTIONS,
    'above this ' +
      "repeat-to-repeat change of a good pair's busbw, in percent, a run without a confirmed suspect is inconclusive rather than " +
      'healthy',
    { value: '<pct>' },
  ),
  flag.choice(
    'pairs',
    'pairs',
    PAIR_SCHEDULES,
    'all',
    'pair schedule',
    OPTIONS,
    'all pairs (n−1 rounds), or neighbour pairs only ' + '(2-3 rounds, for many hosts)',
    { value: '<all|ring>' },
  ),
  flag.int(
    undefined,
    'parallel',
    'parallel',
    0,
    'jobs at once',
    0,
    1_000_000,
    OPTIONS,
    'at most N jobs of a round at once (0 = the ' +
      'whole round: its pairs share no host); 1 when the hosts share something the jobs compete for (CPUs of one machine, a ' +
      'shared uplink)',
    { value: '<N>' },
  ),
  flag.timeout(600, OPTIONS, 'how long one job may take before it is stopped and counted as failed'),
  flag.duration(
    'max-time',
    'maxTimeSec',
    OPTIONS,
    'the whole run at most this long: the schedule is shortened to fit before ' +
      'anything runs (fewer repeats, then ring pairs), and a run stopped there reports what it found so far (verdict marked ' +
      'partial, the stages not run listed)',
    { value: '<time>', min: 1, defaultText: '1h' },
  ),
  flag.text(undefined, 'plan', 'plan', OPTIONS, 'print the schedule and its cost for these host counts, run nothing', {
    value: '<counts>',
  }),
  flag.number(
    'job-seconds',
    'jobSeconds',
    10,
    'job time (s)',
    0.01,
    86400,
    OPTIONS,
    'the time one job takes, start-up included, ' + 'for --plan and to fit --max-time',
    { value: '<S>' },
  ),
  flag.quiet(OPTIONS),
  helpFlag(OPTIONS),
] as const;

export const LOCATE_OPTIONS: CommandOptions<typeof LOCATE_FLAGS> = {
  command: 'locate',
  usage: `collbench locate (--hosts h1,h2,… | --hostfile FILE) [options] [-- run arguments]
       collbench locate --plan 8,64,512,1024 [--np-per-host K] [--repeats R] [--pairs all|ring] [--job-seconds S]`,
  about: `  Finds the host or link that slows a job down. Stages, each a set of all_reduce_perf jobs started with mpirun:
    whole-job    every host together (the symptom; busbw compared with the pairs' reference)
    host-groups  each host alone with its --np-per-host ranks, all hosts at once (only when K > 1)
    pairs        every pair of hosts, in rounds of disjoint pairs that run at the same time (round-robin)
    retest       each suspect again with a known-good partner, beside a control pair of two good hosts
  Each stage runs --repeats times; a group is slow when its median busbw is below (1 − margin) × the reference AND
  a one-sided Mann-Whitney test over its per-iteration samples gives p < alpha. A host whose every pair is slow is
  a host suspect; a slow pair between otherwise good hosts is a link suspect; only a suspect slow again in its
  re-test is named. A host every pair of which is slower than every pair without it, within the margin, is
  degraded (host-level rank test, corrected over hosts). Every job has a time budget (1.5 × a healthy job's
  duration, measured in this run): a slow job is stopped there and keeps the sizes it finished.`,
  groups: [OPTIONS],
  flags: LOCATE_FLAGS,
  footer: `Run arguments (after --) go to every job: flags of all_reduce_perf (-b, -e, -f, -n, -w, -d, --backend, …), not
  --np, --hosts, -J, -I or -N. Default sizes 4 MiB to 64 MiB (-b 4M -e 64M -f 4), -n 20 -w 2, -c 0.
Open MPI's own configuration comes from its environment (OMPI_MCA_plm_rsh_agent, OMPI_MCA_btl, …) and is honoured.
Exit status: 0 healthy, 7 a suspect named, 8 degraded (a host slower within the margin), 6 inconclusive (the
  reason and what to run are printed), 2 bad input, 5 a host cannot be reached (named).`,
};

/** One host count of --plan, read as any int option is. */
const PLAN_COUNT = flag.int(undefined, 'plan', 'plan', 2, 'host count', 2, 1_000_000, OPTIONS, '');

const HOST_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A host list: trimmed, each a plausible host name, no duplicates, at least two. */
export function checkHosts(hosts: string[], source: string): string[] {
  if (hosts.some((h) => h === '')) throw UsageError.forFlag(`locate: ${source}`, 'empty host name in the list');
  for (const h of hosts) {
    if (h.includes(':'))
      throw UsageError.forFlag(
        `locate: ${source}`,
        `'${h}': give host names only; ranks per host come from --np-per-host`,
      );
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
  return text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l !== '')
    .map((l) => l.split(/\s+/)[0]!.replace(/:\d+$/, ''));
}

const FORBIDDEN_RUN_KEYS: Record<string, string> = {
  np: '--np',
  hosts: '--hosts',
  jsonFile: '-J',
  jsonFormat: '--json-format',
  perIterTiming: '-I',
  runCycles: '-N',
};

/** The run arguments: flags only, none that locate sets itself, and acceptable to the run command's parser; their -n. */
export function checkRunArgs(args: string[]): { args: string[]; iterations: number } {
  const tokens = tokenize(args, RUN_OPTIONS, 'locate: ');
  if (tokens.stop) throw new UsageError(`locate: run arguments: -h/--version are not run arguments`);
  if (tokens.positionals.length) {
    throw new UsageError(
      `locate: run arguments: unexpected '${tokens.positionals[0]}' (locate runs all_reduce; give only flags after --)`,
    );
  }
  for (const t of tokens.ordered) {
    const flag = FORBIDDEN_RUN_KEYS[t.key];
    if (flag) throw new UsageError(`locate: run arguments: ${flag} is set by locate itself`);
  }
  const parsed = parseCommandLine(['all_reduce', ...DEFAULT_RUN_ARGS, ...args], 'collbench');
  if (parsed.kind !== 'run') throw new UsageError('locate: run arguments: not a run');
  return { args, iterations: parsed.options.iters };
}

export function parseLocateArgs(
  argv: string[],
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  env: NodeJS.ProcessEnv = process.env,
): { kind: 'help' } | { kind: 'plan'; plan: PlanRequest } | { kind: 'run'; options: LocateOptions } {
  const dash = argv.indexOf('--');
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const runArgs = dash < 0 ? [] : argv.slice(dash + 1);
  const { stop, positionals, values: v } = parseOptions(own, LOCATE_OPTIONS);
  if (stop === 'help') return { kind: 'help' };
  if (positionals.length)
    throw new UsageError(`locate: unexpected argument '${positionals[0]}' (run arguments go after --)`);
  const { npPerHost, repeats, pairs: schedule, jobSeconds } = v;
  if (v.plan !== null) {
    const counts = v.plan.split(',').map((c) => parseField(PLAN_COUNT, c, 'locate: --plan') as number);
    return { kind: 'plan', plan: { counts, npPerHost, repeats, schedule, jobSeconds } };
  }
  const maxTimeSec = v.maxTimeSec ?? DEFAULT_MAX_TIME_SEC;
  let hosts: string[];
  const list = v.hosts,
    file = v.hostfile;
  if (list !== null && file !== null) throw new UsageError('locate: give --hosts or --hostfile, not both');
  if (list !== null) {
    hosts = checkHosts(
      list.split(',').map((h) => h.trim()),
      '--hosts',
    );
  } else if (file !== null) {
    let text: string;
    try {
      text = readFile(file);
    } catch (e) {
      throw UsageError.forFlag(
        'locate: --hostfile',
        `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    hosts = checkHosts(parseHostfile(text), `--hostfile ${file}`);
  } else {
    // Inside a Slurm allocation (salloc, sbatch): its node list, expanded as `scontrol show hostnames` does.
    const allocated = slurmAllocationHosts(env);
    if (allocated === null)
      throw new UsageError('locate: no hosts: give --hosts or --hostfile, or run inside a Slurm allocation');
    hosts = checkHosts(allocated, 'the Slurm allocation (SLURM_JOB_NODELIST)');
  }
  const run = checkRunArgs(runArgs);
  return {
    kind: 'run',
    options: {
      hosts,
      npPerHost,
      repeats,
      schedule,
      runArgs: run.args,
      iterations: run.iterations,
      maxTimeSec,
      scheduleNote: null,
      jobSeconds,
      jsonFile: v.json,
      quiet: v.quiet,
      parallel: v.parallel,
      rule: { ...DEFAULT_RULE, margin: v.margin / 100, alpha: v.alpha, maxNoise: v.maxNoise / 100 },
      // 0 = no limit, as for every --timeout: the longest one allowed.
      timeoutSec: v.timeoutSec === 0 ? MAX_TIMEOUT_SEC : v.timeoutSec,
    },
  };
}
