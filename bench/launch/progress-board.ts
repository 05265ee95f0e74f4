// Where every rank is, asked outside the collective library: when a wait expires (-T or the default watchdog), the
// library is stuck by definition, so each rank also runs a small TCP "board" on its JS thread (free while the native
// loop runs on a worker thread) that answers one question — which wait is this rank in, and at which iteration. The
// rank whose limit expires asks every other rank (short timeouts, in parallel) and can then say who did not arrive:
// a rank that does not answer is stopped or hung outside collbench, one that refuses the connection is gone, one
// that answers from an earlier wait is behind. Requests carry a per-job token, so a stray connection learns nothing.
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Answer, Position } from './not-arrived.js';
import { ENV } from '../core/environment.js';
import { readBoundedLines } from './bounded-lines.js';
import { sameToken } from './job-token.js';

/** One rank's board address: IPv4 as an unsigned 32-bit number, and the port. */
export interface BoardAddress {
  ipv4: number;
  port: number;
}

/** What every rank learns of every other at start-up: its board and its host name. */
export interface BoardEntry extends BoardAddress {
  host: string;
}

/** Host names travel as numbers (6 bytes per double, exact below 2^53), cut at this many bytes. */
const HOST_BYTES = 60;
/** Doubles per rank in the start-up exchange: IPv4, port, then the host name. */
export const ENTRY_DOUBLES = 2 + HOST_BYTES / 6;

/**
 * This rank's slot of the start-up exchange: `nranks` × ENTRY_DOUBLES numbers, zero except its own slot, so that an
 * allreduce sum gives every rank every entry (the libraries' only exchange that reaches every rank).
 */
export function encodeEntry(rank: number, nranks: number, entry: BoardEntry): number[] {
  const out = new Array<number>(nranks * ENTRY_DOUBLES).fill(0);
  const base = rank * ENTRY_DOUBLES;
  out[base] = entry.ipv4;
  out[base + 1] = entry.port;
  const bytes = Buffer.alloc(HOST_BYTES);
  Buffer.from(entry.host, 'utf8').copy(bytes, 0, 0, HOST_BYTES);
  for (let k = 0; k < HOST_BYTES / 6; k++) out[base + 2 + k] = bytes.readUIntBE(k * 6, 6);
  return out;
}

export function decodeEntries(summed: readonly number[]): BoardEntry[] {
  const entries: BoardEntry[] = [];
  for (let base = 0; base + ENTRY_DOUBLES <= summed.length; base += ENTRY_DOUBLES) {
    const bytes = Buffer.alloc(HOST_BYTES);
    for (let k = 0; k < HOST_BYTES / 6; k++) bytes.writeUIntBE(summed[base + 2 + k]!, k * 6, 6);
    const end = bytes.indexOf(0);
    entries.push({
      ipv4: summed[base]!,
      port: summed[base + 1]!,
      host: bytes.subarray(0, end < 0 ? HOST_BYTES : end).toString('utf8'),
    });
  }
  return entries;
}

/** A request (the token) and an answer (one position) are short: a longer line is not a rank's. */
const MAX_REQUEST = 256;
const MAX_ANSWER = 4096;

/** True when the launcher says every rank of the job runs on this host (Open MPI, torchrun-style, Slurm variables). */
export function allRanksHere(env: NodeJS.ProcessEnv): boolean {
  const pairs: [string | undefined, string | undefined][] = [
    [env.OMPI_COMM_WORLD_LOCAL_SIZE, env.OMPI_COMM_WORLD_SIZE],
    [env.LOCAL_WORLD_SIZE, env.WORLD_SIZE],
    [env.SLURM_STEP_NUM_NODES === '1' ? env.SLURM_STEP_NUM_TASKS : undefined, env.SLURM_STEP_NUM_TASKS],
  ];
  return pairs.some(([local, world]) => local !== undefined && local !== '' && local === world);
}

