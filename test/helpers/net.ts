// TCP helpers for tests that start their own rendezvous, store or daemon on this host: a free port (the kernel picks
// it), whether anything listens on a port, and a stray connection that is none of the job's ranks.
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Whether a socket of this network namespace listens on TCP `port` (read from /proc/net/tcp{,6}: nothing connects). */
export function listening(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return ['/proc/net/tcp', '/proc/net/tcp6'].some((file) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return false;
    }
    // sl local_address rem_address st …: st 0A is LISTEN
    return text
      .split('\n')
      .slice(1)
      .some((l) => {
        const f = l.trim().split(/\s+/);
        return f[1]?.endsWith(hex) && f[3] === '0A';
      });
  });
}

/** Whether a TCP connection to host:port is refused (nothing listens there). */
export function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.on('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/** A connection that is none of the job's ranks: `act` writes to it once connected; resolves to what came back and
 *  how the connection ended (closed, or the error: EPIPE, ECONNRESET when the other side stopped reading). */
export function stray(host: string, port: number, act: (s: Socket) => void): Promise<{ answer: string; how: string }> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let answer = '';
    let how = 'closed';
    s.on('connect', () => act(s));
    s.on('data', (d: Buffer) => {
      answer += d.toString('utf8');
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      how = e.code ?? e.message;
    });
    s.on('close', () => resolve({ answer, how }));
  });
}

/** Writes `mib` MiB without a newline, as fast as the other side takes it (a peer that never ends its line). */
export function floodWithoutNewline(s: Socket, mib: number): void {
  const block = Buffer.alloc(2 ** 20, 'a');
  const more = (left: number): void => {
    while (left > 0) {
      left--;
      if (!s.write(block)) {
        s.once('drain', () => more(left));
        return;
      }
    }
  };
  more(mib);
}
