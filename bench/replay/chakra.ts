// PyTorch execution traces (Chakra host ET 1.0.x and 1.1.x, .json or .json.gz, one file per rank) to calls, read as
// facebookresearch/param's et_replay does. A byte scanner cuts the top-level object into nodes and only communication
// nodes are parsed: fast enough for a 1 GiB trace (docs/replay.md, "Scale").
import { basename } from 'node:path';
import { mapCollective, mapDtype, mapOp, TraceError, type ReplayCall, type ReplayGroup } from './calls.js';
import { openInput } from './lines.js';

/** A node as 1.0.3+ writes it (inputs/outputs as {values, shapes, types}, ctrl_deps, attrs) or as 1.0.1 did
 *  (inputs/outputs as lists beside input_types/output_types, parent). */
interface RawNode {
  id: number;
  name: string;
  ctrl_deps?: number;
  parent?: number;
  inputs?: { values?: unknown[]; types?: string[] } | unknown[];
  input_types?: string[];
  outputs?: { values?: unknown[]; types?: string[] } | unknown[];
  output_types?: string[];
  attrs?: { name: string; value: unknown }[];
}
interface EtNode {
  id: number;
  name: string;
  parent: number;
  inputs: { values: unknown[]; types: string[] };
  outputs: { values: unknown[]; types: string[] };
  attrs: { name: string; value: unknown }[];
}

/** Both node shapes as one. */
function normalize(n: RawNode): EtNode {
  const side = (v: RawNode['inputs'], types: string[] | undefined) =>
    Array.isArray(v) ? { values: v, types: types ?? [] } : { values: v?.values ?? [], types: v?.types ?? [] };
  return {
    id: n.id,
    name: n.name,
    parent: n.ctrl_deps ?? n.parent ?? -1,
    attrs: n.attrs ?? [],
    inputs: side(n.inputs, n.input_types),
    outputs: side(n.outputs, n.output_types),
  };
}

const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  OPEN = 0x7b,
  CLOSE = 0x7d,
  OPEN_ARR = 0x5b,
  CLOSE_ARR = 0x5d;
/** Names of the nodes worth parsing; every other node is skipped unparsed. */
const WANTED = ['record_param_comms', 'nccl:', 'c10d::', '## process_group:init'];
const NAME_KEY = Buffer.from('"name"');

/** The node's own name: the first "name" key's string (ET writes it before inputs and attrs), or null. */
function nodeName(text: Buffer): string | null {
  const at = text.indexOf(NAME_KEY);
  if (at < 0) return null;
  const open = text.indexOf(QUOTE, at + NAME_KEY.length);
  const close = open < 0 ? -1 : text.indexOf(QUOTE, open + 1);
  return close < 0 ? null : text.toString('utf8', open + 1, Math.min(close, open + 1 + 64));
}

/**
 * Yields the text of every object that sits in an array directly under the top-level object (the ET's nodes) whose
 * name starts with one of `wanted`, with the head of the file (what came before the first node: schema, pid) first.
 */
