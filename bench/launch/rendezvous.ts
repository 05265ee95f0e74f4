// torchrun-style launch without MPI (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): a small TCP
// rendezvous where rank 0 serves an allgather of JSON payloads (the nccl driver's unique id, hosts, split colours).
// Rank 0 turns away, counts and survives whatever is not one of its job's ranks (docs/reliability.md).
import { lookup } from 'node:dns/promises';
import { createConnection, createServer, isIP, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ENV } from '../core/environment.js';
import { readBoundedLines } from './bounded-lines.js';
import { JOB_ID_SOURCES, sameToken, type JobToken } from './job-token.js';
import { allRanksHere } from './progress-board.js';

export interface TorchrunEnv {
  rank: number;
  worldSize: number;
  localRank: number | null; // LOCAL_RANK when given; else derived from host names
  masterAddr: string;
  masterPort: number;
}

export class RendezvousError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RendezvousError';
  }
}

const INT = /^\d+$/;

/**
 * The torchrun-style world this process belongs to, or null when the environment describes none (no
 * WORLD_SIZE, or WORLD_SIZE 1 without MASTER_ADDR). Inconsistent variables throw RendezvousError.
 */
export function torchrunEnv(env: NodeJS.ProcessEnv = process.env): TorchrunEnv | null {
  const size = env.WORLD_SIZE;
  if (size === undefined || size === '') return null;
  if (!INT.test(size) || Number(size) < 1)
    throw new RendezvousError(`WORLD_SIZE must be a positive integer, got '${size}'`);
  const worldSize = Number(size);
  if (worldSize === 1 && !env.MASTER_ADDR) return null;
  const missing = ['RANK', 'MASTER_ADDR', 'MASTER_PORT'].filter((v) => !env[v]);
  if (missing.length > 0) {
    throw new RendezvousError(
      `WORLD_SIZE=${worldSize} needs ${missing.join(', ')} too (torchrun-style launch: RANK, ` +
        'WORLD_SIZE, MASTER_ADDR, MASTER_PORT, optionally LOCAL_RANK)',
    );
  }
  if (!INT.test(env.RANK!) || Number(env.RANK) >= worldSize) {
    throw new RendezvousError(`RANK must be an integer in 0..${worldSize - 1}, got '${env.RANK}'`);
  }
  if (!INT.test(env.MASTER_PORT!) || Number(env.MASTER_PORT) < 1 || Number(env.MASTER_PORT) > 65535) {
    throw new RendezvousError(`MASTER_PORT must be a TCP port 1..65535, got '${env.MASTER_PORT}'`);
  }
  const lr = env.LOCAL_RANK;
  if (lr !== undefined && lr !== '' && !INT.test(lr))
    throw new RendezvousError(`LOCAL_RANK must be an integer, got '${lr}'`);
  return {
    rank: Number(env.RANK),
    worldSize,
    localRank: lr === undefined || lr === '' ? null : Number(lr),
    masterAddr: env.MASTER_ADDR!,
    masterPort: Number(env.MASTER_PORT),
  };
}

/** The longest hello line a rank sends (its payload included); a longer line is not a rank's. */
export const MAX_HELLO_BYTES = 16 * 1024;
/** A connection that has not sent its whole hello within this is turned away (a slow-loris peer holds no longer). */
export const HELLO_TIMEOUT_MS = 10_000;
/** Connections not yet identified by a hello, at most; more are turned away at once (memory: this × MAX_HELLO_BYTES).
 */
export const MAX_UNIDENTIFIED = 64;
/** Stray sources named in a message; more are counted together. */
const MAX_STRAY_SOURCES = 4;
/** Distinct reasons kept per source; more are counted as 'other'. */
const MAX_STRAY_REASONS = 8;

