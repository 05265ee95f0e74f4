// Which algorithm and protocol NCCL chose, per call, from its NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING log.
// Written against NCCL's own format strings (NVIDIA/nccl, read at v2.20–v2.30.7; no GPU here to capture
// real logs: test/fixtures/nccl-logs/ holds synthetic excerpts in these formats).
import type { CollectiveName } from '../core/types.js';

// The line prefix is that of src/debug.cc: "[timestamp] host:pid:tid [cudaDev] NCCL INFO " (timestamp only
// when NCCL_DEBUG_TIMESTAMP_LEVELS includes INFO). Per-call lines, logged by rank 0 of each communicator:
//   2.24+      src/enqueue.cc  "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}"  (bytes = count × type size)
//   2.23       src/enqueue.cc  "%s: %ld Bytes -> Algo %d proto %d time %f"                   (bytes = the largest send/recv)
//   2.20–2.22  src/enqueue.cc  "%ld Bytes -> Algo %d proto %d time %f"                      (no function name)
//   2.27+      symmetric kernels "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d[ nWorks %d]"
//   2.28+      src/ce_coll.cc  "%s [Copy Engine]: %ld Bytes -> cudaMemcpy…", "%s [Hierarchical CE]: %ld Bytes -> …"
// Algorithm and protocol numbers are NCCL_ALGO_* / NCCL_PROTO_* of src/include/nccl_common.h.

export type NcclLogFormat = 'v2.24' | 'v2.23' | 'v2.20' | 'symmetric' | 'copy-engine';

export interface NcclTuningEvent {
  func: string | null; // 'AllReduce'; null in 2.20–2.22 lines
  bytes: number;
  algo: string; // 'RING', 'TREE', 'NVLS', … ; 'SYMMETRIC' / 'CE' for the kernel-less paths
  proto: string | null; // 'LL', 'LL128', 'SIMPLE'; null when the path has none
  detail: string | null; // symmetric kernel name, CE path, channel range
  format: NcclLogFormat;
  pid: number | null;
  lineNo: number; // 1-based, in the text given
}

/** NCCL_ALGO_* and NCCL_PROTO_* values (nccl_common.h; PAT = 6 since 2.23). */
export const NCCL_ALGO_NAMES = ['TREE', 'RING', 'COLLNET_DIRECT', 'COLLNET_CHAIN', 'NVLS', 'NVLS_TREE', 'PAT'] as const;
export const NCCL_PROTO_NAMES = ['LL', 'LL128', 'SIMPLE'] as const;

/** ncclFuncToString() names of the collectives NCCL tunes (the others go through send/recv). */
export const NCCL_FUNC_OF: Partial<Record<CollectiveName, string>> = {
  all_reduce: 'AllReduce',
  all_gather: 'AllGather',
  reduce_scatter: 'ReduceScatter',
  broadcast: 'Broadcast',
  reduce: 'Reduce',
  alltoall: 'AlltoAll',
  gather: 'Gather',
  scatter: 'Scatter',
};

// "[2026-06-01 10:00:00] " (optional, NCCL_DEBUG_TIMESTAMP_LEVELS) "host:pid:tid " "[dev] NCCL INFO "
const PREFIX = /^(?:\[[^\]]*\] ?)?(?:(\S+?):(\d+):(\d+) )?(?:\[\d+\] )?NCCL INFO (.*)$/;
const V224 = /^(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(-?\d+)\.\.(-?\d+)\}/;
const V223 = /^(\w+): (\d+) Bytes -> Algo (-?\d+) proto (-?\d+) time \S+/;
const V220 = /^(\d+) Bytes -> Algo (-?\d+) proto (-?\d+) time \S+/;
const SYM = /^(\w+) \[Symmetric\]: (\d+) Bytes -> Kernel (\S+) nchannels (\d+) nthreads (\d+)/;
const CE = /^(\w+) \[(Copy Engine|Hierarchical CE)\]: (\d+) Bytes -> (.+)$/;

const algoName = (n: string): string => NCCL_ALGO_NAMES[Number(n)] ?? `ALGO_${n}`;
const protoName = (n: string): string => NCCL_PROTO_NAMES[Number(n)] ?? `PROTO_${n}`;

