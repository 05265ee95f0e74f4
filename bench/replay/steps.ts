// From every rank's recorded calls to the steps a replay runs, checked first as PyTorch's torchfrtrace checks a job
// (each step one call of a group's ranks, or the same call of several disjoint groups at once), each problem one line.
// Point-to-point calls between two collectives form one step, replayed as an all-to-all-v of the pairs' bytes.
import { DTYPE_BYTES, type CollectiveName, type DTypeName, type OpName } from '../core/types.js';
import { callBytes, TraceError, type ReplayCall, type ReplayGroup, type ReplayTrace } from './calls.js';

/** One step of the replay, the same on every rank. */
export interface ReplayStep {
  index: number;
  /** As replayed: a p2p exchange or an all-to-all-v is 'alltoallv' with `matrix`. */
  collective: CollectiveName;
  /** As recorded (rank 0's name; 'send/recv' for a p2p exchange). */
  name: string;
  dtype: DTypeName;
  dtypeName: string;
  /** Elements per rank of `dtype` (nccl-tests' count column); bytes in nccl-tests' sense. */
  count: number;
  bytes: number;
  op: OpName;
  root: number;
  /** The group it runs on (of several at once: the one holding the lowest rank), with its global ranks. */
  group: ReplayGroup & { ranks: number[] };
  /** Every group that runs it at once (disjoint, each of group.size ranks); [group] for one. */
  groups: (ReplayGroup & { ranks: number[] })[];
  /** alltoallv: bytes from group rank i to group rank j at [i * n + j]. */
  matrix?: number[];
  /** Rank 0's recorded time (ns) where the format has one. */
  timeNs?: number;
  where: string;
}

export interface StepOptions {
  /** Ranks the replay runs on (the job's); null: the trace's own. */
  nranks: number | null;
  skipUnknown: boolean;
  shrink: boolean;
}

export interface ReplayPlan {
  steps: ReplayStep[];
  nranks: number;
  /** Notes for the reader: what was skipped, shrunk or mapped. */
  notes: string[];
}

type Unit = { kind: 'call'; call: ReplayCall } | { kind: 'p2p'; calls: ReplayCall[] };

/** The checked steps of a trace, or a TraceError naming the first thing that is wrong. */
export function planReplay(trace: ReplayTrace, o: StepOptions): ReplayPlan {
  const notes: string[] = [];
  const world = trace.worldSize;
  const missing = Array.from({ length: world }, (_, r) => r).filter((r) => !trace.calls[r]);
  if (missing.length)
    throw new TraceError(
      `no calls for rank${missing.length > 1 ? 's' : ''} ${ranges(missing)} of the trace's ${world} ` +
        `(${trace.format === 'nccl-log' ? 'no lines from that process' : 'its file is missing'})`,
    );
  const n = o.nranks ?? world;
  if (n > world) throw new TraceError(`the trace has ${world} ranks, the job ${n}: run it on ${world}`);
  if (n < world && !o.shrink)
    throw new TraceError(
      `the trace has ${world} ranks, the job ${n}: run it on ${world} (--np ${world}), or --shrink to replay ranks 0-${n - 1} with the world's groups cut to ${n}`,
    );
  if (n < world)
    notes.push(
      `shrunk from ${world} to ${n} ranks: ranks 0-${n - 1}'s sequences, world groups of ${n}, per-rank sizes kept, all-to-all-v and p2p traffic to ranks >= ${n} dropped`,
    );

  // Unknown operations: listed with counts, refused unless --skip-unknown.
  const unknown = new Map<string, number>();
  for (const cs of trace.calls)
    for (const c of cs ?? []) if (!c.collective) unknown.set(c.name, (unknown.get(c.name) ?? 0) + 1);
  if (unknown.size) {
    const list = [...unknown].map(([k, v]) => `${k} x${v}`).join(', ');
    if (!o.skipUnknown)
      throw new TraceError(`unknown operations: ${list} (--skip-unknown replays the rest without them)`);
    notes.push(`skipped unknown operations: ${list}`);
  }

  const units = trace.calls.slice(0, world).map((cs) => unitsOf((cs ?? []).filter((c) => c.collective)));
  const next = new Array<number>(world).fill(0);
  const steps: ReplayStep[] = [];
  // Rounds: every rank's next unit; each group whose ranks all stand at a call on it runs (consumed); the rest wait
  // for the next round, as their ranks would in the job. A round where nothing can run is a hang.
  for (let round = 0; units.some((u, r) => next[r]! < u.length); round++) {
    const heads = units.map((u, r) => u[next[r]!]);
    const k = steps.length;
    if (heads.some((u) => u?.kind === 'p2p')) {
      const short = heads.findIndex((u) => !u);
      if (short >= 0)
        throw hangsAt(
          k,
          heads.findIndex((u) => u),
          heads,
        );
      steps.push(p2pStep(k, heads as Unit[], world, n));
      next.forEach((_, r) => next[r]!++);
      continue;
    }
    const ready = readyGroups(k, heads, world);
    if (!ready.length)
      throw hangsAt(
        k,
        heads.findIndex((u) => u),
        heads,
      );
    for (const inst of ready) for (const r of inst.members) next[r]!++;
    for (const bucket of sameCalls(ready)) {
      const step = collectiveStep(steps.length, bucket, world, n);
      if (step) steps.push(step);
    }
  }
  if (!steps.length) throw new TraceError('the trace holds no calls to replay');
  return { steps, nranks: n, notes };
}

