// Atomic file replacement for the exporters (docs/architecture.md, "report/"): write a temporary file beside the target,
// then rename it over the target, so a reader, a crash or Ctrl-C only ever sees a complete document
// (the old one or the new one). rename(2) is atomic within one file system; hence the same directory.
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

let counter = 0;

/** Replaces `path` with `data` atomically. The data is flushed (fsync) before the rename unless `durable` is false
 *  (a document rewritten again soon, e.g. after every row of a run: a reader, a crash or Ctrl-C still sees a complete
 *  one; only a power loss may leave the previous version). */
export function writeFileAtomic(path: string, data: string, durable = true): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${counter++}.tmp`);
  const fd = openSync(tmp, 'w', 0o644);
  try {
    const buf = Buffer.from(data, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    if (durable) fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
}
