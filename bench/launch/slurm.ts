// Slurm: host lists (`node[01-03,7]`) expanded as `scontrol show hostnames` does, the allocation's node list, and this
// process's place in an `srun` step (SLURM_PROCID, SLURM_LOCALID, …). Written here, not taken from npm: no package
// implements the syntax (docs/developing.md); compared with the real scontrol by the tests where it is installed.
import { UsageError } from '../core/errors.js';

type Env = NodeJS.ProcessEnv;

/** Slurm's hostlist delimiters between names (outside brackets). */
const DELIMITERS = new Set([' ', '\t', '\n', ',']);
/** Slurm's MAX_RANGE: hosts in one `lo-hi` range. */
const MAX_RANGE = 64 * 1024;
/** Slurm's MAX_PREFIX_CNT: values of one bracket that is not the last of its name (`a[0-9].b[0-9]`). */
const MAX_PREFIX_CNT = 64 * 1024;
/** Slurm's MAX_RANGES: ranges inside one bracket. */
const MAX_RANGES = 64 * 1024;
/** collbench's own cap on the whole expansion (scontrol has none and runs out of memory instead). */
export const MAX_HOSTLIST_HOSTS = 4 * 1024 * 1024;
const ULONG_MAX = (1n << 64n) - 1n;

interface Range {
  lo: bigint;
  hi: bigint;
  width: number;
}

/** C's isspace() in the C locale: what strtoul() skips before a number. */
const C_SPACE = '[ \\t\\n\\v\\f\\r]*';
const LEADING_NUMBER = new RegExp(`^${C_SPACE}\\+?(\\d+)`);

/**
 * One `lo-hi` (or `n`) item of a bracket, as Slurm's _parse_single_range() reads it with strtoul():
 * leading blanks and a `+` are accepted, the zero-padding width is the length of the text before the
 * dash, `lo-` means `lo`, and a low bound's trailing text is only checked when there is no high bound.
 */
function parseRange(item: string, fail: (why: string) => never): Range {
  if (item.includes('x')) fail(`'${item}' is not a range (no boxes in a one-dimensional cluster)`);
  const dash = item.indexOf('-');
  const loText = dash < 0 ? item : item.slice(0, dash);
  const hiText = dash < 0 ? null : item.slice(dash + 1);
  if (hiText !== null && hiText.startsWith('-')) fail(`'${item}' is not a range (negative numbers)`);
  const lo = LEADING_NUMBER.exec(loText);
  if (!lo) fail(`'${item}' is not a range`);
  const loValue = BigInt(lo[1]);
  let hiValue = loValue;
  if (hiText !== null && hiText !== '') {
    const hi = new RegExp(`^${C_SPACE}\\+?(\\d+)$`).exec(hiText);
    if (!hi) fail(`'${item}' is not a range`);
    hiValue = BigInt(hi[1]);
  } else if (lo[0].length !== loText.length) {
    fail(`'${item}' is not a range`);
  }
  if (loValue > ULONG_MAX || hiValue > ULONG_MAX) fail(`'${item}' has a number above 2^64-1`);
  if (loValue > hiValue) fail(`range '${item}' goes down`);
  if (hiValue - loValue + 1n > BigInt(MAX_RANGE)) fail(`range '${item}' has more than ${MAX_RANGE} hosts`);
  return { lo: loValue, hi: hiValue, width: loText.length };
}

function parseRangeList(body: string, fail: (why: string) => never): Range[] {
  const items = body.split(',');
  if (items.length > MAX_RANGES) fail(`more than ${MAX_RANGES} ranges in one bracket`);
  return items.map((item) => parseRange(item, fail));
}

function* values(ranges: Range[]): Generator<string> {
  for (const r of ranges) {
    for (let v = r.lo; v <= r.hi; v++) yield v.toString().padStart(r.width, '0');
  }
}

function count(ranges: Range[]): number {
  return ranges.reduce((n, r) => n + Number(r.hi - r.lo + 1n), 0);
}

