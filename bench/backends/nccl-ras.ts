// NCCL's own view of a hang from its RAS service (NCCL >= 2.24): when the watchdog expires on nccl, which ranks are
// missing or dead and whose operation counts differ, printed beside the progress boards' verdict and kept in the
// report. Speaks NCCL's text protocol (src/ras/client.cc) over TCP with a short deadline.
import { connect, type Socket } from 'node:net';
import { BoundedLines } from '../launch/bounded-lines.js';

export const RAS_DEFAULT_ADDR = 'localhost:28028';
/** The whole exchange must end within this (connect, handshake, the report): a hung job is being ended. */
export const RAS_DEADLINE_MS = 5000;
/** How long RAS itself may wait on each leg of its collection from the job's processes (`TIMEOUT` command). */
export const RAS_COLLECTION_TIMEOUT_S = 3;
/** The longest handshake line, and the largest report, read from a RAS server (the verbose JSON report takes about
 *  600 bytes per rank of each communicator: test/fixtures/nccl-ras): a server that sends more is not read further,
 *  so it cannot grow this process without bound. */
export const RAS_MAX_LINE_BYTES = 4096;
export const RAS_MAX_REPLY_BYTES = 64 * 2 ** 20;
/** RAS came with NCCL 2.24; JSON output (`SET FORMAT json`) with 2.28.7. */
export const RAS_MIN_VERSION = 22400;

/** What a library's own service said about a hang (the registry record's hangView), as the report keeps it. */
export interface LibraryHangView {
  source: string;
  /** answered: `view` holds its report; unavailable: `reason` says why not (off, too old, nothing listening, no answer). */
  state: 'answered' | 'unavailable';
  reason: string | null;
  /** The lines printed. */
  lines: string[];
  view: RasView | null;
}

export interface RasMissingRank {
  rank: number;
  host: string;
  pid: number;
  cudaDev: number;
  unresponsive: boolean | null;
  dead: boolean | null;
}

export interface RasCommunicator {
  hash: string;
  size: number;
  /** Ranks that answered (JSON; the text form gives only the group's size). */
  ranksAnswered: number | null;
  missing: RasMissingRank[];
  /** Per collective with differing operation counts: count → ranks (a MISMATCH). */
  mismatches: { collective: string; counts: { count: number; ranks: number[] }[] }[];
  /** The counts when they agree (collective → count). */
  counts: Record<string, number>;
  /** Ranks reporting an asynchronous or initialisation error, or aborted (an ERROR). */
  errorRanks: number[];
  status: string | null;
}

export interface RasFinding {
  kind: 'INCOMPLETE' | 'DEAD' | 'ERROR' | 'MISMATCH' | 'TIMEOUT';
  /** The communicator's hash, null for the job as a whole. */
  comm: string | null;
  text: string;
}

export interface RasView {
  format: 'json' | 'text';
  ncclVersion: string | null;
  communicators: RasCommunicator[];
  findings: RasFinding[];
  /** Seconds RAS took to collect, and its legs that timed out. */
  collectionSec: number | null;
  timeouts: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing

/** A rank list as `0-3, 5`. */
export function rankList(ranks: readonly number[]): string {
  const s = [...ranks].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j]! + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return out.join(', ');
}

interface JsonRank {
  rank: number;
  host: string;
  pid: number;
  cuda_dev: number;
  status?: { init_state?: number; async_error?: number; abort_flag?: boolean };
  collective_counts?: Record<string, number>;
}
interface JsonMissing {
  rank: number;
  host: string;
  pid: number;
  cuda_dev: number;
  status?: { unresponsive?: boolean; considered_dead?: boolean };
}
interface JsonComm {
  hash: string;
  size: number;
  ranks_count: number;
  ranks?: JsonRank[];
  missing_ranks?: JsonMissing[];
}
interface JsonReport {
  nccl_version?: string;
  communicators?: JsonComm[];
  ras?: { collection_time_sec?: number; timeouts_count?: number };
}

/**
 * NCCL 2.28.7-2.28.9 write a missing rank's `"nvml_dev": N` without the comma before its `"status"`
 * (client_support.cc jsonWriteMissingRank; fixed later): that one defect is mended, nothing else.
 */
function mendJson(text: string): string {
  return text.replace(/("nvml_dev": -?\d+)(\s*\n\s*"status")/g, '$1,$2');
}