export async function* etNodes(
  path: string,
  wanted: readonly string[] = WANTED,
  chunkBytes?: number,
): AsyncGenerator<{ kind: 'head'; text: string } | { kind: 'node'; text: Buffer }> {
  let depth = 0,
    inString = false,
    escaped = false,
    headDone = false;
  const head: Buffer[] = [];
  let parts: Buffer[] = []; // the node being read, across chunks
  let nodeStart = -1; // its start in the current chunk, or -1 when it began in an earlier one
  let inNode = false;
  for await (const chunk of openInput(path, chunkBytes)) {
    const b = chunk as Buffer;
    if (inNode) nodeStart = 0;
    const len = b.length;
    for (let i = 0; i < len; i++) {
      const ch = b[i]!;
      if (inString || ch === QUOTE) {
        // A string, to its closing quote or the chunk's end, in a loop of its own (most of a trace's bytes).
        if (!inString) {
          inString = true;
          i++;
        } else if (escaped) {
          escaped = false;
          i++;
        }
        for (; i < len; i++) {
          const c = b[i]!;
          if (c === BACKSLASH) {
            if (i + 1 < len) i++;
            else escaped = true; // the escaped byte starts the next chunk
          } else if (c === QUOTE) {
            inString = false;
            break;
          }
        }
        continue;
      }
      if (ch === OPEN || ch === OPEN_ARR) {
        depth++;
        if (depth === 3 && ch === OPEN) {
          if (!headDone) {
            headDone = true;
            head.push(b.subarray(0, i));
            yield { kind: 'head', text: Buffer.concat(head).toString() };
          }
          inNode = true;
          nodeStart = i;
          parts = [];
        }
      } else if (ch === CLOSE || ch === CLOSE_ARR) {
        if (depth === 3 && inNode) {
          parts.push(b.subarray(nodeStart, i + 1));
          const text = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
          inNode = false;
          parts = [];
          const name = nodeName(text);
          if (name !== null && wanted.some((w) => name.startsWith(w))) yield { kind: 'node', text };
        }
        depth--;
      }
    }
    if (inNode) parts.push(b.subarray(nodeStart));
    else if (!headDone && head.reduce((n, h) => n + h.length, 0) < 1 << 20) head.push(Buffer.from(b));
  }
  if (depth !== 0 || inString)
    throw new TraceError(
      `${basename(path)}: the JSON ends in the middle of ${inNode ? 'a node' : 'the trace'} (truncated file?)`,
    );
  if (!headDone) yield { kind: 'head', text: Buffer.concat(head).toString() };
}

/** True when the head of a (decompressed) file is a Chakra/PyTorch execution trace. */
export function looksLikeChakra(head: string): boolean {
  return /"schema"\s*:\s*"1\.[01]\.\d+/.test(head) && head.includes('"nodes"');
}

const attrsOf = (n: EtNode): Map<string, unknown> => new Map((n.attrs ?? []).map((a) => [a.name, a.value]));
const isTensor = (v: unknown): v is [number, number, number, number, number, string] =>
  Array.isArray(v) && v.length === 6 && typeof v[3] === 'number' && typeof v[4] === 'number';
/** Elements of a recorded tensor or list of tensors. */
const nelems = (v: unknown): number =>
  isTensor(v) ? v[3] : Array.isArray(v) ? v.reduce((a: number, x) => a + nelems(x), 0) : 0;
/** The element type inside "Tensor(float)" / "GenericList[Tensor(long int)]" (C++ type names, c10::Half). */
const tensorType = (t: string | undefined): string | null => /Tensor\(([^)]+)\)/.exec(t ?? '')?.[1] ?? null;

/** Which rank a file is: `rank<N>` (rank-3.json.gz, nccl_trace_rank_3), else a number that ends the name before its
 *  extensions (dlrm_eg_3.json, trace.3.json), else its place in the list (hf_GPT2_et.json: 2 is not a rank). */
export function rankFromName(path: string, fallback: number): number {
  const name = basename(path);
  const tagged = /rank[-_.]?(\d+)/i.exec(name);
  if (tagged) return Number(tagged[1]);
  const stem = name.replace(/(\.(json|gz|pkl|pickle|log|txt))+$/i, '');
  const last = /[-_.](\d+)$/.exec(stem);
  return last ? Number(last[1]) : fallback;
}

