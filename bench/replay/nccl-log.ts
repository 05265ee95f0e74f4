// NCCL's own call log (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL, any framework): one line per call, written by NCCL's
// src/enqueue.cc (read at v2.30: "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p
// [nranks=%d] stream %p") behind src/debug.cc's "[time] host:pid:tid [cudaDev] NCCL INFO " prefix. Streamed line by line.
import { basename } from 'node:path';
import { mapCollective, mapDtype, mapOp, TraceError, type ReplayCall, type ReplayGroup } from './calls.js';
import { fileLines } from './lines.js';

// RCCL writes the same line with a timestamp after [dev] and " task T globalrank G" at the end (G: the process's rank).
// What launchers put before NCCL's prefix is skipped: a [time], torchrun's "[rank0]:", Ray's "(RayTrainWorker pid=…) ".
const COLL = new RegExp(
  '(?:^|[\\s\\]:])([^\\s:[\\]]+?):(\\d+):\\d+ (?:\\[(\\d+)\\] )?(?:\\d+ )?NCCL INFO (\\w+): opCount [0-9a-f]+ ' +
    'sendbuff \\S+ recvbuff \\S+ count (\\d+) datatype (\\d+) op (\\d+) root (-?\\d+) comm (\\S+)(?: \\[nranks=(\\d+)\\])?' +
    '(?: stream \\S+)?(?: task \\d+ globalrank (\\d+))?',
);
/** INFO INIT's "comm 0x… rank R nRanks N … Init COMPLETE" (its case varies across versions): who a process is. */
const INIT =
  /(?:^|[\s\]:])([^\s:[\]]+?):(\d+):\d+ (?:\[(\d+)\] )?NCCL INFO .*\bcomm (0x[0-9a-f]+) rank (\d+) nranks (\d+)\b.*Init COMPLETE/i;

/** One process of the log: its calls and, where INFO INIT was logged too, its rank in each communicator. */
interface LogComm {
  id: string;
  nranks: number;
  group: ReplayGroup;
}
interface LogProcess {
  key: string;
  calls: ReplayCall[];
  comms: Map<string, LogComm>;
  rankIn: Map<string, number>;
  order: number;
  globalRank: number | null;
}

/** True when the head of a file looks like an NCCL log with call lines. */
export function looksLikeNcclLog(head: string): boolean {
  return head.split('\n').some((l) => l.includes('NCCL INFO'));
}

/**
 * The calls of every process in the given logs (one per rank, or merged). A rank is host:pid:[cudaDev] (a process
 * driving several GPUs holds one communicator, one rank, per device); its rank is RCCL's
 * globalrank, or the one INFO INIT gave it in its largest communicator where that line is there, else its place: the
 * file order (one process per file) or, in a merged log, the order in which processes first appear. Communicators are told apart by
 * their pointer within a process; across processes the k-th communicator a process uses is group c<k>.
 */
export async function readNcclLogs(paths: readonly string[]): Promise<ReplayCall[][]> {
  const processes = new Map<string, LogProcess>();
  let calls = 0;
  for (const path of paths) {
    const file = basename(path);
    for await (const { lines, firstLineNo } of fileLines(path))
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!;
        if (!line.includes('NCCL INFO')) continue;
        const where = `${file}:${firstLineNo + i}`;
        // Cheap substring tests first: most INFO lines are neither calls nor INIT's (the regular expressions cost more).
        const m = line.includes(' opCount ') ? COLL.exec(line) : null;
        if (!m) {
          const init = line.includes('Init COMPLETE') ? INIT.exec(line) : null;
          if (init) {
            const p = processOf(processes, `${init[1]}:${init[2]}:${init[3] ?? ''}`);
            p.rankIn.set(init[4]!, Number(init[5]));
            if (!p.comms.has(init[4]!)) p.comms.set(init[4]!, logComm(p.comms.size, Number(init[6])));
          } else if (/NCCL INFO \w+: opCount /.test(line)) {
            throw new TraceError(
              `${where}: not an NCCL call line (count, datatype, op, root, comm expected): ${clip(line)}`,
            );
          }
          continue;
        }
        const [, host, pid, dev, name, count, dtype, op, root, comm, nranks, globalRank] = m;
        const p = processOf(processes, `${host}:${pid}:${dev ?? ''}`);
        if (globalRank !== undefined) p.globalRank = Number(globalRank);
        let c = p.comms.get(comm!);
        if (!c) {
          if (nranks === undefined)
            throw new TraceError(
              `${where}: no [nranks=] on the line and no INFO INIT line for comm ${comm}: its size is unknown (NCCL before 2.8? log with NCCL_DEBUG_SUBSYS=INIT,COLL)`,
            );
          c = logComm(p.comms.size, Number(nranks));
          p.comms.set(comm!, c);
        }
        const mapped = mapDtype(Number(dtype));
        if (!mapped) throw new TraceError(`${where}: datatype ${dtype} is not an ncclDataType_t collbench knows`);
        p.calls.push({
          rank: -1,
          name: name!,
          collective: mapCollective(name!),
          count: Number(count),
          dtype: mapped.dtype,
          dtypeName: mapped.dtype,
          dtypeScale: 1,
          op: mapOp(Number(op)),
          root: Number(root),
          group: c.group,
          where,
        });
        calls++;
      }
  }
  if (calls === 0)
    throw new TraceError(
      `${paths.map((p) => basename(p)).join(', ')}: no NCCL call lines ("NCCL INFO AllReduce: opCount …"); log with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL`,
    );
  return ranked([...processes.values()]);
}

/** The k-th communicator of a process: one group object shared by all its calls. */
const logComm = (k: number, nranks: number): LogComm => ({
  id: `c${k}`,
  nranks,
  group: { id: `c${k}`, size: nranks, ranks: null },
});

function processOf(all: Map<string, LogProcess>, key: string): LogProcess {
  let p = all.get(key);
  if (!p) {
    p = { key, calls: [], comms: new Map(), rankIn: new Map(), order: all.size, globalRank: null };
    all.set(key, p);
  }
  return p;
}

/** Each process's calls at its rank: RCCL's globalrank, else INFO INIT's rank in its largest communicator, else its
 *  order of appearance. */
function ranked(processes: LogProcess[]): ReplayCall[][] {
  const withCalls = processes.filter((p) => p.calls.length > 0);
  const rankOf = (p: LogProcess): number | null => {
    if (p.globalRank !== null) return p.globalRank;
    let best: { nranks: number; rank: number } | null = null;
    for (const [comm, rank] of p.rankIn) {
      const n = p.comms.get(comm)!.nranks;
      if (!best || n > best.nranks) best = { nranks: n, rank };
    }
    return best?.rank ?? null;
  };
  const known = withCalls.every((p) => rankOf(p) !== null);
  const out: ReplayCall[][] = [];
  withCalls.forEach((p, i) => {
    const rank = known ? rankOf(p)! : i;
    if (out[rank])
      throw new TraceError(`processes ${out[rank]![0]!.where} and ${p.calls[0]!.where} both say they are rank ${rank}`);
    for (const c of p.calls) c.rank = rank;
    out[rank] = p.calls;
  });
  return out;
}

const clip = (s: string): string => (s.length > 100 ? `${s.slice(0, 97)}...` : s);
