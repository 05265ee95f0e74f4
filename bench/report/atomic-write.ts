// Atomic file replacement for the exporters (docs/architecture.md, "report/"): write a temporary file beside the target,
// then rename it over the target, so a reader, a crash or Ctrl-C only ever sees a complete document
// (the old one or the new one). rename(2) is atomic within one file system; hence the same directory.
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

let counter = 0;

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** writeFileAtomic()'s temporary names for `path`: `.NAME.PID.N.tmp` beside it (PID captured). */
const tempPattern = (path: string): RegExp => new RegExp(`^\\.${escapeRe(basename(path))}\\.(\\d+)\\.\\d+\\.tmp$`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temporary files of `path` left by writers that no longer exist (a rank killed with SIGKILL between
 * writing and renaming: nothing in that process can clean up, so its launcher does, after the job). Returns what it
 * removed. A live writer's file is left alone.
 */
export function removeOrphanedTemps(path: string): string[] {
  const re = tempPattern(path);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = re.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    try {
      unlinkSync(join(dirname(path), name));
      removed.push(name);
    } catch {
      /* gone meanwhile */
    }
  }
  return removed;
}

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
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
}
