// The cases of a run in nccl-tests' loop order (datatype, op, root), each one sweep over the sizes with its own
// warm-up; and which pairs of `-d all` / `-o all` are probed for a library's refusal, with the `#` line naming those
// it refused (backends/refusals.ts finds them). Pure.
import type { ResolvedOptions } from './flags.js';
import { DTYPES, OPS, type DTypeName, type OpName } from '../core/types.js';

export interface SweepCase {
  dtype: DTypeName;
  op: OpName;
  root: number;
}

export interface CollectiveShape {
  loopsOps: boolean; // the op list applies (reducing collectives, and sendrecv as nccl-tests does)
  rooted: boolean;
}

/** One datatype × op of a run (op `sum` where the collective has no op). */
export interface CasePair {
  dtype: DTypeName;
  op: OpName;
}

/** A pair the loaded library refused: the native error's code and message (as one rank saw it). */
export interface Refusal extends CasePair {
  code: string;
  message: string;
}

type Lists = Pick<ResolvedOptions, 'dtypes' | 'ops'>;

const opsOf = (options: Lists, shape: CollectiveShape): OpName[] => (shape.loopsOps ? options.ops : ['sum']);

export function planCases(
  options: Pick<ResolvedOptions, 'dtypes' | 'ops' | 'root'>,
  shape: CollectiveShape,
  nranks: number,
  refused: readonly CasePair[] = [],
): SweepCase[] {
  const roots = !shape.rooted ? [-1] : options.root === -1 ? [...Array(nranks).keys()] : [options.root];
  const isRefused = (dtype: DTypeName, op: OpName): boolean => refused.some((r) => r.dtype === dtype && r.op === op);
  const cases: SweepCase[] = [];
  for (const dtype of options.dtypes)
    for (const op of opsOf(options, shape))
      if (!isRefused(dtype, op)) for (const root of roots) cases.push({ dtype, op, root });
  return cases;
}

/**
 * The pairs whose refusal by the library skips them instead of ending the run: those of a list the user gave as
 * `all` (every name: `-d all`, `-o all`, as availableCases in backends/nccl.ts reads it), taken from the `planned`
 * lists (what the devices allow). A pair both of whose names were given explicitly is not probed: it runs, and the
 * library's refusal ends the run with its own error line, as it does in nccl-tests.
 */
/** Which lists were given as `all` (-d all, -o all: every name, as the parser expands it), for those who treat the
 *  names of `all` as "whatever the library takes" (availableCases in backends/nccl.ts, probedPairs). */
export function givenAsAll(l: Lists): { dtypes: boolean; ops: boolean } {
  return { dtypes: l.dtypes.length === DTYPES.length, ops: l.ops.length === OPS.length };
}

export function probedPairs(requested: Lists, planned: Lists, shape: CollectiveShape): CasePair[] {
  const all = givenAsAll(requested);
  const allTypes = all.dtypes;
  const allOps = shape.loopsOps && all.ops;
  if (!allTypes && !allOps) return [];
  return planned.dtypes.flatMap((dtype) => opsOf(planned, shape).map((op) => ({ dtype, op })));
}

/** The code of a pair skipped because the library is known to compute it wrongly (its message says why). */
export const KNOWN_WRONG = 'known wrong';

/** The preamble's `#` lines naming the pairs skipped because `library` refused them, and those it computes wrongly
 *  (none: no line). */
export function refusalLines(refused: readonly Refusal[], library: string, shape: CollectiveShape): string[] {
  const line = (pairs: readonly Refusal[], how: string, why: string): string[] => {
    if (pairs.length === 0) return [];
    const names = pairs.map((r) => (shape.loopsOps ? `${r.dtype} ${r.op}` : r.dtype));
    const what = shape.loopsOps ? 'datatype x op pair' : 'datatype';
    return [
      `# Skipped ${pairs.length} ${what}${pairs.length === 1 ? '' : 's'} that ${library} ${how} (${why}): ${names.join(', ')}`,
    ];
  };
  const refusals = refused.filter((r) => r.code !== KNOWN_WRONG);
  const wrong = refused.filter((r) => r.code === KNOWN_WRONG);
  return [
    ...line(refusals, 'refuses', [...new Set(refusals.map((r) => r.code))].join(', ')),
    ...line(wrong, 'computes wrongly', [...new Set(wrong.map((r) => r.message))].join('; ')),
  ];
}