/**
 * The address a board listens on: COLLBENCH_BOARD_ADDR; else loopback when every rank is on this host (nothing off the
 * host needs to reach it); else the first non-internal IPv4 address; else loopback.
 */
export function boardBindAddress(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env[ENV.BOARD_ADDR]?.trim();
  if (chosen) return chosen;
  if (allRanksHere(env)) return '127.0.0.1';
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export function ipv4ToNumber(address: string): number {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return 0;
  return ((parts[0]! * 256 + parts[1]!) * 256 + parts[2]!) * 256 + parts[3]!;
}

export function numberToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

export class ProgressBoard {
  private server: Server | null = null;
  private at = 'start-up';
  private loopIters: number | null = null;

  constructor(
    private readonly rank: number,
    private readonly host: string,
    private token: string,
    private readonly iteration: () => number,
  ) {}

  /** The job's token, once the start-up exchange has made it (requests before then are refused). */
  setToken(token: string): void {
    this.token = token;
  }

  /** Listens on `address` (an ephemeral port); resolves to the address peers reach it at. */
  async listen(address: string): Promise<BoardAddress> {
    const server = createServer((socket) => this.answer(socket));
    server.unref(); // never keeps the process alive
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: address, port: 0 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    return { ipv4: ipv4ToNumber(address), port: (server.address() as AddressInfo).port };
  }

  /** The wait this rank is in now (set by the watchdog before each wait); `loopIters`: a native loop of that many
   *  iterations, whose current one the answer gives (null: another wait). */
  enter(at: string, loopIters: number | null): void {
    this.at = at;
    this.loopIters = loopIters;
  }

  position(): Position {
    const p: Position = { rank: this.rank, host: this.host, at: this.at, iteration: null };
    if (this.loopIters !== null) {
      p.iteration = this.iteration();
      p.iterations = this.loopIters;
    }
    return p;
  }

  close(): void {
    this.server?.close();
    this.server = null;
  }

  private answer(socket: Socket): void {
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    readBoundedLines(
      socket,
      MAX_REQUEST,
      (request) => {
        if (this.token === '' || !sameToken(request, this.token)) socket.destroy();
        else socket.end(`${JSON.stringify(this.position())}\n`);
        return false;
      },
      () => socket.destroy(),
    );
  }
}

/** Asks one peer's board where it is, within `timeoutMs`. */
export function ask(rank: number, addr: BoardAddress, token: string, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Answer): void => {
      if (!settled) {
        settled = true;
        socket.destroy();
        resolve(a);
      }
    };
    const socket = new Socket();
    socket.setTimeout(timeoutMs, () => done({ rank, state: 'silent' }));
    socket.on('error', (e: NodeJS.ErrnoException) =>
      done(e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' ? { rank, state: 'gone' } : { rank, state: 'silent' }),
    );
    readBoundedLines(
      socket,
      MAX_ANSWER,
      (reply) => {
        try {
          const p = JSON.parse(reply) as Position;
          const valid = typeof p.at === 'string' && (p.iteration === null || Number.isFinite(p.iteration));
          done(valid ? { rank, state: 'answered', position: p } : { rank, state: 'silent' });
        } catch {
          done({ rank, state: 'silent' });
        }
        return false;
      },
      () => done({ rank, state: 'silent' }),
    );
    socket.on('end', () => done({ rank, state: 'silent' })); // closed without a whole answer
    socket.connect({ host: numberToIpv4(addr.ipv4), port: addr.port }, () => socket.write(`${token}\n`));
  });
}

/** Every other rank's answer, asked in parallel. */
export function survey(
  peers: readonly BoardAddress[],
  self: number,
  token: string,
  timeoutMs: number,
): Promise<Answer[]> {
  return Promise.all(
    peers
      .map((addr, rank) => (rank === self ? null : ask(rank, addr, token, timeoutMs)))
      .filter((p): p is Promise<Answer> => p !== null),
  );
}
