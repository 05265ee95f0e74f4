// Which link held the ring back, from collbench's NCCL profiler plugin (native/src/profiler/): per row-half, every
// rank's rows (bytes and time per proxy step state, per peer, channel and direction) are judged together. A link's
// rate while the network held its data (bytes / wall time in SendWait) is compared with the other links' median.
import { medianOf } from '../numbers/stats.js';
import { shortHost } from '../core/ranks.js';

type Env = NodeJS.ProcessEnv;

/** Step states, in the plugin's order (CollbenchStepState, native/src/profiler/link_profiler.h). */
export const STEP_STATES = [
  'SendGPUWait',
  'SendPeerWait',
  'SendWait',
  'RecvWait',
  'RecvFlushWait',
  'RecvGPUWait',
] as const;
export type StepState = (typeof STEP_STATES)[number];
const SEND_WAIT = STEP_STATES.indexOf('SendWait');

/** One direction of one link of one channel as one rank saw it in one row-half (CollbenchLinkRow). */
export interface LinkRow {
  peer: number;
  channel: number;
  isSend: number;
  bytes: number;
  steps: number;
  ops: number;
  /** ns per state summed over steps, and the wall time with at least one step in that state. */
  stateNs: number[];
  stateWallNs: number[];
}
/** One kind of collective and how NCCL ran it (CollbenchCollRow). */
export interface CollRow {
  func: string;
  count: number;
  datatype: string;
  algo: string;
  proto: string;
  nChannels: number;
  calls: number;
}
/** One kernel channel's GPU starts (globaltimer ns, each GPU its own clock) and busy time (CollbenchKernelChRow). */
export interface KernelChannelRow {
  channel: number;
  kernels: number;
  firstStartNs: number;
  lastStartNs: number;
  busyNs: number;
}
/** What one rank's plugin held at the end of a row-half. */
export interface RankLinks {
  rank: number;
  /** The communicator (hex id, as the plugin gives it): ranks are numbered within it. */
  commId?: string;
  host?: string;
  links: LinkRow[];
  colls: CollRow[];
  kernelChannels: KernelChannelRow[];
}
/** Every rank's rows of one row-half, gathered on rank 0. */
export interface HalfLinks {
  ranks: RankLinks[];
}

/** The rule's constants (docs/links.md explains them; published with every verdict). */
export const LINK_RULE = {
  /** A link is slow in a row-half when its rate is below (1 - margin) × the other links' median rate. */
  margin: 0.5,
  /** Row-halves where a link moved less than this, or spent less than minWaitUs in SendWait, do not count for it:
   *  small sizes are latency-bound and say nothing of a link's bandwidth. */
  minBytes: 1 << 20,
  minWaitUs: 20,
  /** Named only when slow in more than this share of the row-halves that count, and in at least minHalves. */
  majority: 0.5,
  minHalves: 2,
  /** No name when in doubt: more than this share of the links slow is not one slow link (a slow host, congestion). */
  maxSlowShare: 0.25,
} as const;

/** One send link's verdict over the run. */
export interface LinkVerdict {
  rank: number;
  host: string;
  peer: number;
  peerHost: string;
  channel: number;
  bytes: number;
  steps: number;
  /** bytes / wall ns in SendWait over the row-halves that count (GB/s). */
  gbps: number;
  /** ns per state, summed over steps and row-halves. */
  stateNs: Record<StepState, number>;
  slowHalves: number;
  countedHalves: number;
  slow: boolean;
  /** Only when the run had several communicators: which one (rank and peer are numbered within it). */
  comm?: string;
}

/** A slow link named, or several channels of the same rank -> peer. */
export interface SlowLink {
  rank: number;
  host: string;
  peer: number;
  peerHost: string;
  channels: number[];
  gbps: number;
  othersGbps: number;
  others: number;
  /** Only when the run had several communicators: which one (its links were judged among themselves). */
  comm?: string;
}

/** The heatmap rank × peer of one communicator (the run's own: the one with the most ranks): per sender and
 *  receiver, every channel's bytes over their wall time in SendWait in the row-halves that count (GB/s), and its
 *  slowest channel's rate; null where no send link was judged (a ring has 2 peers per rank). */
