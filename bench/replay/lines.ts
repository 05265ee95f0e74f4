// Streaming input for the replay readers: a file's lines a chunk (1 MiB) at a time, or its raw chunks, gunzipped on the
// way when the name ends in .gz, so that a large log is never held as one string. (node:readline's one await per line
// read 23 MB per CPU second here; batches of a chunk's lines are several times that: scripts/bench-replay-read.ts.)
import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';

/** The file's bytes as a stream (decompressed when it ends in .gz). */
export function openInput(path: string, chunkBytes = 1 << 20): Readable {
  const raw = createReadStream(path, { highWaterMark: chunkBytes });
  return path.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
}

/** The file's lines in batches (one per chunk read), each with the 1-based number of its first line. */
export async function* fileLines(path: string): AsyncGenerator<{ lines: string[]; firstLineNo: number }> {
  const decoder = new StringDecoder('utf8');
  let rest = '',
    lineNo = 1;
  for await (const chunk of openInput(path)) {
    const text = rest + decoder.write(chunk as Buffer);
    const lines = text.split('\n');
    rest = lines.pop()!;
    yield { lines, firstLineNo: lineNo };
    lineNo += lines.length;
  }
  rest += decoder.end();
  if (rest) yield { lines: [rest], firstLineNo: lineNo };
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