/** The JSON report (`SET FORMAT json`, NCCL >= 2.28.7). Throws on anything that is not one. */
export function parseRasJson(text: string): RasView {
  const doc = JSON.parse(mendJson(text)) as JsonReport;
  if (typeof doc !== 'object' || doc === null || !Array.isArray(doc.communicators)) {
    throw new Error('not a RAS JSON report (no "communicators")');
  }
  const findings: RasFinding[] = [];
  const communicators = doc.communicators.map((c): RasCommunicator => {
    const ranks = c.ranks ?? [];
    const missing = (c.missing_ranks ?? []).map((m): RasMissingRank => ({
      rank: m.rank,
      host: m.host,
      pid: m.pid,
      cudaDev: m.cuda_dev,
      unresponsive: m.status?.unresponsive ?? null,
      dead: m.status?.considered_dead ?? null,
    }));
    const names = [...new Set(ranks.flatMap((r) => Object.keys(r.collective_counts ?? {})))];
    const mismatches: RasCommunicator['mismatches'] = [];
    const counts: Record<string, number> = {};
    for (const name of names) {
      const by = new Map<number, number[]>();
      for (const r of ranks) {
        const n = r.collective_counts?.[name] ?? 0;
        by.set(n, [...(by.get(n) ?? []), r.rank]);
      }
      if (by.size > 1) {
        mismatches.push({
          collective: name,
          counts: [...by.entries()].sort((a, b) => b[0] - a[0]).map(([count, rs]) => ({ count, ranks: rs })),
        });
      } else {
        counts[name] = [...by.keys()][0] ?? 0;
      }
    }
    const errorRanks = ranks
      .filter((r) => (r.status?.async_error ?? 0) !== 0 || (r.status?.init_state ?? 0) !== 0 || r.status?.abort_flag)
      .map((r) => r.rank);
    const comm: RasCommunicator = {
      hash: c.hash,
      size: c.size,
      ranksAnswered: c.ranks_count,
      missing,
      mismatches,
      counts,
      errorRanks,
      status: null,
    };
    if (missing.length > 0) {
      findings.push({
        kind: 'INCOMPLETE',
        comm: c.hash,
        text:
          `${missing.length} of ${c.size} ranks missing: ` +
          missing
            .map(
              (m) =>
                `rank ${m.rank} (host ${m.host}, pid ${m.pid}, GPU ${m.cudaDev}` +
                `${m.unresponsive ? ', unresponsive' : ''}${m.dead ? ', considered dead' : ''})`,
            )
            .join('; '),
      });
    }
    const dead = missing.filter((m) => m.dead);
    if (dead.length > 0)
      findings.push({ kind: 'DEAD', comm: c.hash, text: `dead peers: ranks ${rankList(dead.map((m) => m.rank))}` });
    if (errorRanks.length > 0)
      findings.push({ kind: 'ERROR', comm: c.hash, text: `errors on ranks ${rankList(errorRanks)}` });
    for (const m of mismatches) {
      findings.push({
        kind: 'MISMATCH',
        comm: c.hash,
        text:
          `${m.collective} operation counts differ: ` +
          m.counts
            .map((x) => `${x.ranks.length === 1 ? 'rank' : 'ranks'} ${rankList(x.ranks)} at ${x.count}`)
            .join('; '),
      });
    }
    return comm;
  });
  const timeouts = doc.ras?.timeouts_count ?? 0;
  if (timeouts > 0)
    findings.push({ kind: 'TIMEOUT', comm: null, text: `${timeouts} timeouts while RAS collected its data` });
  return {
    format: 'json',
    ncclVersion: doc.nccl_version ?? null,
    communicators,
    findings,
    collectionSec: doc.ras?.collection_time_sec ?? null,
    timeouts,
  };
}

const KINDS: readonly RasFinding['kind'][] = ['INCOMPLETE', 'DEAD', 'ERROR', 'MISMATCH', 'TIMEOUT'];

/**
 * The text report (every NCCL with RAS): the communicator groups of its summary table (their status and errors)
 * and each block of its Errors and Warnings sections (a headline such as `INCOMPLETE`, `DEAD` or
 * `#0-0 (hash) MISMATCH`, then indented lines), one finding per block.
 */
