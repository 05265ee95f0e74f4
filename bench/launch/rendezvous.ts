// torchrun-style launch without MPI: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, and a small
// TCP rendezvous where rank 0 serves and every rank sends one payload and receives all of them (an
// allgather of JSON strings). The NCCL driver uses it once, for the unique id, host names and split
// colours; after that the NCCL communicator itself carries barriers and result reductions.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

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
  if (!INT.test(size) || Number(size) < 1) throw new RendezvousError(`WORLD_SIZE must be a positive integer, got '${size}'`);
  const worldSize = Number(size);
  if (worldSize === 1 && !env.MASTER_ADDR) return null;
  const missing = ['RANK', 'MASTER_ADDR', 'MASTER_PORT'].filter((v) => !env[v]);
  if (missing.length > 0) {
    throw new RendezvousError(`WORLD_SIZE=${worldSize} needs ${missing.join(', ')} too (torchrun-style launch: RANK, ` +
      'WORLD_SIZE, MASTER_ADDR, MASTER_PORT, optionally LOCAL_RANK)');
  }
  if (!INT.test(env.RANK!) || Number(env.RANK) >= worldSize) {
    throw new RendezvousError(`RANK must be an integer in 0..${worldSize - 1}, got '${env.RANK}'`);
  }
  if (!INT.test(env.MASTER_PORT!) || Number(env.MASTER_PORT) < 1 || Number(env.MASTER_PORT) > 65535) {
    throw new RendezvousError(`MASTER_PORT must be a TCP port 1..65535, got '${env.MASTER_PORT}'`);
  }
  const lr = env.LOCAL_RANK;
  if (lr !== undefined && lr !== '' && !INT.test(lr)) throw new RendezvousError(`LOCAL_RANK must be an integer, got '${lr}'`);
  return {
    rank: Number(env.RANK), worldSize, localRank: lr === undefined || lr === '' ? null : Number(lr),
    masterAddr: env.MASTER_ADDR!, masterPort: Number(env.MASTER_PORT),
  };
}

interface Hello { rank: number; worldSize: number; payload: string }

/** Reads newline-delimited JSON messages from a socket. */
function lines(socket: Socket, onLine: (line: string) => void): void {
  let buf = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  });
}

function serve(world: TorchrunEnv, payload: string, deadline: number, timeoutMs: number): Promise<string[]> {
  return new Promise((resolvePromise, reject) => {
    const payloads: (string | undefined)[] = new Array<string | undefined>(world.worldSize).fill(undefined);
    payloads[0] = payload;
    const peers: Socket[] = [];
    let server: Server | null = null;
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        for (const p of peers) p.destroy();
        server?.close();
        reject(err);
        return;
      }
      const all = payloads as string[];
      const reply = JSON.stringify(all) + '\n';
      let open = peers.length;
      const done = () => { if (--open <= 0) { server?.close(); resolvePromise(all); } };
      if (open === 0) { server?.close(); resolvePromise(all); return; }
      for (const p of peers) p.end(reply, done);
    };
    const timer = setTimeout(() => {
      const missing = payloads.map((p, r) => (p === undefined ? r : -1)).filter((r) => r >= 0);
      finish(new RendezvousError(`rendezvous: rank 0 (port ${world.masterPort}) waited ${timeoutMs / 1000}s for ` +
        `rank(s) ${missing.join(',')} of ${world.worldSize}`));
    }, Math.max(0, deadline - Date.now()));
    server = createServer((socket) => {
      peers.push(socket);
      socket.on('error', () => { /* a peer that goes away is reported by the timeout */ });
      lines(socket, (line) => {
        let hello: Hello;
        try { hello = JSON.parse(line) as Hello; } catch { finish(new RendezvousError('rendezvous: malformed message from a peer')); return; }
        if (hello.worldSize !== world.worldSize) {
          finish(new RendezvousError(`rendezvous: rank ${hello.rank} says WORLD_SIZE=${hello.worldSize}, rank 0 has ${world.worldSize}`));
          return;
        }
        if (!Number.isInteger(hello.rank) || hello.rank < 1 || hello.rank >= world.worldSize || payloads[hello.rank] !== undefined) {
          finish(new RendezvousError(`rendezvous: rank ${hello.rank} joined twice or does not exist in a world of ${world.worldSize}`));
          return;
        }
        payloads[hello.rank] = hello.payload;
        if (payloads.every((p) => p !== undefined)) finish(null);
      });
    });
    server.on('error', (e: NodeJS.ErrnoException) =>
      finish(new RendezvousError(`rendezvous: rank 0 cannot listen on port ${world.masterPort}: ${e.code ?? e.message}`)));
    server.listen(world.masterPort);
  });
}

function join(world: TorchrunEnv, payload: string, deadline: number, timeoutMs: number): Promise<string[]> {
  return new Promise((resolvePromise, reject) => {
    const where = `${world.masterAddr}:${world.masterPort}`;
    let settled = false;
    const settle = (err: Error | null, value?: string[]) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolvePromise(value!);
    };
    const attempt = () => {
      const socket = createConnection({ host: world.masterAddr, port: world.masterPort });
      let connected = false;
      socket.on('connect', () => {
        connected = true;
        socket.write(JSON.stringify({ rank: world.rank, worldSize: world.worldSize, payload } satisfies Hello) + '\n');
      });
      lines(socket, (line) => {
        try {
          settle(null, JSON.parse(line) as string[]);
        } catch {
          settle(new RendezvousError('rendezvous: malformed answer from rank 0'));
        }
        socket.destroy();
      });
      socket.on('error', (e: NodeJS.ErrnoException) => {
        socket.destroy();
        if (connected) return; // reported by 'close'
        // Rank 0 may not listen yet: retry until the deadline.
        if (Date.now() + 100 < deadline) {
          setTimeout(attempt, 100);
          return;
        }
        settle(new RendezvousError(`rendezvous: rank ${world.rank} could not reach rank 0 at ${where} within ` +
          `${timeoutMs / 1000}s (${e.code ?? e.message})`));
      });
      socket.on('close', () => {
        // Connected, then closed without an answer: rank 0 gave up (timeout or a bad peer).
        if (connected) settle(new RendezvousError(`rendezvous: rank 0 at ${where} closed the connection without an answer`));
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
 * Allgather of one string per rank through rank 0 (MASTER_ADDR:MASTER_PORT). Resolves, on every rank,
 * to all payloads in rank order; rejects with RendezvousError when a rank does not arrive within
 * `timeoutMs`, a port cannot be used, or the ranks disagree on WORLD_SIZE.
 */
export function rendezvous(world: TorchrunEnv, payload: string, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  if (world.worldSize === 1) return Promise.resolve([payload]);
  return world.rank === 0 ? serve(world, payload, deadline, timeoutMs) : join(world, payload, deadline, timeoutMs);
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
