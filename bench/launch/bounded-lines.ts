// Newline-delimited messages from a socket anyone on the network may open (the torchrun-style rendezvous, the progress
// boards, the NCCL RAS client): a line longer than its bound ends the reading instead of growing a buffer for ever, so
// a peer that writes without a newline costs at most that bound.
import type { Socket } from 'node:net';

const NEWLINE = 0x0a;

/** Splits a byte stream into lines (without the newline) of at most `maxLineBytes` bytes each. */
export class BoundedLines {
  private parts: Buffer[] = [];
  private held = 0;
  private over = false;

  constructor(readonly maxLineBytes: number) {}

  /** The lines `chunk` completes, in order; null once a line has grown past the bound (no more lines come then). */
  push(chunk: Buffer): string[] | null {
    if (this.over) return null;
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      if (this.held + nl - start > this.maxLineBytes) return this.overflow();
      const tail = chunk.subarray(start, nl);
      const line = this.held === 0 ? tail : Buffer.concat([...this.parts, tail]);
      lines.push(line.toString('utf8'));
      this.parts = [];
      this.held = 0;
      start = nl + 1;
    }
    const rest = chunk.length - start;
    if (this.held + rest > this.maxLineBytes) return this.overflow();
    if (rest > 0) {
      this.parts.push(Buffer.from(chunk.subarray(start))); // a copy: the chunk's memory may be a larger pool slab
      this.held += rest;
    }
    return lines;
  }

  /** The bytes after the last complete line (handed over when a protocol leaves line mode), and the reader emptied. */
  takeRest(): Buffer {
    const rest = Buffer.concat(this.parts);
    this.parts = [];
    this.held = 0;
    return rest;
  }

  private overflow(): null {
    this.over = true;
    this.parts = [];
    this.held = 0;
    return null;
  }
}

/**
 * Calls `onLine` for each line `socket` sends (as long as it returns true: false stops the reading) and
 * `onOverflow` once, instead, when a line exceeds `maxLineBytes`; the socket is the caller's to close.
 */
export function readBoundedLines(
  socket: Socket,
  maxLineBytes: number,
  onLine: (line: string) => boolean,
  onOverflow: () => void,
): void {
  const reader = new BoundedLines(maxLineBytes);
  const onData = (chunk: Buffer | string): void => {
    const lines = reader.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    if (lines === null) {
      socket.off('data', onData);
      onOverflow();
      return;
    }
    for (const line of lines) {
      if (!onLine(line)) {
        socket.off('data', onData);
        return;
      }
    }
  };
  socket.on('data', onData);
}