export interface LinkMatrix {
  ranks: number;
  state: 'SendWait';
  gbps: (number | null)[][];
  slowestChannelGbps: (number | null)[][];
  /** [sender, receiver] of every link named slow. */
  named: [number, number][];
  /** Only when the run had several communicators: which one the matrix shows. */
  comm?: string;
}

export interface LinksVerdict {
  rule: typeof LINK_RULE;
  halves: number;
  links: LinkVerdict[];
  named: SlowLink[];
  /** Why nobody was named although links were slow (doubt), or null. */
  doubt: string | null;
  matrix: LinkMatrix;
}

/** The communicators whose rows a run's row-halves hold ('' for rows without an id). */
const communicators = (halves: readonly HalfLinks[]): string[] => [
  ...new Set(halves.flatMap((h) => h.ranks.map((r) => r.commId ?? ''))),
];
const key = (rank: number, peer: number, channel: number) => `${rank}>${peer}/${channel}`;
const gbps = (bytes: number, ns: number) => (ns > 0 ? bytes / ns : Number.POSITIVE_INFINITY);

/** Judges the send links of a run's row-halves (each HalfLinks one row-half, every rank's rows). Rows of different
 *  communicators (a split communicator beside the world's) are never mixed: each communicator's links are judged
 *  among themselves, its ranks numbered within it; links and names then carry `comm`, and the matrix is the
 *  communicator with the most ranks. */
export function judgeLinks(halves: readonly HalfLinks[]): LinksVerdict {
  const comms = communicators(halves);
  if (comms.length <= 1) return judgeCommunicator(halves);
  const verdicts = comms.map((comm) => {
    const own = halves.map((h) => ({ ranks: h.ranks.filter((r) => (r.commId ?? '') === comm) }));
    const ranks = new Set(own.flatMap((h) => h.ranks.map((r) => r.rank))).size;
    return { comm, ranks, v: judgeCommunicator(own) };
  });
  const main = [...verdicts].sort((a, b) => b.ranks - a.ranks)[0]!;
  const doubts = verdicts.filter((x) => x.v.doubt).map((x) => `communicator ${x.comm}: ${x.v.doubt}`);
  return {
    rule: LINK_RULE,
    halves: halves.length,
    links: verdicts.flatMap((x) => x.v.links.map((l) => ({ ...l, comm: x.comm }))),
    named: verdicts.flatMap((x) => x.v.named.map((n) => ({ ...n, comm: x.comm }))),
    doubt: doubts.length ? doubts.join('; ') : null,
    matrix: { ...main.v.matrix, comm: main.comm },
  };
}