/** What a rank sends rank 0: its job's token (job-token.ts; '' without one), where the token came from, its place. */
interface Hello {
  token: string;
  tokenFrom: string;
  rank: number;
  worldSize: number;
  payload: string;
}
/** Rank 0's one answer line: every payload, or why this connection is turned away, or why the rendezvous failed. */
type Answer = { all: string[] } | { refused: string } | { failed: string };

/** What guards the rendezvous: the job's token (null: none, unauthenticated), where the launcher's variables are, and
 *  how long a connection may take to send its hello (HELLO_TIMEOUT_MS unless given). */
export interface RendezvousGuard {
  token: JobToken | null;
  env?: NodeJS.ProcessEnv;
  helloTimeoutMs?: number;
}

/** Where rank 0 listens: the addresses MASTER_ADDR names on this host, or every interface (hosts null) and why. */
export interface ListenPlan {
  hosts: string[] | null;
  note: string | null;
}

export interface RendezvousResult {
  /** Every rank's payload, in rank order. */
  all: string[];
  /** Rank 0: the connections turned away, in words (null: none, or not rank 0). */
  strays: string | null;
  /** Rank 0: where it listened (null elsewhere). */
  listen: ListenPlan | null;
}

/** Text a peer sent, safe to print in a one-line message: printable ASCII only, cut at `max` characters. */
function printable(text: string, max: number): string {
  const flat = text.replace(/\r$/, '').replace(/[^\x20-\x7e]/g, '?');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

const remoteOf = (socket: Socket): string => (socket.remoteAddress ?? 'an unknown address').replace(/^::ffff:/, '');

/** Connections rank 0 turned away, by remote address and reason, in bounded memory. */
export class StrayTally {
  count = 0;
  private readonly bySource = new Map<string, Map<string, number>>();
  private elsewhere = 0;

  add(from: string, reason: string): void {
    this.count++;
    let reasons = this.bySource.get(from);
    if (!reasons) {
      if (this.bySource.size >= MAX_STRAY_SOURCES) {
        this.elsewhere++;
        return;
      }
      reasons = new Map();
      this.bySource.set(from, reasons);
    }
    const key = reasons.has(reason) || reasons.size < MAX_STRAY_REASONS ? reason : 'other';
    reasons.set(key, (reasons.get(key) ?? 0) + 1);
  }

  /** "turned away 3 connections: 2 from 10.0.0.9 (…, …); 1 from …", or null when none came. */
  summary(): string | null {
    if (this.count === 0) return null;
    const parts = [...this.bySource.entries()].map(([from, reasons]) => {
      const n = [...reasons.values()].reduce((a, b) => a + b, 0);
      const why = [...reasons.entries()].map(([reason, k]) => (k > 1 ? `${k}× ${reason}` : reason));
      return `${n} from ${from} (${why.join('; ')})`;
    });
    if (this.elsewhere > 0) parts.push(`${this.elsewhere} from other addresses`);
    const connections = `${this.count} connection${this.count === 1 ? '' : 's'}`;
    return `turned away ${connections} that did not belong to this job: ${parts.join('; ')}`;
  }
}

const isLoopback = (address: string): boolean => /^127\./.test(address) || address === '::1';
const isLocalhostName = (name: string): boolean => /^(localhost|localhost\.localdomain|.*\.localhost)$/i.test(name);

function hostAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
}

/**
 * Where rank 0 listens: MASTER_ADDR itself when it is an address of this host (or a name whose every address is);
 * every interface when it is not (NAT, a container's published port, a service address), when it does not resolve
 * here, or when a name that is not localhost resolves to loopback only (a Debian-style /etc/hosts line) while ranks
 * run on other hosts, whose resolvers give another address.
 */