/** A rank's calls with each run of consecutive send/recv calls as one p2p unit. */
function unitsOf(calls: readonly ReplayCall[]): Unit[] {
  const out: Unit[] = [];
  for (const c of calls) {
    const p2p = c.collective === 'send' || c.collective === 'recv';
    const last = out[out.length - 1];
    if (p2p && last?.kind === 'p2p') last.calls.push(c);
    else out.push(p2p ? { kind: 'p2p', calls: [c] } : { kind: 'call', call: c });
  }
  return out;
}

const describe = (u: Unit): string =>
  u.kind === 'p2p'
    ? `${u.calls.length} send/recv calls`
    : `${u.call.name} ${u.call.count} x ${u.call.dtypeName} on group ${u.call.group.id} (${u.call.group.size} ranks)`;
const whereOf = (u: Unit): string => (u.kind === 'p2p' ? u.calls[0]!.where : u.call.where);

/** One group's call as the job ran it: its global ranks (in group order) and each one's call. */
interface Instance {
  group: ReplayGroup & { ranks: number[] };
  members: number[];
  calls: ReplayCall[];
}

/** A group's ranks: recorded, or the world's for a world-sized group; a group whose ranks are unknown is refused. */
function membersOf(c: ReplayCall, world: number): number[] {
  if (c.group.ranks) return c.group.ranks;
  if (c.group.size === world || c.group.size === 0) return Array.from({ length: world }, (_, i) => i);
  throw new TraceError(
    `${c.where}: ${c.name} on group ${c.group.id} of ${c.group.size} of the ${world} ranks: the trace does not ` +
      `record which ranks form it (NCCL logs name communicators, not their ranks), so it cannot be rebuilt`,
  );
}
const groupKey = (c: ReplayCall, members: readonly number[]): string => `${c.group.id}|${members.join(',')}`;

/** The groups of this round whose every rank stands at a call on that group, each checked to be the same call. */
function readyGroups(k: number, heads: (Unit | undefined)[], world: number): Instance[] {
  const seen = new Set<string>();
  const ready: Instance[] = [];
  heads.forEach((u, r) => {
    if (u?.kind !== 'call') return;
    const members = membersOf(u.call, world);
    const key = groupKey(u.call, members);
    if (seen.has(key)) return;
    seen.add(key);
    const bad = members.find((m) => m < 0 || m >= world);
    if (bad !== undefined)
      throw new TraceError(
        `${u.call.where}: ${u.call.name} on group ${u.call.group.id} names rank ${bad}, not one of the trace's ${world}`,
      );
    if (!members.includes(r))
      throw new TraceError(
        `${u.call.where}: rank ${r} records ${u.call.name} on group ${u.call.group.id} of ranks ` +
          `${ranges(members)}, which does not hold it`,
      );
    const at = members.map((m) => heads[m]);
    if (!at.every((h) => h?.kind === 'call' && groupKey(h.call, membersOf(h.call, world)) === key)) return;
    const calls = at.map((h) => (h as { call: ReplayCall }).call);
    sameCall(k, calls, members);
    ready.push({ group: { ...u.call.group, ranks: members }, members, calls });
  });
  return ready;
}

/** Every rank of one group must issue the same call, or the group's replay would hang. */
function sameCall(k: number, calls: readonly ReplayCall[], members: readonly number[]): void {
  const first = calls[0]!;
  const v = first.collective === 'alltoallv';
  for (let i = 1; i < calls.length; i++) {
    const c = calls[i]!;
    const same =
      c.collective === first.collective &&
      c.dtype === first.dtype &&
      c.group.size === first.group.size &&
      (v || c.count === first.count) &&
      c.root === first.root;
    if (!same)
      throw new TraceError(
        `step ${k} differs between ranks: rank ${members[0]} ${describe({ kind: 'call', call: first })} ` +
          `(${first.where}), rank ${members[i]} ${describe({ kind: 'call', call: c })} (${c.where}): ` +
          `replaying it would hang`,
      );
  }
}