function judgeCommunicator(halves: readonly HalfLinks[]): LinksVerdict {
  const hostOf = new Map<number, string>();
  const acc = new Map<string, LinkVerdict & { countedBytes: number; countedWallNs: number }>();
  for (const half of halves) {
    const rates = new Map<string, number>();
    for (const r of half.ranks) {
      if (r.host) hostOf.set(r.rank, r.host);
      for (const l of r.links) {
        if (!l.isSend) continue;
        const k = key(r.rank, l.peer, l.channel);
        let v = acc.get(k);
        if (!v) {
          v = {
            rank: r.rank,
            host: '',
            peer: l.peer,
            peerHost: '',
            channel: l.channel,
            bytes: 0,
            steps: 0,
            gbps: 0,
            stateNs: Object.fromEntries(STEP_STATES.map((s) => [s, 0])) as Record<StepState, number>,
            slowHalves: 0,
            countedHalves: 0,
            slow: false,
            countedBytes: 0,
            countedWallNs: 0,
          };
          acc.set(k, v);
        }
        v.bytes += l.bytes;
        v.steps += l.steps;
        STEP_STATES.forEach((s, i) => {
          v!.stateNs[s] += l.stateNs[i] ?? 0;
        });
        const wall = l.stateWallNs[SEND_WAIT] ?? 0;
        if (l.bytes >= LINK_RULE.minBytes && wall >= LINK_RULE.minWaitUs * 1e3) {
          rates.set(k, gbps(l.bytes, wall));
          v.countedBytes += l.bytes;
          v.countedWallNs += wall;
        }
      }
    }
    for (const [k, rate] of rates) {
      const others = [...rates].filter(([o]) => o !== k).map(([, r]) => r);
      if (others.length === 0) continue;
      const v = acc.get(k)!;
      v.countedHalves += 1;
      if (rate < (1 - LINK_RULE.margin) * medianOf(others)) v.slowHalves += 1;
    }
  }
  const links = [...acc.values()]
    .map(({ countedBytes, countedWallNs, ...v }) => ({
      ...v,
      host: hostOf.get(v.rank) ?? '',
      peerHost: hostOf.get(v.peer) ?? '',
      gbps: countedWallNs > 0 ? gbps(countedBytes, countedWallNs) : 0,
      slow: v.countedHalves >= LINK_RULE.minHalves && v.slowHalves > LINK_RULE.majority * v.countedHalves,
    }))
    .sort((a, b) => a.rank - b.rank || a.peer - b.peer || a.channel - b.channel);
  const slow = links.filter((l) => l.slow);
  const counted = links.filter((l) => l.countedHalves > 0);
  const matrixOf = (named: readonly SlowLink[]) => linkMatrix(acc.values(), hostOf, named);
  if (slow.length > LINK_RULE.maxSlowShare * counted.length) {
    return {
      rule: LINK_RULE,
      halves: halves.length,
      links,
      named: [],
      matrix: matrixOf([]),
      doubt:
        `${slow.length} of ${counted.length} links slow: more than ${LINK_RULE.maxSlowShare * 100}% ` +
        'is not one link',
    };
  }
  const groups = new Map<string, LinkVerdict[]>();
  for (const l of slow) groups.set(`${l.rank}>${l.peer}`, [...(groups.get(`${l.rank}>${l.peer}`) ?? []), l]);
  const named = [...groups.values()].map((g): SlowLink => {
    const others = counted.filter((l) => !g.includes(l));
    return {
      rank: g[0]!.rank,
      host: g[0]!.host,
      peer: g[0]!.peer,
      peerHost: g[0]!.peerHost,
      channels: g.map((l) => l.channel),
      gbps: medianOf(g.map((l) => l.gbps)),
      othersGbps: medianOf(others.map((l) => l.gbps)),
      others: others.length,
    };
  });
  return { rule: LINK_RULE, halves: halves.length, links, named, doubt: null, matrix: matrixOf(named) };
}

/** The rank × peer matrix from the per-channel sums (rate = bytes / wall ns in SendWait, row-halves that count). */
function linkMatrix(
  channels: Iterable<{ rank: number; peer: number; countedBytes: number; countedWallNs: number }>,
  hostOf: ReadonlyMap<number, string>,
  named: readonly SlowLink[],
): LinkMatrix {
  const all = [...channels];
  const ranks = Math.max(0, ...all.flatMap((c) => [c.rank + 1, c.peer + 1]), ...[...hostOf.keys()].map((r) => r + 1));
  const empty = () => Array.from({ length: ranks }, () => Array<number | null>(ranks).fill(null));
  const bytes = empty(),
    wall = empty(),
    slowest = empty();
  for (const c of all) {
    if (c.countedWallNs <= 0) continue;
    bytes[c.rank]![c.peer] = (bytes[c.rank]![c.peer] ?? 0) + c.countedBytes;
    wall[c.rank]![c.peer] = (wall[c.rank]![c.peer] ?? 0) + c.countedWallNs;
    const rate = gbps(c.countedBytes, c.countedWallNs);
    slowest[c.rank]![c.peer] = Math.min(slowest[c.rank]![c.peer] ?? Number.POSITIVE_INFINITY, rate);
  }
  return {
    ranks,
    state: 'SendWait',
    gbps: bytes.map((row, s) => row.map((b, r) => (b === null ? null : gbps(b, wall[s]![r]!)))),
    slowestChannelGbps: slowest,
    named: named.map((n): [number, number] => [n.rank, n.peer]),
  };
}