export async function rendezvousListenPlan(
  masterAddr: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ListenPlan> {
  const everywhere = (why: string): ListenPlan => ({ hosts: null, note: `listening on every interface: ${why}` });
  const local = hostAddresses();
  const addr = masterAddr.replace(/^\[(.*)\]$/, '$1');
  if (isIP(addr)) {
    return isLoopback(addr) || local.has(addr)
      ? { hosts: [addr], note: null }
      : everywhere(`MASTER_ADDR=${addr} is not an address of this host`);
  }
  let found: string[];
  try {
    found = [...new Set((await lookup(addr, { all: true })).map((a) => a.address))];
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    return everywhere(`MASTER_ADDR=${addr} does not resolve here (${why})`);
  }
  const foreign = found.filter((a) => !isLoopback(a) && !local.has(a));
  if (found.length === 0 || foreign.length > 0) {
    return everywhere(`MASTER_ADDR=${addr} resolves to ${found.join(', ') || 'nothing'}, not an address of this host`);
  }
  if (found.every(isLoopback) && !isLocalhostName(addr) && !allRanksHere(env)) {
    return everywhere(
      `MASTER_ADDR=${addr} resolves to loopback (${found.join(', ')}) here, which ranks on other hosts ` +
        'cannot reach',
    );
  }
  return { hosts: found, note: null };
}

/** One server per address (null: one on every interface); an address this host cannot bind (EADDRNOTAVAIL: no IPv6)
 *  is skipped while another one listens. Rejects with the first failure otherwise. */
async function listenAll(hosts: string[] | null, port: number, onConnection: (s: Socket) => void): Promise<Server[]> {
  const open = (host: string | undefined) =>
    new Promise<Server>((resolveServer, reject) => {
      const server = createServer(onConnection);
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolveServer(server);
      });
    });
  const results = await Promise.allSettled((hosts ?? [undefined]).map(open));
  const servers = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as NodeJS.ErrnoException] : []));
  const fatal =
    failures.find((e) => e.code !== 'EADDRNOTAVAIL' && e.code !== 'EAFNOSUPPORT') ??
    (servers.length === 0 ? failures[0] : undefined);
  if (fatal) {
    for (const s of servers) s.close();
    throw fatal;
  }
  return servers;
}

const hostPort = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