/** The round's groups as steps: groups issuing the same call (not all-to-all-v: each has its own splits) run it at
 *  once, as one step; in the order of their lowest rank. */
function sameCalls(ready: readonly Instance[]): Instance[][] {
  const buckets = new Map<string, Instance[]>();
  for (const inst of [...ready].sort((a, b) => Math.min(...a.members) - Math.min(...b.members))) {
    const c = inst.calls[0]!;
    const key =
      c.collective === 'alltoallv'
        ? `v${buckets.size}`
        : [c.name, c.collective, c.dtype, c.dtypeName, c.count, c.root, c.op, inst.members.length].join('|');
    buckets.set(key, [...(buckets.get(key) ?? []), inst]);
  }
  return [...buckets.values()];
}

/** Nothing of this round can run: the first rank whose group waits for a rank that is elsewhere (or done). */
function hangsAt(k: number, r: number, heads: (Unit | undefined)[]): TraceError {
  const u = heads[r]!;
  if (u.kind === 'p2p' || u.call.group.size === heads.length || !u.call.group.ranks) {
    const other = heads.findIndex((h, i) => i !== r && (!h || h.kind !== u.kind || !sameGroup(h, u)));
    const o = heads[other];
    if (!o)
      return new TraceError(
        `step ${k}: rank ${other} has no more calls but rank ${r} issues ${describe(u)} (${whereOf(u)}): ` +
          `replaying it would hang`,
      );
    return new TraceError(
      `step ${k} differs between ranks: rank ${r} ${describe(u)} (${whereOf(u)}), rank ${other} ${describe(o)} ` +
        `(${whereOf(o)}): replaying it would hang`,
    );
  }
  const members = u.call.group.ranks;
  const m = members.find((x) => !heads[x] || heads[x]!.kind !== 'call' || !sameGroup(heads[x]!, u))!;
  const o = heads[m];
  return new TraceError(
    `step ${k}: rank ${r} issues ${describe(u)} (${whereOf(u)}) but rank ${m} of that group ` +
      `${o ? `issues ${describe(o)} (${whereOf(o)})` : 'has no more calls'}: replaying it would hang`,
  );
}
const sameGroup = (a: Unit, b: Unit): boolean =>
  a.kind === 'call' &&
  b.kind === 'call' &&
  a.call.group.id === b.call.group.id &&
  a.call.group.size === b.call.group.size;

/** Groups on the job's ranks: a world group cut to the job's n; a group of ranks all below n kept; one wholly beyond
 *  n dropped (null: those ranks are not replayed); one across n refused. */
function onJob(
  g: ReplayGroup & { ranks: number[] },
  world: number,
  n: number,
): (ReplayGroup & { ranks: number[] }) | null {
  if (n === world) return g;
  if (g.ranks.length === world) return { id: g.id, size: n, ranks: Array.from({ length: n }, (_, i) => i) };
  if (g.ranks.every((r) => r < n)) return g;
  if (g.ranks.every((r) => r >= n)) return null;
  throw new TraceError(
    `group ${g.id} (ranks ${ranges(g.ranks)}) spans the job's ${n} ranks and the trace's others: --shrink cuts ` +
      `only world-sized groups; run it on ${world} ranks`,
  );
}

function collectiveStep(k: number, bucket: Instance[], world: number, n: number): ReplayStep | null {
  const kept = bucket.flatMap((inst) => {
    const g = onJob(inst.group, world, n);
    return g ? [{ ...inst, group: g }] : [];
  });
  if (!kept.length) return null;
  const { calls, group } = kept[0]!;
  const first = calls[0]!;
  const v = first.collective === 'alltoallv';
  const size = group.ranks.length;
  const count = first.count * first.dtypeScale;
  const base = {
    index: k,
    name: first.name,
    dtype: first.dtype,
    dtypeName: first.dtypeName,
    op: first.op,
    root: first.root < 0 ? -1 : first.root,
    group: { ...group, size },
    groups: kept.map((i) => ({ ...i.group, size })),
    where: first.where,
    ...(first.timeNs !== undefined ? { timeNs: first.timeNs } : {}),
  };
  if (v) {
    const elem = DTYPE_BYTES[first.dtype] * first.dtypeScale;
    const matrix = new Array<number>(size * size).fill(0);
    calls.slice(0, size).forEach((c, i) => {
      const splits = c.inSplits ?? evenSplits(c.count, c.group.size);
      if (splits.length !== c.group.size)
        throw new TraceError(`${c.where}: ${splits.length} splits for a group of ${c.group.size}`);
      for (let j = 0; j < size; j++) matrix[i * size + j] = splits[j]! * elem;
    });
    // What rank j expects from rank i must be what rank i sends it, or a rank waits for data that never comes.
    calls.forEach((c, j) =>
      c.outSplits?.forEach((expect, i) => {
        const sent = calls[i]?.inSplits?.[j];
        if (sent !== undefined && sent !== expect)
          throw new TraceError(
            `step ${k}: rank ${first.group.ranks?.[i] ?? i} sends ${sent} elements to rank ` +
              `${first.group.ranks?.[j] ?? j} (${calls[i]!.where}) but that rank expects ${expect} (${c.where}): ` +
              `replaying it would hang`,
          );
      }),
    );
    return { ...base, collective: 'alltoallv', count, bytes: Math.max(...rowSums(matrix, size)), matrix };
  }
  const collective = first.collective as CollectiveName;
  return { ...base, collective, count, bytes: callBytes({ ...first, group: { ...group, size } }) };
}

