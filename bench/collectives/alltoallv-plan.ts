// Per-peer byte counts of alltoallv: the generated distance-weighted pattern (spread s) or a traffic
// matrix file. Mirrors nccl-tests src/alltoallv.cu (NCCL_TESTS_ALLTOALLV_SPREAD / _MATRIX_FILE /
// _MATRIX_SCALE, 16-byte flooring per peer); environment and file reading are injected.
import { readFileSync } from 'node:fs';
import type { PeerCounts } from '../core/types.js';
import { chunkElems } from './counts.js';

export const ENV_SPREAD = 'NCCL_TESTS_ALLTOALLV_SPREAD';
export const ENV_MATRIX_FILE = 'NCCL_TESTS_ALLTOALLV_MATRIX_FILE';
export const ENV_MATRIX_SCALE = 'NCCL_TESTS_ALLTOALLV_MATRIX_SCALE';

export type EnvLike = Readonly<Record<string, string | undefined>>;

/** A bad alltoallv setting or matrix file; the message is one line. The CLI maps it to a usage error. */
export class PlanError extends Error {
  override name = 'PlanError';
}

export interface GeneratedSource {
  mode: 'generated';
  spread: number;
}
export interface MatrixSource {
  mode: 'matrix';
  file: string;
  scale: number;
  /** Matrix dimension (rows = columns); jobs may use the top-left n x n for any n <= dim. */
  dim: number;
  /** Row-major bytes sender -> receiver, already scaled and floored to 16 B. */
  cells: readonly number[];
}
export type AlltoallvSource = GeneratedSource | MatrixSource;

/** Parses an optional number from the environment; empty or unset means "use the default". */
function envNumber(env: EnvLike, key: string, fallback: number): number {
  const text = env[key]?.trim();
  if (text === undefined || text === '') return fallback;
  const v = Number(text);
  // nccl-tests silently keeps the default for unparsable values; a typo there is better reported.
  if (!DECIMAL.test(text) || !Number.isFinite(v)) throw new PlanError(`${key}=${oneLine(text)} is not a number`);
  return v;
}

/** Spread s of the generated pattern: default 1.0, clamped to [0, 1]. */
export function readSpread(env: EnvLike): number {
  return Math.min(1, Math.max(0, envNumber(env, ENV_SPREAD, 1)));
}

