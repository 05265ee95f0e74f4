// Timed call sequences (replay, workload): the backend brought up as a run's, with the progress boards that let an
// expired wait name who did not arrive, and every call of the sequences turned into native specs over one buffer.
import { getCollective } from '../collectives/index.js';
import type { LayoutContext } from '../collectives/descriptor.js';
import type { SweepCase } from '../config/cases.js';
import type { ResolvedOptions } from '../config/flags.js';
import type { IO } from '../core/io.js';
import { DTYPE_BYTES, type CollectiveName, type HalfSpec } from '../core/types.js';
import { attachProgressBoards } from './attach-boards.js';
import { withBackend, type BackendUp } from './bring-up.js';
import type { SuiteHooks } from './context.js';
import { localSpecs } from './half-spec.js';
import { preflight } from './preflight.js';

/** One rank's timed sequences: the backend up, the environment, the plan for the job's world, whether it is rank 0. */
export interface SequenceRun<P> {
  up: BackendUp;
  env: NodeJS.ProcessEnv;
  plan: P;
  root: boolean;
}

/** Brings the backend up (preflight, device limits agreed) and the progress boards, plans for the job's world
 *  (`planFor` may refuse it), then runs `body`. */
export async function withSequenceBackend<P, T>(
  options: ResolvedOptions,
  io: IO,
  hooks: Pick<SuiteHooks, 'env' | 'onTimeout'>,
  planFor: (nranks: number) => P,
  body: (run: SequenceRun<P>) => Promise<T>,
): Promise<T> {
  const env = hooks.env ?? process.env;
  return withBackend(options, io, { ...hooks, preflight: preflight(options, env) }, async (up) => {
    await up.adjust();
    const board = await attachProgressBoards({ info: up.info, native: up.native, dog: up.dog, io }, env);
    try {
      const plan = planFor(up.info.nranks);
      return await body({ up, env, plan, root: (up.info.worldRank ?? up.info.rank) === 0 });
    } finally {
      board?.close();
    }
  });
}

/** Where a call runs when it is not on the world: its native process group (createGroups' index), the group's size
 *  and this rank's place in it (null: not a member; the call is then the group's ranks' alone). */
export interface GroupPlace {
  index: number;
  size: number;
  rank: number | null;
}

/** One call of a timed sequence: the collective, its case (datatype, op, root), size, layout context and check seed;
 *  `group` for a call on a process group (root and layout then in the group's ranks). */
export interface SequenceCall {
  collective: CollectiveName;
  sweep: SweepCase;
  bytes: number;
  ctx: LayoutContext;
  seed: number;
  group?: GroupPlace;
}

/** The native specs of every call of every sequence (one, or one per local rank this process drives), with the send
 *  and receive buffers allocated for the largest call. */
export function sequenceSpecs(
  options: ResolvedOptions,
  up: BackendUp,
  sequences: readonly SequenceCall[][],
  check: boolean,
): (HalfSpec | HalfSpec[])[][] {
  let sendBytes = 0,
    recvBytes = 0;
  const specs = sequences.map((calls) =>
    calls.map((c) => {
      // On a group, the call's layout and data are those of a job of the group's ranks (a non-member's: group rank 0's).
      const info = c.group ? { ...up.info, rank: c.group.rank ?? 0, nranks: c.group.size, localRanks: 1 } : up.info;
      const h = localSpecs(
        options,
        getCollective(c.collective),
        info,
        c.ctx,
        c.sweep,
        c.bytes,
        false,
        check ? 1 : 0,
        c.seed,
      );
      const ts = DTYPE_BYTES[c.sweep.dtype];
      sendBytes = Math.max(sendBytes, h.layout.sendElems * ts);
      recvBytes = Math.max(recvBytes, h.layout.recvElems * ts);
      if (c.group) for (const spec of [h.specs].flat()) Object.assign(spec, onGroup(c.group));
      return h.specs as HalfSpec | HalfSpec[];
    }),
  );
  up.native.allocate(sendBytes + 64, recvBytes + 64);
  return specs;
}

const onGroup = (g: GroupPlace): Pick<HalfSpec, 'group' | 'member' | 'groupSize'> => ({
  group: g.index,
  member: g.rank !== null,
  groupSize: g.size,
});
