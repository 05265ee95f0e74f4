// The front end's first word (`collbench <word> …`): the command list `collbench` and `collbench help` show, and the
// one line for a word that is neither a command nor a collective, naming the nearest one (`compar` -> compare).
import { COLLECTIVES } from '../core/types.js';

/** Every command of the front end, with what it does in one line (main.ts dispatches them). */
export const COMMAND_SUMMARIES: Readonly<Record<string, string>> = Object.freeze({
  run: 'one benchmark, as nccl-tests runs it: collbench [run] <collective> [flags] (or all_reduce_perf [flags])',
  compare: 'one run per NCCL_ALGO/NCCL_PROTO/--mca/--gloo-algo setting, a verdict per size',
  accept: "cluster acceptance: a profile's checks, a baseline, a pass/fail verdict",
  locate: 'names the slow host or link of a multi-host job',
  workload: 'the collectives of a training step (DDP buckets, FSDP shards) per configuration',
  replay: 'replays what a real job issued (NCCL call log, PyTorch trace, flight-recorder dump)',
  report: 'overlays reports (-J files, nccl-tests output) into Markdown and HTML charts',
  info: 'what this installation can run here (backends, libraries, devices)',
  bundle: 'a self-contained tarball for GPU nodes without Node.js',
  help: "help [<command>|env]: a command's flags, or the environment variables",
});

/** The command list, as `collbench` and `collbench help` print it. */
export function commandList(program: string): string {
  const width = Math.max(...Object.keys(COMMAND_SUMMARIES).map((c) => c.length));
  return [
    `USAGE: ${program} <command> [options]   (${program} help <command> for its flags)`,
    'Commands:',
    ...Object.entries(COMMAND_SUMMARIES).map(([c, what]) => `  ${c.padEnd(width)}  ${what}`),
    `Collectives: ${COLLECTIVES.join(' ')}`,
    '',
  ].join('\n');
}

/** Edit distance (insertions, deletions, substitutions) of two short words. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length]!;
}

/** The line for a first word that is no command and no collective, or null when it is one of them (or a flag). */
export function unknownWordLine(word: string | undefined, commands: readonly string[]): string | null {
  if (word === undefined || word.startsWith('-')) return null;
  const bare = word.endsWith('_perf') ? word.slice(0, -'_perf'.length) : word;
  if (commands.includes(word) || (COLLECTIVES as readonly string[]).includes(bare)) return null;
  const near = [...commands, ...COLLECTIVES]
    .map((w) => ({ w, d: editDistance(bare.toLowerCase(), w) }))
    .filter(({ w, d }) => d <= Math.max(2, Math.floor(w.length / 3)))
    .sort((x, y) => x.d - y.d)[0];
  return (
    `unknown command or collective '${word}'${near ? ` (did you mean ${near.w}?)` : ''}; commands: ${commands.join(', ')}; ` +
    `collectives: ${COLLECTIVES.join(', ')}`
  );
}