/** Matrix scale: default 1.0, negative becomes 0. */
export function readScale(env: EnvLike): number {
  return Math.max(0, envNumber(env, ENV_MATRIX_SCALE, 1));
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const floor16 = (bytes: number): number => {
  const whole = Math.floor(bytes);
  return whole - (whole % 16);
};
const maxOf = (xs: readonly number[]): number => xs.reduce((m, v) => (v > m ? v : m), 0);
const oneLine = (s: string): string => {
  const flat = s.replace(/[\r\n]+/g, ' ');
  return flat.length > 40 ? `${flat.slice(0, 37)}...` : flat;
};

/**
 * Parses a whitespace-separated square matrix of byte counts (row = sender, column = receiver), one
 * row per non-blank line; scales each cell and floors it to a multiple of 16 bytes.
 */
export function parseTrafficMatrix(text: string, file: string, scale = 1): MatrixSource {
  const where = `alltoallv traffic matrix ${file}`;
  const cells: number[] = [];
  let cols = -1;
  let rows = 0;
  const lines = text.split('\n');
  for (let ln = 0; ln < lines.length; ln++) {
    const tokens = lines[ln]!.split(/\s+/).filter((t) => t !== '');
    if (tokens.length === 0) continue; // blank lines separate nothing
    if (cols < 0) cols = tokens.length;
    else if (tokens.length !== cols) {
      throw new PlanError(`${where}: line ${ln + 1} has ${tokens.length} values, expected ${cols} like the first row`);
    }
    tokens.forEach((tok, c) => {
      const v = Number(tok);
      if (!DECIMAL.test(tok) || !Number.isFinite(v)) {
        throw new PlanError(`${where}: invalid value '${oneLine(tok)}' at line ${ln + 1} column ${c + 1}`);
      }
      if (v < 0) throw new PlanError(`${where}: negative value ${tok} at line ${ln + 1} column ${c + 1}`);
      const scaled = v * scale;
      if (scaled > Number.MAX_SAFE_INTEGER) {
        throw new PlanError(`${where}: value ${tok} x scale ${scale} at line ${ln + 1} column ${c + 1} is too large`);
      }
      cells.push(floor16(scaled));
    });
    rows++;
  }
  if (rows === 0) throw new PlanError(`${where}: file is empty`);
  if (rows !== cols) throw new PlanError(`${where}: matrix must be square (got ${rows}x${cols})`);
  return { mode: 'matrix', file, scale, dim: rows, cells };
}

function defaultReadFile(path: string): string {
  return readFileSync(path, 'utf8');
}

/** The alltoallv mode selected by the environment (matrix file read through `readFile`). */
export function loadAlltoallvSource(
  env: EnvLike,
  readFile: (path: string) => string = defaultReadFile,
): AlltoallvSource {
  const file = env[ENV_MATRIX_FILE];
  if (file === undefined || file === '') return { mode: 'generated', spread: readSpread(env) };
  const scale = readScale(env);
  let text: string;
  try {
    text = readFile(file);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new PlanError(`cannot read alltoallv traffic matrix file ${file}: ${oneLine(why)}`);
  }
  return parseTrafficMatrix(text, file, scale);
}

/**
 * Bytes rank i sends to rank j in generated mode: (1-s)*T/n + s*d*T/(n(n-1)/2) with
 * d = (j-i) mod n, floored to 16 B; n = 1 sends everything to itself. Evaluated in the same order
 * of double operations as nccl-tests so the counts agree bit for bit.
 */
export function generatedPeerBytes(i: number, j: number, nranks: number, totalBytes: number, spread: number): number {
  if (nranks === 1) return floor16(totalBytes);
  const distance = (((j - i) % nranks) + nranks) % nranks;
  const sumDistances = (nranks * (nranks - 1)) / 2;
  const uniform = totalBytes / nranks;
  const dist = (distance * totalBytes) / sumDistances;
  return floor16((1 - spread) * uniform + spread * dist);
}

/** Matrix mode needs nranks <= dim. */
export function checkMatrixRanks(source: MatrixSource, nranks: number): void {
  if (nranks > source.dim) {
    throw new PlanError(
      `alltoallv traffic matrix ${source.file} is ${source.dim}x${source.dim}, too small for ${nranks} ranks`,
    );
  }
}

/** Row and column sums (bytes) of the top-left n x n block, cached per source. */
const matrixTotalsCache = new WeakMap<MatrixSource, Map<number, { send: number[]; recv: number[] }>>();
function matrixTotals(source: MatrixSource, nranks: number): { send: number[]; recv: number[] } {
  let perN = matrixTotalsCache.get(source);
  if (!perN) matrixTotalsCache.set(source, (perN = new Map<number, { send: number[]; recv: number[] }>()));
  let t = perN.get(nranks);
  if (!t) {
    const send = new Array<number>(nranks).fill(0);
    const recv = new Array<number>(nranks).fill(0);
    for (let i = 0; i < nranks; i++) {
      for (let j = 0; j < nranks; j++) {
        const v = source.cells[i * source.dim + j]!;
        send[i]! += v;
        recv[j]! += v;
      }
    }
    t = { send, recv };
    perN.set(nranks, t);
  }
  return t;
}

/**
 * Matrix mode runs one size only, and the sweep's maximum must hold the busiest rank
 * (nccl-tests: `-b` == `-e`, `-e` >= max per-rank send/recv total).
 */
export function checkMatrixSweep(source: MatrixSource, nranks: number, minBytes: number, maxBytes: number): void {
  checkMatrixRanks(source, nranks);
  if (minBytes !== maxBytes) {
    throw new PlanError(
      `alltoallv traffic matrix mode (${source.file}) needs -b equal to -e (got -b ${minBytes} -e ${maxBytes})`,
    );
  }
  const t = matrixTotals(source, nranks);
  const need = Math.max(maxOf(t.send), maxOf(t.recv));
  if (maxBytes < need) {
    throw new PlanError(
      `alltoallv traffic matrix ${source.file} needs -e of at least ${need} bytes (busiest rank's total; got ${maxBytes})`,
    );
  }
}

/** Per-peer counts of one row (one size, datatype and rank count), equal on every rank. */
export interface AlltoallvPlan {
  source: AlltoallvSource;
  nranks: number;
  dtypeBytes: number;
  /** The count column: b (generated) or 0 (matrix). */
  paramCount: number;
  /** Generated mode's nominal per-rank total T = b*n*ts (0 in matrix mode). */
  totalBytes: number;
  /** Largest per-rank send / receive total over all ranks, in elements. */
  maxSendElems: number;
  maxRecvElems: number;
  /** Elements rank i sends to rank j. */
  elems(i: number, j: number): number;
}

/** Counts of one row; `sizeBytes` is the sweep size (generated mode: per-rank nominal total). */
export function planAlltoallv(
  source: AlltoallvSource,
  sizeBytes: number,
  dtypeBytes: number,
  nranks: number,
): AlltoallvPlan {
  if (source.mode === 'generated') {
    const paramCount = chunkElems(sizeBytes, dtypeBytes, nranks);
    const totalBytes = paramCount * nranks * dtypeBytes;
    // Bytes depend only on the distance, so one row describes every rank.
    const byDistance: number[] = [];
    for (let d = 0; d < nranks; d++)
      byDistance.push(generatedPeerBytes(0, d, nranks, totalBytes, source.spread) / dtypeBytes);
    const rankTotal = byDistance.reduce((a, v) => a + v, 0);
    return {
      source,
      nranks,
      dtypeBytes,
      paramCount,
      totalBytes,
      maxSendElems: rankTotal,
      maxRecvElems: rankTotal,
      elems: (i, j) => byDistance[(((j - i) % nranks) + nranks) % nranks]!,
    };
  }
  // Matrix counts come from the file; the size only bounds the buffers (checkMatrixSweep).
  checkMatrixRanks(source, nranks);
  const t = matrixTotals(source, nranks);
  return {
    source,
    nranks,
    dtypeBytes,
    paramCount: 0,
    totalBytes: 0,
    maxSendElems: maxOf(t.send) / dtypeBytes,
    maxRecvElems: maxOf(t.recv) / dtypeBytes,
    elems: (i, j) => source.cells[i * source.dim + j]! / dtypeBytes,
  };
}

/** One rank's view: counts/displacements per peer and where its segments sit in each source's stream. */
export interface AlltoallvRankCounts {
  peers: PeerCounts;
  /** For each source, the element offset in that source's send stream of the segment sent to me. */
  srcOffsets: number[];
  sendElems: number;
  recvElems: number;
}

export function rankCounts(plan: AlltoallvPlan, rank: number): AlltoallvRankCounts {
  const n = plan.nranks;
  const sendCounts: number[] = [],
    sendDispls: number[] = [],
    recvCounts: number[] = [],
    recvDispls: number[] = [];
  let sendElems = 0,
    recvElems = 0;
  for (let peer = 0; peer < n; peer++) {
    const s = plan.elems(rank, peer);
    sendCounts.push(s);
    sendDispls.push(sendElems);
    sendElems += s;
    const r = plan.elems(peer, rank);
    recvCounts.push(r);
    recvDispls.push(recvElems);
    recvElems += r;
  }
  const srcOffsets: number[] = [];
  if (plan.source.mode === 'generated') {
    // Sum over k < rank of elems(src, k): a cyclic range of distances, from prefix sums in O(1).
    const prefix = [0];
    for (let d = 0; d < n; d++) prefix.push(prefix[d]! + plan.elems(0, d));
    for (let src = 0; src < n; src++) {
      const start = (n - src) % n,
        end = start + rank;
      srcOffsets.push(end <= n ? prefix[end]! - prefix[start]! : prefix[n]! - prefix[start]! + prefix[end - n]!);
    }
  } else {
    for (let src = 0; src < n; src++) {
      let off = 0;
      for (let k = 0; k < rank; k++) off += plan.elems(src, k);
      srcOffsets.push(off);
    }
  }
  return { peers: { sendCounts, sendDispls, recvCounts, recvDispls }, srcOffsets, sendElems, recvElems };
}

/** Per-rank send/recv bytes (for NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY-style reports); O(n^2). */
export function rankTotalsBytes(plan: AlltoallvPlan): { sendBytes: number; recvBytes: number }[] {
  const out: { sendBytes: number; recvBytes: number }[] = [];
  for (let r = 0; r < plan.nranks; r++) {
    let s = 0,
      v = 0;
    for (let p = 0; p < plan.nranks; p++) {
      s += plan.elems(r, p);
      v += plan.elems(p, r);
    }
    out.push({ sendBytes: s * plan.dtypeBytes, recvBytes: v * plan.dtypeBytes });
  }
  return out;
}
