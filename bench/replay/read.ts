// Reads a replay's inputs: files or folders, each file's format told from its first bytes (NCCL call log, Chakra
// execution trace, flight-recorder pickle or JSON), all of one format, into one ReplayTrace: every rank's calls.
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { TraceFormat } from '../report/replay-document.js';
import { TraceError, type ReplayCall, type ReplayTrace } from './calls.js';
import { looksLikeChakra, rankFromName, readChakra } from './chakra.js';
import { looksLikeFlightRecorder, readFlightRecorder } from './flight-recorder.js';
import { fileHead } from './lines.js';
import { looksLikeNcclLog, readNcclLogs } from './nccl-log.js';

/** The files named: each file as given, each folder's regular files in natural name order (rank 2 before 10). */
export function traceFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new TraceError(`${p}: no such file or folder`);
    }
    if (st.isDirectory()) {
      const names = readdirSync(p)
        .filter((n) => !n.startsWith('.') && statSync(join(p, n)).isFile())
        .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
      if (!names.length) throw new TraceError(`${p}: an empty folder`);
      out.push(...names.map((n) => join(p, n)));
    } else out.push(p);
  }
  return out;
}

type Kind = 'nccl-log' | 'chakra' | 'flight-recorder';

async function kindOf(path: string): Promise<Kind> {
  let head: Buffer;
  try {
    head = await fileHead(path);
  } catch (e) {
    throw new TraceError(`${basename(path)}: cannot be read (${(e as Error).message})`);
  }
  const text = head.toString('utf8');
  if (looksLikeChakra(text)) return 'chakra';
  if (looksLikeFlightRecorder(head)) return 'flight-recorder';
  if (looksLikeNcclLog(text)) return 'nccl-log';
  throw new TraceError(
    `${basename(path)}: neither an NCCL call log, a PyTorch execution trace nor a flight-recorder dump`,
  );
}

/** Every rank's calls from the given files or folders. */
export async function readTrace(paths: readonly string[]): Promise<ReplayTrace> {
  const files = traceFiles(paths);
  const kinds = await Promise.all(files.map(kindOf));
  const kind = kinds[0]!;
  const other = kinds.findIndex((k) => k !== kind);
  if (other >= 0)
    throw new TraceError(
      `${basename(files[other]!)} is ${kinds[other]} but ${basename(files[0]!)} is ${kind}: give one format at a time`,
    );
  let calls: (ReplayCall[] | undefined)[] = [];
  let format: TraceFormat;
  if (kind === 'nccl-log') {
    calls = await readNcclLogs(files);
    format = 'nccl-log';
  } else {
    const families = new Set<string>();
    for (const [i, f] of files.entries()) {
      const rank = rankFromName(f, i);
      if (calls[rank])
        throw new TraceError(
          `${basename(f)} and ${basename(calls[rank]![0]?.where.split(' ')[0] ?? '?')} are both rank ${rank} (the last number in a file's name is its rank)`,
        );
      if (kind === 'chakra') {
        const r = await readChakra(f, rank);
        families.add(r.family);
        calls[rank] = r.calls;
      } else calls[rank] = await readFlightRecorder(f, rank);
    }
    format = kind === 'flight-recorder' ? 'flight-recorder' : families.has('1.0') ? 'chakra-1.0' : 'chakra-1.1';
  }
  // The world: the largest group any call names, or the rank files there are.
  const sizes = calls.flatMap((cs) =>
    (cs ?? []).map((c) => Math.max(c.group.size, ...(c.group.ranks ?? []).map((r) => r + 1))),
  );
  const worldSize = Math.max(calls.length, ...sizes);
  for (const cs of calls) for (const c of cs ?? []) if (c.group.size === 0) c.group.size = worldSize;
  return { format, files, calls, worldSize };
}