/** Up to this many ranks the table gets the matrix as a `#` block; beyond, a line pointing at the report. */
export const MATRIX_TABLE_MAX_RANKS = 16;

/** The matrix as `#` lines under the table (GB/s, sender down, receiver across; `*` marks a link named slow, `.`
 *  no link judged), or one line saying where it is when the world is larger than MATRIX_TABLE_MAX_RANKS. */
export function matrixLines(m: LinkMatrix): string[] {
  const judged = m.gbps.some((row) => row.some((v) => v !== null));
  if (!judged) return [];
  const of = m.comm ? ` of communicator ${m.comm}` : '';
  if (m.ranks > MATRIX_TABLE_MAX_RANKS) {
    return [
      `# link matrix${of}: ${m.ranks} ranks, too many for the table: links.matrix in the JSON report (-J), ` +
        'drawn by collbench report --html/--md',
    ];
  }
  const named = new Set(m.named.map(([s, r]) => `${s}>${r}`));
  const cell = (v: number | null, s: number, r: number) =>
    v === null ? '.' : `${formatGbps(v)}${named.has(`${s}>${r}`) ? '*' : ''}`;
  const cells = m.gbps.map((row, s) => row.map((v, r) => cell(v, s, r)));
  const width = Math.max(4, ...cells.flat().map((c) => c.length), String(m.ranks - 1).length);
  const pad = (t: string) => t.padStart(width);
  return [
    `# link matrix${of} (GB/s in SendWait, sender rank down, receiver across; * named slow, . no link):`,
    `#   ${''.padStart(3)} ${m.gbps.map((_, r) => pad(String(r))).join(' ')}`,
    ...cells.map((row, s) => `#   ${String(s).padStart(3)} ${row.map(pad).join(' ')}`),
  ];
}

/** A rate for a comment line: two significant figures below 100 GB/s (`9.8`, `45`), whole above. */
export function formatGbps(v: number): string {
  return v >= 100 ? String(Math.round(v)) : Number(v.toPrecision(2)).toString();
}

const rankName = (rank: number, host: string) => `rank ${rank}${host ? ` (${shortHost(host)})` : ''}`;

/** `slow link: rank 3 (n04) -> rank 4 (n05), channel 2: 9.8 GB/s in SendWait vs 45 GB/s median of 63 other links`
 *  (with the communicator when the run had several): the sentence naming one link, as the table, accept and locate
 *  say it. */
export function slowLinkSentence(s: SlowLink): string {
  return (
    `slow link: ${rankName(s.rank, s.host)} -> ${rankName(s.peer, s.peerHost)}, ` +
    `channel${s.channels.length > 1 ? 's' : ''} ${s.channels.join(',')}: ${formatGbps(s.gbps)} GB/s in SendWait vs ` +
    `${formatGbps(s.othersGbps)} GB/s median of ${s.others} other links${s.comm ? ` (communicator ${s.comm})` : ''}`
  );
}

/** `# slow link: rank 3 (n04) -> rank 4 (n05), channel 2: 9.8 GB/s in SendWait vs 45 GB/s median of 63 other
 *  links`, one per link named; one line saying nobody was, and why, when none is. */
export function slowLinkLines(
  v: Pick<LinksVerdict, 'named' | 'links' | 'halves' | 'doubt'> & { matrix?: Pick<LinkMatrix, 'comm'> },
): string[] {
  if (v.named.length > 0) return v.named.map((s) => `# ${slowLinkSentence(s)}`);
  // Several communicators: the line speaks of the matrix's (the run's own); each was judged among its own links.
  const counted = v.links.filter((l) => l.countedHalves > 0 && l.comm === v.matrix?.comm);
  if (counted.length === 0) {
    return [`# slow link: none judged (no link moved ${LINK_RULE.minBytes >> 20} MiB over the network in a row-half)`];
  }
  const worst = [...counted].sort((a, b) => a.gbps - b.gbps)[0]!;
  const others = medianOf(counted.filter((l) => l !== worst).map((l) => l.gbps));
  return [
    `# slow link: none named (${v.doubt ?? `${counted.length} links, ${v.halves} row-halves`}; slowest ` +
      `${rankName(worst.rank, worst.host)} -> ${rankName(worst.peer, worst.peerHost)}, channel ${worst.channel}: ` +
      `${formatGbps(worst.gbps)} vs ${formatGbps(others)} GB/s median)`,
  ];
}