function p2pStep(k: number, here: Unit[], world: number, n: number): ReplayStep {
  const bad = here.findIndex((u) => u.kind !== 'p2p');
  if (bad >= 0) {
    const other = here.findIndex((u) => u.kind === 'p2p');
    throw new TraceError(
      `step ${k} differs between ranks: rank ${other} ${describe(here[other]!)} (${whereOf(here[other]!)}), ` +
        `rank ${bad} ${describe(here[bad]!)} (${whereOf(here[bad]!)}): replaying it would hang`,
    );
  }
  const all = here.flatMap((u) => (u as { calls: ReplayCall[] }).calls);
  const first = all[0]!;
  const elem = DTYPE_BYTES[first.dtype] * first.dtypeScale;
  const global = (c: ReplayCall): number => (c.group.ranks ? c.group.ranks[c.root]! : c.root);
  // Every send needs the peer's receive of the same size from it (in order), else a rank would wait forever.
  const key = (from: number, to: number): string => `${from}>${to}`;
  const recvs = new Map<string, ReplayCall[]>();
  for (const c of all)
    if (c.collective === 'recv') {
      const list = recvs.get(key(global(c), c.rank)) ?? [];
      list.push(c);
      recvs.set(key(global(c), c.rank), list);
    }
  const matrix = new Array<number>(n * n).fill(0);
  for (const c of all) {
    if (c.collective !== 'send') continue;
    const to = global(c);
    if (to < 0 || to >= world) throw new TraceError(`${c.where}: send to rank ${to} of a ${world}-rank job`);
    const match = recvs.get(key(c.rank, to))?.shift();
    const bytes = c.count * DTYPE_BYTES[c.dtype] * c.dtypeScale;
    if (!match || match.count * DTYPE_BYTES[match.dtype] * match.dtypeScale !== bytes)
      throw new TraceError(
        `step ${k}: rank ${c.rank} sends ${bytes} bytes to rank ${to} (${c.where}) but rank ${to} ` +
          `${match ? `receives ${match.count * DTYPE_BYTES[match.dtype] * match.dtypeScale} (${match.where})` : 'posts no receive from it'}: replaying it would hang`,
      );
    if (c.rank < n && to < n) matrix[c.rank * n + to] += bytes;
  }
  const left = [...recvs.values()].flat()[0];
  if (left)
    throw new TraceError(
      `step ${k}: rank ${left.rank} receives from rank ${global(left)} (${left.where}) but nothing is sent to it: replaying it would hang`,
    );
  const group = { id: first.group.id, size: n, ranks: Array.from({ length: n }, (_, i) => i) };
  // Elements of the busiest sender, as alltoallv's count column.
  const busiest = Math.max(...rowSums(matrix, n));
  return {
    index: k,
    collective: 'alltoallv',
    name: 'send/recv',
    dtype: first.dtype,
    dtypeName: first.dtypeName,
    count: busiest / elem,
    bytes: busiest,
    op: 'sum',
    root: -1,
    group,
    groups: [group],
    matrix,
    where: first.where,
    ...(first.timeNs !== undefined ? { timeNs: first.timeNs } : {}),
  };
}

const evenSplits = (count: number, size: number): number[] => Array.from({ length: size }, () => count / size);
const rowSums = (m: readonly number[], n: number): number[] =>
  Array.from({ length: n }, (_, i) => m.slice(i * n, i * n + n).reduce((a, b) => a + b, 0));

/** "0-2, 5" from [0, 1, 2, 5]. */
export function ranges(xs: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length; i++) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    out.push(i === j ? `${xs[i]}` : `${xs[i]}-${xs[j]}`);
    i = j;
  }
  return out.join(', ');
}
