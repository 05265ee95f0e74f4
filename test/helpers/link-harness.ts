// The link profiler's C++ harness (native/test/link_profiler_harness.cc) as tests use it: its simulated rings driven
// through the built plugin, the rows gathered as rank 0 gathers them, and a run's report made from those rows by
// the engine's collector and the JSON exporter, so the features above (report, accept, locate, compare) read real rows.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { HalfLinks } from '../../bench/backends/nccl-links.js';
import type { RunContext } from '../../bench/engine/context.js';
import { linksCollector } from '../../bench/engine/links.js';
import { renderJson, reportBuilder } from '../../bench/report/exporters/json.js';
import type { ReportDocument } from '../../bench/report/schema.js';
import { repoRoot } from './cli.js';
import { fakeMeta, fakeRow } from './report-fixtures.js';

export const release = join(repoRoot, 'build', 'Release');
export const profilerLibrary = join(release, 'libcollbench_nccl_profiler.so');
export const profilerHarness = join(release, 'link_profiler_harness');

export interface HarnessRun {
  ranks: number;
  channels: number;
  halves: { count: number; read: { ranks: HalfLinks['ranks'] } }[];
  dropped: number;
  eventAllocations: number;
  afterFinalize: number;
}

/** `link_profiler_harness LIB ring ARGS…`: the plugin's rows per row-half, checked for drops and allocations. */
export function ring(...args: string[]): HarnessRun {
  assert.ok(existsSync(profilerHarness), `${profilerHarness} missing: run make native`);
  const r = spawnSync(profilerHarness, [profilerLibrary, 'ring', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 << 20,
  });
  assert.equal(r.status, 0, r.stderr);
  const run = JSON.parse(r.stdout) as HarnessRun;
  assert.equal(run.dropped, 0, 'events dropped');
  assert.equal(run.eventAllocations, 0, 'the event calls allocated memory');
  assert.equal(run.afterFinalize, 0, 'rows left after every communicator was finalized');
  return run;
}

/** The rows as rank 0 gathers them: each rank with its host (n01 for rank 0, …). */
export const gathered = (run: HarnessRun): HalfLinks[] =>
  run.halves.map((h) => ({
    ranks: h.read.ranks.map((r) => ({ ...r, host: harnessHost(r.rank) })),
  }));

/** n01 for rank 0, …: the host of each rank of the harness's rings. */
export const harnessHost = (rank: number): string => `n${String(rank + 1).padStart(2, '0')}`;

/** A run's report (-J) whose --links part comes from the harness's rows, read and gathered by the engine's collector
 *  (engine/links.ts) as a run does after each row-half, each rank's rows from its own process on its own host (n01,
 *  …); `null` rows: NCCL did not load the plugin. */
export async function linksReport(
  run: HarnessRun | null,
  halves = 6,
  sizes: readonly number[] = [8],
): Promise<ReportDocument> {
  const reads = run ? run.halves.map((h) => JSON.stringify(h.read)) : [];
  const context = {
    options: { links: true },
    driver: { linkRows: () => (run ? (reads.shift() ?? null) : null) },
    native: {
      // One process per rank: what each would send, with its host (the harness holds every rank in one read).
      gatherStringsAsync: (mine: string) => {
        const read = (JSON.parse(mine) as { read: { ranks: { rank: number }[] } | null }).read;
        if (!read) return Promise.resolve([mine]);
        return Promise.resolve(
          read.ranks.map((r) => JSON.stringify({ host: harnessHost(r.rank), read: { ranks: [r] } })),
        );
      },
    },
    dog: { watch: <T>(_what: string, _sec: number, p: Promise<T>) => p },
  } as unknown as RunContext;
  const collector = linksCollector(context.options, context)!;
  for (let i = 0; i < (run ? run.halves.length : halves); i++) await collector.afterHalf();
  const links = collector.finish()!;
  const b = reportBuilder({});
  const meta = fakeMeta(false);
  b.begin({ ...meta, options: { ...meta.options, links: true } });
  for (const size of sizes) b.row(fakeRow(size, false));
  b.end({ outOfBounds: 0, avgBusBw: 1, minBwVerdict: null, exitCode: 0, skipped: null, links });
  return JSON.parse(renderJson(b.doc!)) as ReportDocument;
}