/** One rank's calls from its execution trace, and the schema family it was read as. */
export async function readChakra(path: string, rank: number): Promise<{ calls: ReplayCall[]; family: '1.0' | '1.1' }> {
  const file = basename(path);
  const calls: ReplayCall[] = [];
  const groups = new Map<string, number[]>(); // pg_name -> global ranks, from process_group:init
  const parents = new Map<number, EtNode>(); // c10d::* nodes, for the splits of 1.0.x nccl:* nodes
  const ncclNodes: EtNode[] = [];
  let family: '1.0' | '1.1' | null = null;
  let sawComms = false;
  for await (const item of etNodes(path)) {
    if (item.kind === 'head') {
      const schema = /"schema"\s*:\s*"([^"]+)"/.exec(item.text)?.[1];
      if (!schema) throw new TraceError(`${file}: no "schema" at the top: not a PyTorch execution trace`);
      const m = /^1\.([01])\.\d+/.exec(schema);
      if (!m) throw new TraceError(`${file}: execution-trace schema ${schema} is neither 1.0.x nor 1.1.x`);
      family = m[1] === '0' ? '1.0' : '1.1';
      continue;
    }
    let raw: RawNode;
    try {
      raw = JSON.parse(item.text.toString()) as RawNode;
    } catch (e) {
      const id = /"id"\s*:\s*(\d+)/.exec(item.text.toString('utf8', 0, 200))?.[1] ?? '?';
      throw new TraceError(`${file} node ${id}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof raw.id !== 'number' || typeof raw.name !== 'string')
      throw new TraceError(`${file}: a node without a numeric id and a name`);
    const node = normalize(raw);
    if (node.name.includes('process_group:init')) readGroups(node, groups, file);
    else if (node.name === 'record_param_comms') {
      const c = commsCall(node, family ?? '1.1', groups, rank, `${file} node ${node.id}`);
      if (c) {
        calls.push(c);
        sawComms = true;
      }
    } else if (node.name.startsWith('c10d::')) parents.set(node.id, node);
    else if (node.name.startsWith('nccl:')) ncclNodes.push(node);
  }
  // Older 1.0.x traces: no record_param_comms, the calls are the nccl:* nodes themselves.
  if (!sawComms)
    for (const n of ncclNodes) calls.push(ncclNodeCall(n, parents.get(n.parent), rank, `${file} node ${n.id}`));
  return { calls, family: family ?? '1.1' };
}

/** process_group:init's inputs[0]: the JSON list of every group (pg_name, ranks: [] meaning all, group_size). */
function readGroups(node: EtNode, groups: Map<string, number[]>, file: string): void {
  const raw = node.inputs.values[0];
  if (typeof raw !== 'string') return;
  let list: { pg_name: string; ranks: number[]; group_size: number }[];
  try {
    list = JSON.parse(raw) as typeof list;
  } catch {
    return; // PyTorch truncates a long pg_config_info; et_replay ignores it then too
  }
  if (!Array.isArray(list))
    throw new TraceError(`${file} node ${node.id}: process_group:init does not hold a list of groups`);
  for (const g of list)
    groups.set(String(g.pg_name), g.ranks.length ? g.ranks : Array.from({ length: g.group_size }, (_, i) => i));
}

/** A record_param_comms node as a call (1.1.x attrs, else 1.0.x positional inputs); null for wait/init. */
function commsCall(
  node: EtNode,
  family: '1.0' | '1.1',
  groups: Map<string, number[]>,
  rank: number,
  where: string,
): ReplayCall | null {
  const a = attrsOf(node);
  const v = node.inputs.values;
  // inputs: [tensors]?, seq_id, [pg_name, pg_desc], rank, collective_name, in_split, out_split, start, stride, size
  const base = Array.isArray(v[0]) && !(v[0].length === 2 && typeof v[0][1] === 'boolean') ? 1 : 0;
  const pos = (k: number): unknown => v[base + k];
  const text = (x: unknown): string => (typeof x === 'string' || typeof x === 'number' ? String(x) : '');
  const name = text(a.get('collective_name') ?? pos(3));
  if (!name) throw new TraceError(`${where}: record_param_comms without a collective name`);
  // broadcastUniqueNCCLID: the bring-up's id exchange (in PyTorch 2.11's traces, seen on the H100), no data-path call.
  const notCalls = ['wait', 'init', 'abort', 'coalesced', 'broadcastuniquencclid'];
  if (notCalls.includes(name.toLowerCase())) return null;
  const pg = pos(1);
  const pgName = text(a.get('pg_name') ?? (Array.isArray(pg) ? pg[0] : undefined)) || '0';
  // The group's ranks: process_group:init's list, else start/stride/size where recorded; else the world (size 0).
  const start = Number(a.get('global_rank_start') ?? pos(6) ?? 0);
  const stride = Number(a.get('global_rank_stride') ?? pos(7) ?? 1);
  const size = Number(a.get('pg_size') ?? pos(8) ?? 0);
  const ranks =
    groups.get(pgName) ??
    (size > 0 && start >= 0 && stride > 0 ? Array.from({ length: size }, (_, i) => start + i * stride) : null);
  const group: ReplayGroup = { id: pgName, size: ranks?.length ?? size, ranks };
  const barrier = name.toLowerCase() === 'barrier';
  const collective = barrier ? 'all_reduce' : mapCollective(name);
  const splits = (key: string, k: number): number[] | undefined => {
    const s = a.has(key) ? (JSON.parse(String(a.get(key))) as unknown) : pos(k);
    return Array.isArray(s) && s.length ? s.map(Number) : undefined;
  };
  let count: number, dtypeName: string;
  if (family === '1.1' && a.has('in_msg_nelems')) {
    count = Number(collective === 'reduce_scatter' ? a.get('out_msg_nelems') : a.get('in_msg_nelems'));
    dtypeName = String(a.get('dtype'));
  } else {
    const tensors = collective === 'reduce_scatter' ? node.outputs.values[0] : base ? v[0] : undefined;
    count = nelems(tensors);
    dtypeName = tensorType((collective === 'reduce_scatter' ? node.outputs.types : node.inputs.types)[0]) ?? 'Byte';
  }
  if (barrier) {
    count = 1;
    dtypeName = 'Float';
  }
  const mapped = mapDtype(dtypeName);
  if (!mapped) throw new TraceError(`${where}: datatype ${dtypeName} is not one collbench can replay`);
  const recorded = Number(pos(2) ?? -1);
  const rooted =
    collective === 'broadcast' ||
    collective === 'reduce' ||
    collective === 'gather' ||
    collective === 'scatter' ||
    collective === 'send' ||
    collective === 'recv';
  const inSplits = splits('in_split_size', 4),
    outSplits = splits('out_split_size', 5);
  return {
    rank,
    name,
    collective: collective === 'alltoall' && (inSplits || outSplits) ? 'alltoallv' : collective,
    count,
    dtype: mapped.dtype,
    dtypeName,
    dtypeScale: mapped.scale,
    op: 'sum',
    root: rooted ? recorded : -1,
    group,
    ...(inSplits ? { inSplits } : {}),
    ...(outSplits ? { outSplits } : {}),
    where,
  };
}

/** An nccl:* node (oldest 1.0.x traces): size from its tensor input, splits from its c10d::* parent. */
function ncclNodeCall(n: EtNode, parent: EtNode | undefined, rank: number, where: string): ReplayCall {
  const t = n.inputs.values[0];
  const dtypeName = tensorType(n.inputs.types[0]) ?? 'Byte';
  const mapped = mapDtype(dtypeName);
  if (!mapped) throw new TraceError(`${where}: datatype ${dtypeName} is not one collbench can replay`);
  const collective = mapCollective(n.name);
  const lists = (parent?.inputs.values ?? []).filter(
    (x): x is number[] => Array.isArray(x) && x.length > 0 && x.every((y) => typeof y === 'number'),
  );
  const [outSplits, inSplits] =
    collective === 'alltoall' && lists.length >= 2 ? [lists[0], lists[1]] : [undefined, undefined];
  return {
    rank,
    name: n.name,
    collective: inSplits ? 'alltoallv' : collective,
    count: nelems(t),
    dtype: mapped.dtype,
    dtypeName,
    dtypeScale: mapped.scale,
    op: mapOp(String(parent?.name ?? '')),
    root: -1,
    group: { id: '0', size: 0, ranks: null },
    ...(inSplits ? { inSplits, outSplits } : {}),
    where,
  };
}