function serve(
  world: TorchrunEnv,
  payload: string,
  deadline: number,
  timeoutMs: number,
  guard: RendezvousGuard,
  plan: ListenPlan,
): Promise<RendezvousResult> {
  const { token } = guard;
  const helloTimeoutMs = guard.helloTimeoutMs ?? HELLO_TIMEOUT_MS;
  const where = plan.hosts
    ? plan.hosts.map((h) => hostPort(h, world.masterPort)).join(', ')
    : `port ${world.masterPort}`;
  const mine = token?.token ?? '';
  const mineFrom = token?.source ?? 'no job id';
  return new Promise((resolvePromise, reject) => {
    const payloads: (string | undefined)[] = new Array<string | undefined>(world.worldSize).fill(undefined);
    payloads[0] = payload;
    const joined = new Map<number, { socket: Socket; from: string }>();
    const unidentified = new Set<Socket>();
    const strays = new StrayTally();
    let servers: Server[] = [];
    let settled = false;

    /** Ends the rendezvous: nothing listens any more, strays are dropped, every joined rank gets `answer`. */
    const finish = (answer: Answer, then: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const s of servers) s.close();
      for (const s of unidentified) s.destroy();
      unidentified.clear();
      const line = `${JSON.stringify(answer)}\n`;
      let open = joined.size;
      if (open === 0) {
        then();
        return;
      }
      const guard = setTimeout(() => {
        for (const { socket } of joined.values()) socket.destroy();
      }, 2000);
      for (const { socket } of joined.values()) {
        let counted = false;
        const one = (): void => {
          if (counted) return;
          counted = true;
          if (--open === 0) {
            clearTimeout(guard);
            then();
          }
        };
        socket.once('close', one);
        socket.end(line, one);
      }
    };
    const fail = (message: string): void => {
      const err = new RendezvousError(`rendezvous: ${message}`);
      finish({ failed: message }, () => reject(err));
    };

    const timer = setTimeout(
      () => {
        const missing = payloads.map((p, r) => (p === undefined ? r : -1)).filter((r) => r >= 0);
        const turned = strays.summary();
        fail(
          `rank 0 (${where}) waited ${timeoutMs / 1000}s for rank(s) ${missing.join(',')} of ${world.worldSize}` +
            (turned ? `; ${turned}` : '; no other connection came'),
        );
      },
      Math.max(0, deadline - Date.now()),
    );

    /** Counts a connection that is not one of this job's ranks and closes it (after one answer line, when given). */
    const turnAway = (socket: Socket, from: string, reason: string, answer?: string): void => {
      if (!unidentified.delete(socket)) return;
      strays.add(from, reason);
      if (answer === undefined) {
        socket.destroy();
        return;
      }
      socket.setTimeout(1000, () => socket.destroy());
      socket.end(`${JSON.stringify({ refused: answer } satisfies Answer)}\n`);
    };

    const onHello = (socket: Socket, from: string, line: string): void => {
      let hello: Hello;
      try {
        hello = JSON.parse(line) as Hello;
        const valid =
          typeof hello === 'object' &&
          hello !== null &&
          typeof hello.token === 'string' &&
          typeof hello.tokenFrom === 'string' &&
          Number.isInteger(hello.rank) &&
          Number.isInteger(hello.worldSize) &&
          typeof hello.payload === 'string';
        if (!valid) throw new Error('not a hello');
      } catch {
        turnAway(socket, from, `not a rendezvous hello: '${printable(line, 24)}'`);
        return;
      }
      const theirFrom = printable(hello.tokenFrom || 'no job id', 40);
      if (!sameToken(hello.token, mine)) {
        turnAway(
          socket,
          from,
          `another job (token from ${theirFrom})`,
          `its job token (from ${theirFrom}) is not this job's (from ${mineFrom}): another job's rendezvous on ` +
            'this port?',
        );
      } else if (hello.worldSize !== world.worldSize) {
        turnAway(
          socket,
          from,
          `WORLD_SIZE=${hello.worldSize}`,
          `rank 0 has WORLD_SIZE=${world.worldSize}, this rank ${hello.worldSize}`,
        );
      } else if (hello.rank < 1 || hello.rank >= world.worldSize) {
        turnAway(
          socket,
          from,
          `rank ${hello.rank}`,
          `rank ${hello.rank} is not one rank 0 waits for (1..${world.worldSize - 1})`,
        );
      } else if (joined.has(hello.rank)) {
        turnAway(
          socket,
          from,
          `rank ${hello.rank} again`,
          `rank ${hello.rank} has already joined from ${joined.get(hello.rank)!.from}`,
        );
      } else {
        unidentified.delete(socket);
        const rank = hello.rank;
        joined.set(rank, { socket, from });
        payloads[rank] = hello.payload;
        // A rank whose connection ends before the answer may come back (a restarted worker): its place is free again.
        socket.once('close', () => {
          if (settled || joined.get(rank)?.socket !== socket) return;
          joined.delete(rank);
          payloads[rank] = undefined;
        });
        if (payloads.every((p) => p !== undefined)) {
          const all = payloads as string[];
          finish({ all }, () => resolvePromise({ all, strays: strays.summary(), listen: plan }));
        }
      }
    };

    const onConnection = (socket: Socket): void => {
      const from = remoteOf(socket);
      socket.on('error', () => {
        /* counted when it closes */
      });
      if (settled) {
        socket.destroy();
        return;
      }
      if (unidentified.size >= MAX_UNIDENTIFIED) {
        strays.add(from, `over ${MAX_UNIDENTIFIED} connections at once without a hello`);
        socket.destroy();
        return;
      }
      unidentified.add(socket);
      const helloTimer = setTimeout(
        () => turnAway(socket, from, `no whole hello within ${helloTimeoutMs / 1000} s`),
        helloTimeoutMs,
      );
      socket.once('close', () => {
        clearTimeout(helloTimer);
        if (!settled) turnAway(socket, from, 'closed without a hello');
      });
      readBoundedLines(
        socket,
        MAX_HELLO_BYTES,
        (line) => {
          clearTimeout(helloTimer);
          onHello(socket, from, line);
          return false;
        },
        () => {
          clearTimeout(helloTimer);
          turnAway(socket, from, `a line over ${MAX_HELLO_BYTES} bytes`);
        },
      );
    };

    listenAll(plan.hosts, world.masterPort, onConnection).then(
      (s) => {
        servers = s;
        if (settled) for (const x of s) x.close();
      },
      (e: NodeJS.ErrnoException) => {
        fail(
          `rank 0 cannot listen on ${where}: ${e.code ?? e.message}` +
            (e.code === 'EADDRINUSE' ? " (another job's rendezvous, or another program, holds MASTER_PORT)" : ''),
        );
      },
    );
  });
}