export function parseRasText(text: string): RasView {
  const lines = text.split('\n');
  const version = /^NCCL version (\S+)/m.exec(text)?.[1] ?? null;
  if (!/^Communicators/m.test(text) && !/^Errors$/m.test(text))
    throw new Error('not a RAS text report (no Communicators or Errors section)');
  const communicators: RasCommunicator[] = [];
  const head = lines.findIndex((l) => /^Group\s+Comms\s+Nodes/.test(l));
  if (head >= 0) {
    for (const l of lines.slice(head + 2)) {
      // group, comms in group, nodes per comm, ranks per node, ranks per comm, ranks in group, status, errors
      const m = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$/.exec(l);
      if (!m) break;
      communicators.push({
        hash: `group ${m[1]} (${m[2]} communicator${m[2] === '1' ? '' : 's'})`,
        size: Number(m[5]),
        ranksAnswered: null,
        missing: [],
        mismatches: [],
        counts: {},
        errorRanks: [],
        status: `${m[7]} ${m[8]}`,
      });
    }
  }
  const findings: RasFinding[] = [];
  const start = lines.findIndex((l) => l === 'Errors');
  let current: RasFinding | null = null;
  for (const l of start >= 0 ? lines.slice(start) : []) {
    if (/^(Errors|Warnings|=+)$/.test(l) || l.trim() === '') {
      current = null;
      continue;
    }
    const headline = /^(?:#(\S+) \((\w+)\) )?([A-Z]+)$/.exec(l);
    if (headline && KINDS.includes(headline[3] as RasFinding['kind'])) {
      current = {
        kind: headline[3] as RasFinding['kind'],
        comm: headline[2] ? `0x${headline[2].replace(/^0+/, '')}` : null,
        text: '',
      };
      findings.push(current);
    } else if (current && /^\s+/.test(l)) {
      current.text = current.text ? `${current.text}; ${l.trim()}` : l.trim();
    }
  }
  const timeouts = findings.filter((f) => f.kind === 'TIMEOUT').length;
  const took = /^Communicators\.\.\. \(([\d.]+)s\)/m.exec(text);
  return {
    format: 'text',
    ncclVersion: version,
    communicators,
    findings,
    collectionSec: took ? Number(took[1]) : null,
    timeouts,
  };
}

/** The lines printed beside the verdict: what RAS saw, communicator by communicator, then its findings. */
export function describeRasView(view: RasView, addr: string): string[] {
  const took = view.collectionSec === null ? '' : `, collected in ${view.collectionSec.toFixed(3)} s`;
  const out = [
    `# NCCL RAS at ${addr} (NCCL ${view.ncclVersion ?? '?'}, ${view.format}${took}): ` +
      `${view.communicators.length} communicator${view.communicators.length === 1 ? '' : 's'}; ` +
      (view.findings.length === 0
        ? 'no rank missing, no INCOMPLETE, MISMATCH, ERROR or dead peer'
        : view.findings
            .map((f) => f.kind)
            .filter((k, i, a) => a.indexOf(k) === i)
            .join(', ')),
  ];
  for (const c of view.communicators) {
    const answered = c.ranksAnswered === null ? `${c.size} ranks` : `${c.ranksAnswered} of ${c.size} ranks answered`;
    const counts = Object.entries(c.counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    out.push(
      `#   comm ${c.hash}: ${answered}${c.status ? `, ${c.status}` : ''}` +
        (c.ranksAnswered === null
          ? ''
          : `; operation counts ${counts || 'all 0'}${c.mismatches.length ? ' where they agree' : ''}`),
    );
  }
  for (const f of view.findings) out.push(`#   ${f.kind}${f.comm ? ` (comm ${f.comm})` : ''}: ${f.text}`);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The client

/** NCCL_RAS_ADDR (host:port, as NCCL reads it), else localhost:28028. */
export function rasAddress(env: NodeJS.ProcessEnv): { host: string; port: number; text: string } {
  const text = env.NCCL_RAS_ADDR?.trim() || RAS_DEFAULT_ADDR;
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(text);
  return m ? { host: m[1] || 'localhost', port: Number(m[2]), text } : { host: text, port: 28028, text };
}

/** One exchange with a RAS server: handshake, JSON if it takes it (else text), VERBOSE STATUS, the whole reply. */
export function rasExchange(
  host: string,
  port: number,
  deadlineMs = RAS_DEADLINE_MS,
): Promise<{ format: 'json' | 'text'; reply: string }> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect({ host, port });
    const handshake = new BoundedLines(RAS_MAX_LINE_BYTES);
    const report: Buffer[] = [];
    let reportBytes = 0;
    let step = 0; // 0: protocol, 1: timeout, 2: format, 3: the report
    let format: 'json' | 'text' = 'json';
    let failed = false;
    const fail = (why: string): void => {
      failed = true;
      clearTimeout(timer);
      sock.destroy();
      reject(new Error(why));
    };
    const timer = setTimeout(
      () => fail(`no ${step === 3 ? 'complete report' : 'answer'} within ${deadlineMs / 1000} s`),
      deadlineMs,
    );
    const send = (line: string): void => {
      sock.write(`${line}\n`);
    };
    const keep = (bytes: Buffer): void => {
      if (failed) return;
      reportBytes += bytes.length;
      if (reportBytes > RAS_MAX_REPLY_BYTES) {
        fail(`a report over ${RAS_MAX_REPLY_BYTES / 2 ** 20} MiB: not read further`);
      } else report.push(bytes);
    };
    sock.on('connect', () => send('CLIENT PROTOCOL 2'));
    sock.on('error', (e: NodeJS.ErrnoException) => fail(e.code === 'ECONNREFUSED' ? 'connection refused' : e.message));
    sock.on('data', (chunk: Buffer) => {
      if (failed) return;
      if (step === 3) {
        keep(chunk);
        return;
      }
      const lines = handshake.push(chunk);
      if (lines === null) {
        fail(`a handshake line over ${RAS_MAX_LINE_BYTES} bytes`);
        return;
      }
      for (const [i, raw] of lines.entries()) {
        // The report began in this chunk: the lines after the handshake are its start.
        if (step === 3) {
          keep(Buffer.from(`${lines.slice(i).join('\n')}\n`));
          break;
        }
        const line = raw.replace(/\r$/, '');
        if (step === 0) {
          if (!/^SERVER PROTOCOL \d+$/.test(line)) return fail(`unexpected handshake answer '${line.slice(0, 80)}'`);
          send(`TIMEOUT ${RAS_COLLECTION_TIMEOUT_S}`);
        } else if (step === 1) {
          if (line !== 'OK') return fail(`TIMEOUT refused: '${line.slice(0, 80)}'`);
          send('SET FORMAT json');
        } else {
          if (line !== 'OK') format = 'text'; // before 2.28.7: "ERROR: Unknown command set format json"
          send('VERBOSE STATUS');
        }
        step++;
      }
      if (step === 3) keep(handshake.takeRest()); // the report is not read in lines: it is bounded as a whole
    });
    const closed = (): void => {
      // the server ends the report by closing (an orderly end, or a reset after it)
      clearTimeout(timer);
      if (failed) return;
      if (step < 3) reject(new Error('the server closed the connection during the handshake'));
      else resolve({ format, reply: Buffer.concat(report).toString('utf8') });
    };
    sock.on('end', closed);
    sock.on('close', closed);
  });
}