/** Bytes per element of an NCCL datatype name as the profiler gives it (ncclFloat32, ncclBfloat16, ncclFloat8e4m3). */
export function datatypeBytes(name: string): number {
  const bits = /(\d+)/.exec(name)?.[1];
  return bits ? Math.max(1, Number(bits) / 8) : 1;
}

/** How NCCL ran one size of one collective (what the profiler's collective events said). */
export interface AlgoChoice {
  func: string;
  bytes: number;
  algo: string;
  proto: string;
  nChannels: number;
  calls: number;
  /** Only when the run had several communicators: which one made these calls. */
  comm?: string;
}

/** Per collective and size, each (algorithm, protocol, channels) NCCL chose and how often, from every rank's rows;
 *  with several communicators, each communicator's calls apart (`comm` set). */
export function algoPerSize(halves: readonly HalfLinks[]): AlgoChoice[] {
  const several = communicators(halves).length > 1;
  const byKey = new Map<string, AlgoChoice>();
  for (const half of halves) {
    for (const r of half.ranks) {
      const comm = several ? (r.commId ?? '') : undefined;
      for (const c of r.colls) {
        const bytes = c.count * datatypeBytes(c.datatype);
        const k = `${comm ?? ''}/${c.func}/${bytes}/${c.algo}/${c.proto}/${c.nChannels}`;
        const a = byKey.get(k) ?? {
          func: c.func,
          bytes,
          algo: c.algo,
          proto: c.proto,
          nChannels: c.nChannels,
          calls: 0,
          ...(comm !== undefined ? { comm } : {}),
        };
        a.calls += c.calls;
        byKey.set(k, a);
      }
    }
  }
  return [...byKey.values()].sort(
    (a, b) =>
      (a.comm ?? '').localeCompare(b.comm ?? '') ||
      a.func.localeCompare(b.func) ||
      a.bytes - b.bytes ||
      b.calls - a.calls,
  );
}

/** `# nccl algo: AllReduce 1048576 B RING/SIMPLE 8 channels (64 calls)`, one per choice. */
export function algoLines(choices: readonly AlgoChoice[]): string[] {
  return choices.map(
    (a) =>
      `# nccl algo: ${a.func} ${a.bytes} B ${a.algo}${a.proto ? `/${a.proto}` : ''} ` +
      `${a.nChannels} channel${a.nChannels === 1 ? '' : 's'} (${a.calls} calls)` +
      `${a.comm !== undefined ? ` (communicator ${a.comm})` : ''}`,
  );
}

/** The backend a run's words name (`--backend nccl`, `--backend=nccl`), or null when they leave it to collbench
 *  (--links needs the nccl backend named: accept and locate add it only then). */
export function launchBackend(words: readonly string[]): string | null {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === '--backend') return words[i + 1] ?? null;
    if (w.startsWith('--backend=')) return w.slice('--backend='.length);
  }
  return null;
}

/** The plugin library's file name; it sits beside the nccl module (build/Release, or the bundle's native folder). */
export const LINK_PROFILER_LIBRARY = 'libcollbench_nccl_profiler.so';

/** What --links does to the ranks' environment: NCCL_PROFILER_PLUGIN set to our library, or, when the user has set
 *  it (NCCL's Inspector, a site plugin), left alone with one line saying the run goes on without links. */
export type LinksSetup = { env: Record<string, string>; note: null } | { env: Record<string, never>; note: string };

export function linksSetup(library: string, env: Env): LinksSetup {
  const theirs = env.NCCL_PROFILER_PLUGIN;
  if (theirs !== undefined && theirs !== '' && theirs !== library) {
    return {
      env: {},
      note:
        `# links: NCCL_PROFILER_PLUGIN is already set (${theirs}); NCCL loads one profiler: ` +
        'running without --links',
    };
  }
  return { env: { NCCL_PROFILER_PLUGIN: library }, note: null };
}