function join(world: TorchrunEnv, hello: string, deadline: number, timeoutMs: number): Promise<RendezvousResult> {
  const where = hostPort(world.masterAddr, world.masterPort);
  // Rank 0's answer holds every rank's payload, each at most a hello long.
  const answerLimit = world.worldSize * MAX_HELLO_BYTES + 1024;
  return new Promise((resolvePromise, reject) => {
    let settled = false;
    let closedUnanswered = 0;
    let lastError = '';
    const settle = (err: Error | null, value?: RendezvousResult) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolvePromise(value!);
    };
    const onAnswer = (line: string): void => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        answer = {} as Answer;
      }
      if (typeof answer !== 'object' || answer === null) answer = {} as Answer; // `null`, a number: not an answer
      if (
        'all' in answer &&
        Array.isArray(answer.all) &&
        answer.all.length === world.worldSize &&
        answer.all.every((p) => typeof p === 'string')
      ) {
        settle(null, { all: answer.all, strays: null, listen: null });
      } else if ('refused' in answer && typeof answer.refused === 'string') {
        settle(
          new RendezvousError(
            `rendezvous: rank 0 at ${where} turned rank ${world.rank} away: ` + printable(answer.refused, 300),
          ),
        );
      } else if ('failed' in answer && typeof answer.failed === 'string') {
        settle(new RendezvousError(`rendezvous: rank 0 at ${where} gave up: ${printable(answer.failed, 600)}`));
      } else {
        settle(
          new RendezvousError(
            `rendezvous: malformed answer from ${where} ('${printable(line, 40)}'): is ` +
              "MASTER_PORT another program's?",
          ),
        );
      }
    };
    const attempt = () => {
      if (settled) return;
      const socket = createConnection({ host: world.masterAddr, port: world.masterPort });
      let connected = false;
      socket.on('connect', () => {
        connected = true;
        socket.write(hello);
      });
      readBoundedLines(
        socket,
        answerLimit,
        (line) => {
          onAnswer(line);
          socket.destroy();
          return false;
        },
        () => {
          socket.destroy();
          settle(
            new RendezvousError(
              `rendezvous: ${where} answered with a line over ${answerLimit} bytes: is ` +
                "MASTER_PORT another program's?",
            ),
          );
        },
      );
      socket.on('error', (e: NodeJS.ErrnoException) => {
        lastError = e.code ?? e.message;
      });
      socket.on('close', () => {
        if (settled) return;
        if (connected) closedUnanswered++;
        // Rank 0 may not listen yet, or had too many connections at once: try again until the deadline.
        if (Date.now() + 100 < deadline) {
          setTimeout(attempt, 100);
          return;
        }
        settle(
          new RendezvousError(
            closedUnanswered > 0
              ? `rendezvous: no answer from rank 0 at ${where} within ${timeoutMs / 1000}s (${closedUnanswered} ` +
                  "connection(s) closed without one: is MASTER_PORT another program's?)"
              : `rendezvous: rank ${world.rank} could not reach rank 0 at ${where} within ${timeoutMs / 1000}s ` +
                  `(${lastError || 'no answer'})`,
          ),
        );
      });
      socket.setTimeout(Math.max(1, deadline - Date.now()), () => {
        socket.destroy();
        settle(new RendezvousError(`rendezvous: no answer from rank 0 at ${where} within ${timeoutMs / 1000}s`));
      });
    };
    attempt();
  });
}

