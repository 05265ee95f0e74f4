// The program a comparison runs under each setting, as parsed from the words after `--`: its own file so that
// program.ts (the benchmarks) and replay.ts (`collbench replay`) both build it without importing each other.
import type { BackendName, CollectiveName } from '../core/types.js';
import type { ResolvedOptions } from '../config/flags.js';

export interface ProgramSpec {
  words: string[]; // as typed after --
  /** What it runs: a collective, or 'replay' for `collbench replay TRACE…` (compare/replay.ts). */
  collective: CollectiveName | 'replay';
  /** Arguments of the child `collbench` (collective word first, or `replay`), without compare's own -J. */
  args: string[];
  /** The benchmark's options; null for a replay (the replay reads its own: replay.ts checks them). */
  options: ResolvedOptions | null;
  /** A replay's --backend where given (a benchmark's is options.backend). */
  backend?: BackendName | null;
}