/** The names of one top-level item: `rack[1-2]-gpu[1-2]`. */
function expandName(name: string, fail: (why: string) => never, room: number): string[] {
  // Split into texts and brackets: texts[0] [groups[0]] texts[1] [groups[1]] ... texts[k].
  const texts: string[] = [];
  const groups: Range[][] = [];
  let at = 0;
  for (;;) {
    const open = name.indexOf('[', at);
    if (open < 0) break;
    const close = name.indexOf(']', open);
    texts.push(name.slice(at, open));
    groups.push(parseRangeList(name.slice(open + 1, close), fail));
    at = close + 1;
  }
  texts.push(name.slice(at));
  if (groups.length === 0) return [name];
  // Slurm takes the last bracket as the name's own ranges and allows nothing after it.
  if (texts[texts.length - 1] !== '') fail(`'${name}' has text after its last bracket`);
  for (const g of groups.slice(0, -1)) {
    if (count(g) > MAX_PREFIX_CNT)
      fail(`a bracket of '${name}' that is not the last has more than ${MAX_PREFIX_CNT} values`);
  }
  const total = groups.reduce((n, g) => n * count(g), 1);
  if (total > room) fail(`expands to more than ${MAX_HOSTLIST_HOSTS} hosts`);
  // Slurm's _push_range_list() peels brackets off the right of the prefix, recursing: the last bracket
  // varies fastest, then the first, the second, ... and the one before the last slowest
  // (a[1-2]b[3-4]c[5-6] gives a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...).
  const last = groups.length - 1;
  const out: string[] = [];
  const chosen: string[] = new Array<string>(last);
  const prefixLevel = (g: number): void => {
    if (g < 0) {
      let prefix = texts[0];
      for (let i = 0; i < last; i++) prefix += chosen[i] + texts[i + 1];
      for (const v of values(groups[last])) out.push(prefix + v);
      return;
    }
    for (const v of values(groups[g])) {
      chosen[g] = v;
      prefixLevel(g - 1);
    }
  };
  prefixLevel(last - 1);
  return out;
}

/**
 * The host names of a Slurm host list, in order and with repeats, as `scontrol show hostnames` prints
 * them: `node[01-03,7],rack[1-2]-gpu[1-2]` gives node01 node02 node03 node7 rack1-gpu1 rack1-gpu2
 * rack2-gpu1 rack2-gpu2. Names are separated by commas, blanks, tabs or newlines outside brackets;
 * numbers keep the zero padding of the range's low bound. Input that scontrol calls an invalid host list
 * throws a one-line UsageError starting with `source`; so do unbalanced or nested brackets, which
 * scontrol turns into mangled names (`n[1-2` gives `n]`), a bad range in a bracket before the last two
 * of a name (scontrol silently drops the name: `[-1][3][1],x` gives just `x`), numbers above 2^64-1
 * (which it clamps) and lists of more than MAX_HOSTLIST_HOSTS names.
 */
export function expandSlurmHostlist(list: string, source = 'hostlist'): string[] {
  const fail = (why: string): never => {
    throw new UsageError(`${source}: invalid Slurm host list '${list}': ${why}`);
  };
  const names: string[] = [];
  let depth = 0;
  let current = '';
  const flush = () => {
    if (current === '') return;
    for (const n of expandName(current, fail, MAX_HOSTLIST_HOSTS - names.length)) names.push(n);
    current = '';
  };
  for (const c of list) {
    if (c === '[') {
      if (depth > 0) fail('nested [');
      depth++;
    } else if (c === ']') {
      if (depth === 0) fail('] without [');
      depth--;
    } else if (depth === 0 && DELIMITERS.has(c)) {
      flush();
      continue;
    }
    current += c;
  }
  if (depth > 0) fail('[ without ]');
  flush();
  return names;
}

/** The variables holding the allocation's node list, in the order they are read. */
export const SLURM_NODELIST_VARS = ['SLURM_JOB_NODELIST', 'SLURM_NODELIST'] as const;

/**
 * The nodes of the Slurm allocation this process runs in (inside `salloc`, `sbatch` or `srun`), expanded;
 * null outside an allocation. A malformed list throws UsageError naming the variable.
 */
export function slurmAllocationHosts(env: Env = process.env): string[] | null {
  for (const name of SLURM_NODELIST_VARS) {
    const v = env[name];
    if (v !== undefined && v.trim() !== '') return expandSlurmHostlist(v, name);
  }
  return null;
}

/**
 * Slurm's per-node task counts (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE): `2(x3),1` is
 * [2, 2, 2, 1]. Throws UsageError naming `source` for anything else.
 */
export function expandTasksPerNode(text: string, source = 'SLURM_STEP_TASKS_PER_NODE'): number[] {
  const out: number[] = [];
  for (const item of text.split(',')) {
    const m = /^(\d+)(?:\(x(\d+)\))?$/.exec(item.trim());
    if (!m) throw new UsageError(`${source}: '${text}' is not a list of task counts such as 2(x3),1`);
    const repeat = m[2] === undefined ? 1 : Number(m[2]);
    if (repeat > MAX_HOSTLIST_HOSTS || out.length + repeat > MAX_HOSTLIST_HOSTS) {
      throw new UsageError(`${source}: '${text}' describes more than ${MAX_HOSTLIST_HOSTS} nodes`);
    }
    for (let i = 0; i < repeat; i++) out.push(Number(m[1]));
  }
  return out;
}