/** Every per-call tuning line in `text` (other NCCL output and non-NCCL lines are skipped). */
export function parseNcclTuningLog(text: string): NcclTuningEvent[] {
  const events: NcclTuningEvent[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    const at = line.indexOf('NCCL INFO ');
    if (at < 0) return;
    const p = PREFIX.exec(line);
    const pid = p && p[2] !== undefined ? Number(p[2]) : null;
    const msg = p ? p[4]! : line.slice(at + 'NCCL INFO '.length);
    const base = { pid, lineNo: i + 1 };
    let m: RegExpExecArray | null;
    if ((m = V224.exec(msg))) {
      events.push({
        ...base,
        func: m[1]!,
        bytes: Number(m[2]),
        algo: m[3]!.toUpperCase(),
        proto: m[4]!.toUpperCase(),
        detail: `channels ${m[5]}..${m[6]}`,
        format: 'v2.24',
      });
    } else if ((m = V223.exec(msg))) {
      events.push({
        ...base,
        func: m[1]!,
        bytes: Number(m[2]),
        algo: algoName(m[3]!),
        proto: protoName(m[4]!),
        detail: null,
        format: 'v2.23',
      });
    } else if ((m = V220.exec(msg))) {
      events.push({
        ...base,
        func: null,
        bytes: Number(m[1]),
        algo: algoName(m[2]!),
        proto: protoName(m[3]!),
        detail: null,
        format: 'v2.20',
      });
    } else if ((m = SYM.exec(msg))) {
      events.push({
        ...base,
        func: m[1]!,
        bytes: Number(m[2]),
        algo: 'SYMMETRIC',
        proto: null,
        detail: `kernel ${m[3]} nchannels ${m[4]} nthreads ${m[5]}`,
        format: 'symmetric',
      });
    } else if ((m = CE.exec(msg))) {
      events.push({
        ...base,
        func: m[1]!,
        bytes: Number(m[3]),
        algo: 'CE',
        proto: null,
        detail: `${m[2]}: ${m[4]}`,
        format: 'copy-engine',
      });
    }
  });
  return events;
}

/** How a choice reads in a table: RING/LL, SYMMETRIC(AllReduce_AGxLL_R), CE. */
export function choiceLabel(e: NcclTuningEvent): string {
  if (e.algo === 'SYMMETRIC') return `SYMMETRIC(${(e.detail ?? '').replace(/^kernel (\S+).*$/, '$1')})`;
  return e.proto === null ? e.algo : `${e.algo}/${e.proto}`;
}

/**
 * The bytes NCCL logs for one nccl-tests row: the row size, except for AllGather and ReduceScatter in
 * the 2.24+ formats, which log count × type size with NCCL's per-rank count (size / nranks).
 */
export function loggedBytes(
  collective: CollectiveName,
  sizeBytes: number,
  nranks: number,
  format: NcclLogFormat,
): number {
  const perRank =
    (collective === 'all_gather' || collective === 'reduce_scatter') && format !== 'v2.23' && format !== 'v2.20';
  return perRank ? sizeBytes / Math.max(1, nranks) : sizeBytes;
}

export interface Choice {
  label: string;
  calls: number;
}

/** What NCCL chose for the calls of one row (most frequent first); [] when it logged nothing for it. */
export function choicesAt(
  events: readonly NcclTuningEvent[],
  collective: CollectiveName,
  sizeBytes: number,
  nranks: number,
): Choice[] {
  const func = NCCL_FUNC_OF[collective];
  if (func === undefined) return [];
  const counts = new Map<string, number>();
  for (const e of events) {
    if (e.func !== null && e.func !== func) continue;
    if (e.bytes !== loggedBytes(collective, sizeBytes, nranks, e.format)) continue;
    const l = choiceLabel(e);
    counts.set(l, (counts.get(l) ?? 0) + 1);
  }
  return [...counts.entries()]
    .map(([label, calls]) => ({ label, calls }))
    .sort((a, b) => b.calls - a.calls || a.label.localeCompare(b.label));
}

/**
 * The table cell: the choices that made up at least 10 % of the row's calls (control-plane
 * collectives of the same function and size can add a few calls of their own), joined with '+'.
 */
export function choiceCell(choices: readonly Choice[]): string {
  const total = choices.reduce((n, c) => n + c.calls, 0);
  if (total === 0) return '';
  return choices
    .filter((c) => c.calls * 10 >= total)
    .map((c) => c.label)
    .join('+');
}
