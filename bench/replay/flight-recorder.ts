// PyTorch flight-recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE) to calls: the pickle (the pickleparser package) or
// the JSON variant, laid out as torch/csrc/distributed/c10d/FlightRecorderDetail.hpp writes it. A dump holds at most
// the ring buffer's entries, so it is read whole.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { NameRegistry, Parser } from 'pickleparser';
import { mapCollective, mapDtype, TraceError, type ReplayCall } from './calls.js';

interface FrEntry {
  profiling_name?: string;
  input_sizes?: number[][];
  input_dtypes?: string[];
  output_sizes?: number[][];
  output_dtypes?: string[];
  collective_seq_id?: number;
  p2p_seq_id?: number;
  pg_id?: number | string;
  process_group?: [string, string];
  time_created_ns?: number | bigint;
  state?: string;
  is_p2p?: boolean;
  record_id?: number;
}
interface FrDump {
  version?: string;
  pg_config?: Record<string, { name?: string; desc?: string; ranks?: string | number[] }>;
  entries?: FrEntry[];
  rank?: number;
}

/** torch's pickler wraps typed containers in torch.jit._pickle calls; each gives back its first argument. */
class TorchNames extends NameRegistry {
  constructor() {
    super();
    const first = (x: unknown): unknown => x;
    for (const name of ['restore_type_tag', 'build_intlist', 'build_tensorlist', 'build_doublelist', 'build_boollist'])
      this.register('torch.jit._pickle', name, first);
  }
}

/** True when the first bytes are a pickle (protocol 2+) or JSON with flight-recorder entries. */
export function looksLikeFlightRecorder(head: Buffer): boolean {
  if (head[0] === 0x80 && head[1] !== undefined && head[1] >= 2 && head[1] <= 5) return true;
  const text = head.toString('utf8');
  return (
    /^\s*\{/.test(text) &&
    /"(entries|pg_config|comm_lib_version|nccl_version)"/.test(text) &&
    !/"schema"\s*:\s*"1\./.test(text)
  );
}

/** One rank's dump: its calls in record order (entries carry their pg's group; pg_config gives its ranks). */
export async function readFlightRecorder(path: string, rank: number): Promise<ReplayCall[]> {
  const file = basename(path);
  let bytes = await readFile(path);
  if (path.endsWith('.gz')) bytes = gunzipSync(bytes);
  let dump: FrDump;
  try {
    if (bytes[0] === 0x80) {
      const parser = new Parser({ nameResolver: new TorchNames(), unpicklingTypeOfDictionary: 'object' });
      // pickleparser reads 8-byte ints as numbers and console.warns for each one past 2^53 (every time_*_ns): the
      // loss there is under 256 ns on an epoch in ns, nothing to a gap in µs, so its warnings are held back.
      const warn = console.warn;
      console.warn = () => undefined;
      try {
        dump = parser.parse<FrDump>(bytes);
      } finally {
        console.warn = warn;
      }
    } else {
      dump = JSON.parse(bytes.toString('utf8')) as FrDump;
    }
  } catch (e) {
    throw new TraceError(`${file}: not a readable flight-recorder dump (${(e as Error).message.split('\n')[0]})`);
  }
  if (!dump || typeof dump !== 'object' || !Array.isArray(dump.entries))
    throw new TraceError(`${file}: no entries[] (dumped without collectives, or not a flight-recorder dump)`);
  const groups = new Map<string, number[]>();
  for (const [name, g] of Object.entries(dump.pg_config ?? {})) {
    const ranks = typeof g.ranks === 'string' ? (JSON.parse(g.ranks) as unknown) : g.ranks;
    if (!Array.isArray(ranks))
      throw new TraceError(`${file}: pg_config ${name}: ranks ${String(g.ranks)} is not a list`);
    groups.set(name, ranks.map(Number));
  }
  return dump.entries.map((e, i) => entryCall(e, groups, rank, `${file} entry ${i}`));
}

const product = (dims: readonly number[]): number => dims.reduce((a, d) => a * Number(d), 1);

function entryCall(e: FrEntry, groups: Map<string, number[]>, rank: number, where: string): ReplayCall {
  const name = e.profiling_name;
  if (typeof name !== 'string' || !Array.isArray(e.input_sizes))
    throw new TraceError(`${where}: no profiling_name or input_sizes`);
  const collective = mapCollective(name);
  const pgName = String(e.process_group?.[0] ?? e.pg_id ?? '0');
  const ranks = groups.get(pgName) ?? null;
  const inputs = e.input_sizes.map(product),
    outputs = (e.output_sizes ?? []).map(product);
  // Elements per rank as the library counts them: reduce_scatter its output, the others their input.
  const count =
    collective === 'reduce_scatter' ? outputs.reduce((a, b) => a + b, 0) : inputs.reduce((a, b) => a + b, 0);
  const dtypeName = String(
    (collective === 'reduce_scatter' ? e.output_dtypes : e.input_dtypes)?.[0] ?? e.input_dtypes?.[0] ?? 'Byte',
  );
  const mapped = mapDtype(dtypeName);
  if (!mapped) throw new TraceError(`${where}: datatype ${dtypeName} is not one collbench can replay`);
  // "nccl:send 0->1" / "nccl:recv 1<-0": the peer is the other rank of the arrow (a group rank).
  const p2p = /(\d+)\s*(->|<-)\s*(\d+)/.exec(name);
  const peer = p2p ? Number(p2p[3]) : -1;
  // all_to_all with per-peer sizes: one input and one output tensor per peer.
  const perPeer = collective === 'alltoall' && e.input_sizes.length > 1;
  const t = e.time_created_ns;
  return {
    rank,
    name,
    collective: perPeer ? 'alltoallv' : collective,
    count,
    dtype: mapped.dtype,
    dtypeName,
    dtypeScale: mapped.scale,
    op: 'sum',
    root: peer,
    group: { id: pgName, size: ranks?.length ?? 0, ranks },
    ...(perPeer ? { inSplits: inputs, outSplits: outputs } : {}),
    ...(t !== undefined ? { timeNs: Number(t) } : {}),
    where,
  };
}