/** This process's place in an `srun` job step. */
export interface SlurmStep {
  rank: number; // SLURM_PROCID
  size: number; // SLURM_STEP_NUM_TASKS
  localRank: number; // SLURM_LOCALID
  localSize: number; // this node's entry of SLURM_STEP_TASKS_PER_NODE (by SLURM_NODEID)
  nodes: number; // SLURM_STEP_NUM_NODES
  jobId: string; // SLURM_JOB_ID
  stepId: string; // SLURM_STEP_ID
}

function stepInt(env: Env, name: string): number {
  const v = env[name];
  if (v === undefined || !/^\d+$/.test(v.trim())) {
    throw new UsageError(`${name}=${v ?? '(unset)'}: srun sets it to a number for every task of a job step`);
  }
  return Number(v.trim());
}

/**
 * This process's rank, world and node-local place when `srun` started it as one task of a job step; null
 * otherwise. A batch script (sbatch) or an salloc shell also has SLURM_PROCID and SLURM_NTASKS, for the
 * whole job, but no SLURM_STEP_ID or SLURM_STEP_NUM_TASKS: it is not a task of a step, and gets null.
 */
export function slurmStep(env: Env = process.env): SlurmStep | null {
  if (!env.SLURM_STEP_ID || !env.SLURM_STEP_NUM_TASKS || env.SLURM_PROCID === undefined) return null;
  const rank = stepInt(env, 'SLURM_PROCID'),
    size = stepInt(env, 'SLURM_STEP_NUM_TASKS');
  const localRank = env.SLURM_LOCALID === undefined ? 0 : stepInt(env, 'SLURM_LOCALID');
  const nodes = env.SLURM_STEP_NUM_NODES === undefined ? 1 : stepInt(env, 'SLURM_STEP_NUM_NODES');
  const nodeId = env.SLURM_NODEID === undefined ? 0 : stepInt(env, 'SLURM_NODEID');
  let localSize = size;
  if (nodes > 1) {
    const perNode = env.SLURM_STEP_TASKS_PER_NODE;
    const counts = perNode ? expandTasksPerNode(perNode) : [];
    // Unknown layout: count this task alone on its node, so nothing assumes the ranks share a host.
    localSize = counts[nodeId] ?? 1;
  }
  if (size < 1 || rank >= size || localRank >= Math.max(localSize, 1)) {
    throw new UsageError(
      `SLURM_PROCID=${rank} SLURM_LOCALID=${localRank}: not a task of a step of ${size} tasks ` +
        `(${localSize} on this node)`,
    );
  }
  return { rank, size, localRank, localSize, nodes, jobId: slurmJobId(env) ?? '0', stepId: env.SLURM_STEP_ID };
}

/** Slurm's job id (SLURM_JOB_ID, or the older SLURM_JOBID), null outside a Slurm job. */
export function slurmJobId(env: Env = process.env): string | null {
  return (env.SLURM_JOB_ID ?? env.SLURM_JOBID)?.trim() || null;
}

/** True when srun gave this task a PMIx or PMI server (`srun --mpi=pmix`, `--mpi=pmi2`) an MPI library can join. */
export function slurmGavePmi(env: Env = process.env): boolean {
  return Boolean(env.PMIX_RANK || env.PMIX_NAMESPACE || env.PMI_FD || env.PMI_RANK);
}

/**
 * Why the mpi backend cannot start in this srun task, or null: without a PMIx (or PMI-2) server from
 * srun, Open MPI finds no world to join and aborts in MPI_Init, even for one task ("direct launched using
 * srun, but OMPI was not built with SLURM's PMI support"). collbench says so first, in one line.
 */
export function slurmMpiRefusal(env: Env = process.env): string | null {
  const step = slurmStep(env);
  if (step === null || slurmGavePmi(env)) return null;
  return (
    `--backend mpi: srun started this task (job ${step.jobId}, step ${step.stepId}, ${step.size} tasks) ` +
    'without a PMIx server for MPI to join: run srun --mpi=pmix (srun --mpi=list shows what this Slurm ' +
    'offers), or use --backend gloo, which takes its rank from SLURM_PROCID'
  );
}
