// From every rank's recorded calls to the steps a replay runs, checked first as PyTorch's flight-recorder analyser
// (torchfrtrace) checks a job: every rank must issue the same collective, size, datatype and group at each step, or
// the replay would hang; missing ranks, unknown operations (counted; dropped with --skip-unknown), groups the
// backends cannot build and a world larger than the job (refused, or cut with --shrink) are one line each.
// Point-to-point calls between two collectives form one step: every send matched with its receive, replayed as an
// all-to-all-v whose traffic matrix holds the pairs' bytes; all-to-all-v steps carry their splits the same way.
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
  group: ReplayGroup;
  /** alltoallv: bytes from rank i to rank j at [i * n + j]. */
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
  const length = Math.max(...units.map((u) => u.length));
  const steps: ReplayStep[] = [];
  for (let k = 0; k < length; k++) {
    const here = units.map((u) => u[k]);
    const short = here.findIndex((u) => !u);
    if (short >= 0) {
      const longer = here.findIndex((u) => u);
      throw new TraceError(
        `step ${k}: rank ${short} has no more calls but rank ${longer} issues ${describe(here[longer]!)} ` +
          `(${whereOf(here[longer]!)}): replaying it would hang`,
      );
    }
    const step =
      here[0]!.kind === 'p2p' || here.some((u) => u!.kind === 'p2p')
        ? p2pStep(k, here as Unit[], world, n)
        : collectiveStep(k, here as Unit[], world, n);
    if (step) steps.push(step);
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

function collectiveStep(k: number, here: Unit[], world: number, n: number): ReplayStep | null {
  const calls = here.map((u) => (u as { call: ReplayCall }).call);
  const first = calls[0]!;
  const v = first.collective === 'alltoallv';
  for (let r = 1; r < calls.length; r++) {
    const c = calls[r]!;
    const same =
      c.collective === first.collective &&
      c.dtype === first.dtype &&
      c.group.id === first.group.id &&
      c.group.size === first.group.size &&
      (v || c.count === first.count) &&
      c.root === first.root;
    if (!same)
      throw new TraceError(
        `step ${k} differs between ranks: rank 0 ${describe(here[0]!)} (${first.where}), ` +
          `rank ${r} ${describe(here[r]!)} (${c.where}): replaying it would hang`,
      );
  }
  if (first.group.size !== world) {
    throw new TraceError(
      `step ${k}: ${first.name} on group ${first.group.id} of ${first.group.size} of the ${world} ranks ` +
        `(${first.where}): collbench replays world-sized groups only (its mpi and gloo layers have no sub-communicators)`,
    );
  }
  const group: ReplayGroup = { id: first.group.id, size: n, ranks: Array.from({ length: n }, (_, i) => i) };
  const count = first.count * first.dtypeScale;
  const base = {
    index: k,
    name: first.name,
    dtype: first.dtype,
    dtypeName: first.dtypeName,
    op: first.op,
    root: first.root < 0 ? -1 : first.root,
    group,
    where: first.where,
    ...(first.timeNs !== undefined ? { timeNs: first.timeNs } : {}),
  };
  if (v) {
    const elem = DTYPE_BYTES[first.dtype] * first.dtypeScale;
    const matrix = new Array<number>(n * n).fill(0);
    calls.slice(0, n).forEach((c, i) => {
      const splits = c.inSplits ?? evenSplits(c.count, c.group.size);
      if (splits.length !== c.group.size)
        throw new TraceError(`${c.where}: ${splits.length} splits for a group of ${c.group.size}`);
      for (let j = 0; j < n; j++) matrix[i * n + j] = splits[j]! * elem;
    });
    // What rank j expects from rank i must be what rank i sends it, or a rank waits for data that never comes.
    calls.forEach((c, j) =>
      c.outSplits?.forEach((expect, i) => {
        const sent = calls[i]?.inSplits?.[j];
        if (sent !== undefined && sent !== expect)
          throw new TraceError(
            `step ${k}: rank ${i} sends ${sent} elements to rank ${j} ` +
              `(${calls[i]!.where}) but rank ${j} expects ${expect} (${c.where}): replaying it would hang`,
          );
      }),
    );
    return { ...base, collective: 'alltoallv', count, bytes: Math.max(...rowSums(matrix, n)), matrix };
  }
  const collective = first.collective as CollectiveName;
  return { ...base, collective, count, bytes: callBytes({ ...first, dtypeScale: first.dtypeScale, group }) };
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
  const group: ReplayGroup = { id: first.group.id, size: n, ranks: Array.from({ length: n }, (_, i) => i) };
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
