// A finished run's failing verdict (#wrong > 0, --warn-busbw, NCCL_TESTS_MIN_BW: exit 7) is not a crash. Under the --np
// launcher a rank that ends its run with a verdict writes it to the launcher's folder and exits 0, so mpirun sees a
// job that ended normally (no abort banner, no "incomplete") and the launcher exits with the verdict's code.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV } from '../core/environment.js';

/** The folder the --np launcher gives its ranks for their verdicts (internal: set by the launcher only). */
export const VERDICT_DIR_ENV = ENV.VERDICT_DIR;

/** The exit code of a rank whose run finished with `code`: 0 when the launcher takes the verdict instead (it was
 *  written to its folder), else `code` (a plain run, or a launcher of the user's own: mpirun, srun). */
export function relayVerdict(code: number, env: NodeJS.ProcessEnv = process.env): number {
  const dir = env[VERDICT_DIR_ENV];
  if (code === 0 || !dir) return code;
  try {
    writeFileSync(join(dir, `${process.pid}`), String(code));
    return 0;
  } catch {
    return code; // the folder is not shared with this rank (another host): the exit code says it, as before
  }
}

/** The launcher's side: a folder for the ranks' verdicts, and the verdict they left (the highest code, or 0). */
export function verdictFolder(): { dir: string; verdict: () => number; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'collbench-verdict-'));
  return {
    dir,
    verdict: () => Math.max(0, ...readdirSync(dir).map((f) => Number(readFileSync(join(dir, f), 'utf8')) || 0)),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
