// Test helpers: run the built binaries (bin/<program>, as users do) and read the nccl-tests table
// they print. Shared by test/cli/*.test.ts.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { splitTableRow } from '../../bench/report/reporters/nccl-table.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const binDir = join(repoRoot, 'bin');

export interface CliResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export function runProgram(
  program: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): CliResult {
  const path = join(binDir, program);
  if (!existsSync(path)) throw new Error(`${path} missing: run make build first`);
  const r = spawnSync(path, args, {
    encoding: 'utf8',
    env: { ...process.env, ...opts.env },
    timeout: opts.timeoutMs ?? 120_000,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** mpirun as root on this 2-core machine: --allow-run-as-root and --oversubscribe. */
export function mpirunArgs(np: number): string[] {
  const a = ['-np', String(np), '--oversubscribe', '--mca', 'pml', 'ob1'];
  if (process.getuid?.() === 0) a.unshift('--allow-run-as-root');
  return a;
}

export function runMpirun(
  np: number,
  program: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; mpirunExtra?: string[]; timeoutMs?: number } = {},
): CliResult {
  const r = spawnSync('mpirun', [...mpirunArgs(np), ...(opts.mpirunExtra ?? []), join(binDir, program), ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...opts.env },
    timeout: opts.timeoutMs ?? 180_000,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export interface HalfRow {
  time: number;
  algbw: number;
  busbw: number;
  wrong: number | null;
}
export interface TableRow {
  size: number;
  count: number;
  type: string;
  redop: string;
  root: number;
  oop: HalfRow;
  ip: HalfRow;
  line: string;
}

/** Data rows of an nccl-tests table (lines not starting with '#'), columns split on blanks. */
export function parseRows(stdout: string): TableRow[] {
  const rows: TableRow[] = [];
  for (const line of stdout.split('\n')) {
    // comments, blank lines and nccl-tests' un-commented skip line ("nRanks 3 is not a power of 2, …") are not rows
    const r = splitTableRow(line);
    if (!r) continue;
    const half = (h: string[]): HalfRow => ({
      time: Number(h[0]),
      algbw: Number(h[1]),
      busbw: Number(h[2]),
      wrong: h[3] === 'N/A' ? null : Number(h[3]),
    });
    const [size, count, type, redop, root] = r.lead as [string, string, string, string, string];
    rows.push({
      size: Number(size),
      count: Number(count),
      type,
      redop,
      root: Number(root),
      oop: half(r.oop),
      ip: half(r.ip),
      line,
    });
  }
  return rows;
}

export function footer(stdout: string): { outOfBounds: number; oobVerdict: string; avgBusBw: number } {
  const oob = /^# Out of bounds values : (\d+) (OK|FAILED)/m.exec(stdout);
  const bw = /^# Avg bus bandwidth    : (\S+)/m.exec(stdout);
  if (!oob || !bw) throw new Error(`no footer in output:\n${stdout}`);
  return { outOfBounds: Number(oob[1]), oobVerdict: oob[2], avgBusBw: Number(bw[1]) };
}