/** The NCCL version number (22809) from the library's version text ("NCCL 2.28.9+cuda13.0"), null if absent. */
export function ncclVersionCode(text: string): number | null {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? Number(m[1]) * 10000 + Number(m[2]) * 100 + Number(m[3]) : null;
}

/**
 * What NCCL's RAS says about the job now, as lines to print and a record for the report. Unavailable, in one
 * line, when RAS is off (NCCL_RAS_ENABLE=0), the loaded NCCL predates it, nothing listens or no answer comes.
 */
export async function askNcclRas(
  env: NodeJS.ProcessEnv,
  libraryVersion: string,
  deadlineMs = RAS_DEADLINE_MS,
): Promise<LibraryHangView> {
  const source = 'NCCL RAS';
  const addr = rasAddress(env);
  const unavailable = (reason: string): LibraryHangView => ({
    source,
    state: 'unavailable',
    reason,
    lines: [`# NCCL RAS: ${reason}`],
    view: null,
  });
  if (env.NCCL_RAS_ENABLE?.trim() === '0') return unavailable('off (NCCL_RAS_ENABLE=0): no view from NCCL itself');
  const code = ncclVersionCode(libraryVersion);
  if (code !== null && code < RAS_MIN_VERSION)
    return unavailable(`${libraryVersion} has none (RAS came with NCCL 2.24)`);
  let answer: { format: 'json' | 'text'; reply: string };
  try {
    answer = await rasExchange(addr.host, addr.port, deadlineMs);
  } catch (e) {
    return unavailable(
      `not reachable at ${addr.text}: ${(e as Error).message} (RAS off, NCCL older than 2.24, or ` +
        'NCCL_RAS_ADDR elsewhere)',
    );
  }
  let view: RasView;
  try {
    view = answer.format === 'json' ? parseRasJson(answer.reply) : parseRasText(answer.reply);
  } catch (e) {
    return unavailable(`unreadable answer from ${addr.text} (${(e as Error).message})`);
  }
  return { source, state: 'answered', reason: null, lines: describeRasView(view, addr.text), view };
}
