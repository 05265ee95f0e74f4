// --links in the run engine: after each row-half every process reads its NCCL link profiler rows (reset), rank 0
// gathers them with the host of each process, and at the end judges the links (backends/nccl-links.ts) for the table's
// `# slow link` / `# nccl algo` lines and the JSON report's links.
import { hostname } from 'node:os';
import {
  algoLines,
  algoPerSize,
  judgeLinks,
  matrixLines,
  slowLinkLines,
  type HalfLinks,
  type RankLinks,
} from '../backends/nccl-links.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { BackendUp } from './bring-up.js';
import type { LinksCollector } from './context.js';

/** The collector of a run with --links whose driver reads link rows; null otherwise. */
export function linksCollector(
  options: ResolvedOptions,
  up: Pick<BackendUp, 'driver' | 'native' | 'dog'>,
): LinksCollector | null {
  const { driver, native, dog } = up;
  if (!options.links || !driver.linkRows) return null;
  const halves: HalfLinks[] = [];
  let gathered = false;
  let loaded = false;
  return {
    async afterHalf() {
      const rows = driver.linkRows!(native, true);
      const mine = JSON.stringify({ host: hostname(), read: rows === null ? null : (JSON.parse(rows) as unknown) });
      const all = await dog.watch('the gather of link rows', 0, native.gatherStringsAsync(mine));
      if (!all) return;
      gathered = true;
      const ranks: RankLinks[] = [];
      for (const text of all) {
        const p = JSON.parse(text) as { host: string; read: { ranks: RankLinks[] } | null };
        if (p.read) loaded = true;
        for (const r of p.read?.ranks ?? []) ranks.push({ ...r, host: p.host });
      }
      halves.push({ ranks: ranks.sort((a, b) => a.rank - b.rank) });
    },
    finish() {
      if (!gathered) return null;
      if (!loaded) {
        const line = "# links: NCCL did not load collbench's profiler plugin (NCCL_PROFILER_PLUGIN): no link judged";
        return { lines: [line], verdict: null, algo: [] };
      }
      const verdict = judgeLinks(halves);
      const algo = algoPerSize(halves);
      return { lines: [...algoLines(algo), ...matrixLines(verdict.matrix), ...slowLinkLines(verdict)], verdict, algo };
    },
  };
}
