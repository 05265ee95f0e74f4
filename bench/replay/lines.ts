// Streaming input for the replay readers: a file's lines (or raw chunks) one at a time through node's readline,
// gunzipped on the way when the name ends in .gz, so that a large log is never held as one string.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';

/** The file's bytes as a stream (decompressed when it ends in .gz). */
export function openInput(path: string): Readable {
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  return path.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
}

/** Every line of the file with its 1-based number, in order. */
export async function* fileLines(path: string): AsyncGenerator<{ line: string; lineNo: number }> {
  const rl = createInterface({ input: openInput(path), crlfDelay: Infinity });
  let lineNo = 0;
  for await (const line of rl) yield { line, lineNo: ++lineNo };
}

/** The first `bytes` bytes of the file (decompressed), to tell its format. */
export async function fileHead(path: string, bytes = 4096): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  const input = openInput(path);
  try {
    for await (const chunk of input) {
      parts.push(chunk as Buffer);
      got += (chunk as Buffer).length;
      if (got >= bytes) break;
    }
  } finally {
    input.destroy();
  }
  return Buffer.concat(parts).subarray(0, bytes);
}