/**
 * Allgather of one string per rank through rank 0 (MASTER_ADDR:MASTER_PORT). Resolves, on every rank, to all
 * payloads in rank order. Rank 0 turns away and counts every connection that is not one of this job's ranks (not a
 * hello, a line over MAX_HELLO_BYTES, no hello within HELLO_TIMEOUT_MS, another job's token, another WORLD_SIZE, a rank
 * that does not exist or has joined already): none of them ends the rendezvous. It ends when every rank has joined,
 * or rejects with RendezvousError when `timeoutMs` passes (naming the missing ranks and the strays) or a port cannot
 * be used; a rank that rank 0 turns away rejects at once, saying why.
 */
export async function rendezvous(
  world: TorchrunEnv,
  payload: string,
  timeoutMs: number,
  guard: RendezvousGuard,
): Promise<RendezvousResult> {
  const deadline = Date.now() + timeoutMs;
  if (world.worldSize === 1) return { all: [payload], strays: null, listen: null };
  const hello = `${JSON.stringify({
    token: guard.token?.token ?? '',
    tokenFrom: guard.token?.source ?? '',
    rank: world.rank,
    worldSize: world.worldSize,
    payload,
  } satisfies Hello)}\n`;
  if (Buffer.byteLength(hello) > MAX_HELLO_BYTES) {
    throw new RendezvousError(
      `rendezvous: rank ${world.rank}'s hello is ${Buffer.byteLength(hello)} bytes, over the ` +
        `${MAX_HELLO_BYTES} rank 0 takes`,
    );
  }
  if (world.rank !== 0) return join(world, hello, deadline, timeoutMs);
  const plan = await rendezvousListenPlan(world.masterAddr, guard.env ?? process.env);
  return serve(world, payload, deadline, timeoutMs, guard, plan);
}

/** The preamble's lines about the rendezvous: unauthenticated (no job id), where rank 0 listened, whom it turned away;
 *  none for a world of one (no rendezvous on the network). */
export function rendezvousNotes(world: TorchrunEnv, result: RendezvousResult, token: JobToken | null): string[] {
  const out: string[] = [];
  if (world.worldSize === 1) return out;
  if (token === null) {
    out.push(
      `# Warning: the torchrun-style rendezvous is unauthenticated: none of ${JOB_ID_SOURCES} names this job, ` +
        "so a process that reaches MASTER_ADDR:MASTER_PORT with the same WORLD_SIZE could take a rank's place; set " +
        `${ENV.JOB_TOKEN} to one value on every rank (docs/reliability.md)`,
    );
  }
  if (result.listen?.note) out.push(`# Rendezvous: ${result.listen.note}`);
  if (result.strays) out.push(`# Rendezvous: ${result.strays}`);
  return out;
}

/** Local rank of each rank from their host names (ranks on one host numbered in rank order). */
export function localRanksByHost(hosts: string[]): { localRank: number[]; localSize: number[] } {
  const seen = new Map<string, number>();
  const counts = new Map<string, number>();
  for (const h of hosts) counts.set(h, (counts.get(h) ?? 0) + 1);
  const localRank = hosts.map((h) => {
    const n = seen.get(h) ?? 0;
    seen.set(h, n + 1);
    return n;
  });
  return { localRank, localSize: hosts.map((h) => counts.get(h)!) };
}
