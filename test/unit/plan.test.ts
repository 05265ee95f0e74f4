// The plan of a run's cases (config/cases.ts) and the skipping of datatype × op pairs a library refuses
// (backends/refusals.ts): which pairs are probed (only those of a list given as `all`), how every rank's answers
// combine, what a refusal leaves of the plan, and the preamble line naming the skipped pairs. The refusals are
// the error codes and messages collbench's modules return (test/cli/library-refusals.test.ts makes real ones).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findRefusals } from '../../bench/backends/refusals.js';
import {
  KNOWN_WRONG,
  planCases,
  probedPairs,
  refusalLines,
  type CasePair,
  type CollectiveShape,
} from '../../bench/config/cases.js';
import { DTYPES, OPS, type DTypeName, type OpName } from '../../bench/core/types.js';

const reducing: CollectiveShape = { loopsOps: true, rooted: false };
const rooted: CollectiveShape = { loopsOps: true, rooted: true };
const copying: CollectiveShape = { loopsOps: false, rooted: false };
const all = { dtypes: [...DTYPES], ops: [...OPS] };
const fp8AvgMulsum: CasePair[] = [
  { dtype: 'f8e4m3', op: 'avg' },
  { dtype: 'f8e4m3', op: 'mulsum' },
  { dtype: 'f8e5m2', op: 'avg' },
  { dtype: 'f8e5m2', op: 'mulsum' },
];

/** A module's typed error (status.h's {backend, code, message, site}) as the binding throws it. */
function nativeError(code: string, message: string): Error {
  return Object.assign(new Error(message), {
    code,
    backend: 'nccl',
    site: 'native/src/backends/nccl/nccl_backend.cc:71 ncclAllReduce',
  });
}

describe('planCases', () => {
  it('dtype, op, root in nccl-tests order; refused pairs leave the plan, every root of theirs with them', () => {
    const cases = planCases({ dtypes: ['float', 'f8e4m3'], ops: ['sum', 'avg'], root: -1 }, rooted, 2, [
      { dtype: 'f8e4m3', op: 'avg' },
    ]);
    assert.deepEqual(
      cases.map((c) => `${c.dtype} ${c.op} ${c.root}`),
      ['float sum 0', 'float sum 1', 'float avg 0', 'float avg 1', 'f8e4m3 sum 0', 'f8e4m3 sum 1'],
    );
  });

  it("-d all -o all minus NCCL 2.28.9's four refusals: 68 of 72 cases", () => {
    const cases = planCases({ ...all, root: 0 }, reducing, 8, fp8AvgMulsum);
    assert.equal(cases.length, DTYPES.length * OPS.length - 4);
    assert.ok(!cases.some((c) => c.dtype.startsWith('f8') && (c.op === 'avg' || c.op === 'mulsum')));
    assert.ok(cases.some((c) => c.dtype === 'f8e4m3' && c.op === 'prod'));
  });

  it('a collective without ops runs sum only, whatever -o says', () => {
    assert.deepEqual(planCases({ dtypes: ['int8'], ops: ['max', 'min'], root: 0 }, copying, 4), [
      { dtype: 'int8', op: 'sum', root: -1 },
    ]);
  });
});

describe('probedPairs: only what -d all / -o all brought in is probed', () => {
  it('both lists all: every pair the devices allow (the planned lists, after adjust)', () => {
    const planned = { dtypes: DTYPES.filter((t) => !t.startsWith('f8')), ops: [...OPS] };
    const pairs = probedPairs(all, planned, reducing);
    assert.equal(pairs.length, (DTYPES.length - 2) * OPS.length);
    assert.deepEqual(pairs[0], { dtype: 'int8', op: 'sum' });
  });

  it("one list all, the other named: the named one's pairs with every name of the other", () => {
    const ops = probedPairs({ dtypes: ['f8e4m3'], ops: [...OPS] }, { dtypes: ['f8e4m3'], ops: [...OPS] }, reducing);
    assert.deepEqual(
      ops.map((p) => p.op),
      [...OPS],
    );
    const types = probedPairs({ dtypes: [...DTYPES], ops: ['avg'] }, { dtypes: [...DTYPES], ops: ['avg'] }, reducing);
    assert.equal(types.length, DTYPES.length);
  });

  it("both named (-d f8e4m3 -o avg): nothing probed; the run meets the library's refusal as nccl-tests does", () => {
    assert.deepEqual(
      probedPairs({ dtypes: ['f8e4m3'], ops: ['avg'] }, { dtypes: ['f8e4m3'], ops: ['avg'] }, reducing),
      [],
    );
    assert.deepEqual(
      probedPairs(
        { dtypes: ['float', 'half'], ops: ['sum', 'avg'] },
        { dtypes: ['float', 'half'], ops: ['sum', 'avg'] },
        reducing,
      ),
      [],
    );
  });

  it('a collective without ops: -o all means nothing, -d all probes each datatype with sum', () => {
    assert.deepEqual(
      probedPairs({ dtypes: ['float'], ops: [...OPS] }, { dtypes: ['float'], ops: [...OPS] }, copying),
      [],
    );
    const pairs = probedPairs(all, all, copying);
    assert.equal(pairs.length, DTYPES.length);
    assert.ok(pairs.every((p) => p.op === 'sum'));
  });
});

describe('refusalLines', () => {
  it('one # line: how many, the library, the codes, the pairs', () => {
    const refused = fp8AvgMulsum.map((p) => ({ ...p, code: 'NCCL_INVALID_ARGUMENT', message: 'ncclAllReduce failed' }));
    assert.deepEqual(refusalLines(refused, 'NCCL 2.28.9 /opt/nccl/lib/libnccl.so.2', reducing), [
      '# Skipped 4 datatype x op pairs that NCCL 2.28.9 /opt/nccl/lib/libnccl.so.2 refuses (NCCL_INVALID_ARGUMENT): ' +
        'f8e4m3 avg, f8e4m3 mulsum, f8e5m2 avg, f8e5m2 mulsum',
    ]);
  });

  it('one pair, a collective without ops, nothing refused', () => {
    const one = [{ dtype: 'double' as DTypeName, op: 'prod' as OpName, code: 'MPI_ERR_OP', message: '' }];
    assert.deepEqual(refusalLines(one, 'Open MPI 4.1.4', reducing), [
      '# Skipped 1 datatype x op pair that Open MPI 4.1.4 refuses (MPI_ERR_OP): double prod',
    ]);
    assert.deepEqual(refusalLines(one, 'Open MPI 4.1.4', copying), [
      '# Skipped 1 datatype that Open MPI 4.1.4 refuses (MPI_ERR_OP): double',
    ]);
    assert.deepEqual(refusalLines([], 'Open MPI 4.1.4', reducing), []);
  });

  it('pairs the library computes wrongly: their own line, with the reason', () => {
    const wrong = [
      { dtype: 'int8' as DTypeName, op: 'sum' as OpName, code: KNOWN_WRONG, message: 'saturates (ompi#8045)' },
      { dtype: 'uint8' as DTypeName, op: 'avg' as OpName, code: KNOWN_WRONG, message: 'saturates (ompi#8045)' },
    ];
    const refused = [{ dtype: 'double' as DTypeName, op: 'prod' as OpName, code: 'MPI_ERR_OP', message: '' }];
    assert.deepEqual(refusalLines([...refused, ...wrong], 'Open MPI 4.1.4', reducing), [
      '# Skipped 1 datatype x op pair that Open MPI 4.1.4 refuses (MPI_ERR_OP): double prod',
      '# Skipped 2 datatype x op pairs that Open MPI 4.1.4 computes wrongly (saturates (ompi#8045)): int8 sum, uint8 avg',
    ]);
  });
});

describe('findRefusals: one op per pair, the answers combined over the job', () => {
  const pairs: CasePair[] = [
    { dtype: 'float', op: 'sum' },
    { dtype: 'f8e4m3', op: 'avg' },
    { dtype: 'f8e4m3', op: 'mulsum' },
  ];
  /** This rank's library refuses `refused`; the other ranks' flags are `others` (combined by max, as the allreduce does). */
  const probe = (refused: string[], others: number[] = [0, 0, 0], codes = ['NCCL_INVALID_ARGUMENT']) => {
    const ran: string[] = [];
    let agreed: number[] = [];
    return {
      ran,
      agreed: () => agreed,
      p: {
        pairs,
        codes,
        runOne: async (c: CasePair) => {
          ran.push(`${c.dtype} ${c.op}`);
          if (refused.includes(`${c.dtype} ${c.op}`))
            throw nativeError('NCCL_INVALID_ARGUMENT', `ncclAllReduce failed: ncclInvalidArgument`);
        },
        agree: async (flags: number[]) => {
          agreed = flags;
          return flags.map((f, i) => Math.max(f, others[i]!));
        },
      },
    };
  };

  it("every pair probed once, in order; the refused ones come back with the library's code and message", async () => {
    const t = probe(['f8e4m3 avg']);
    const r = await findRefusals(t.p);
    assert.deepEqual(t.ran, ['float sum', 'f8e4m3 avg', 'f8e4m3 mulsum']);
    assert.deepEqual(t.agreed(), [0, 1, 0]);
    assert.deepEqual(r, [
      {
        dtype: 'f8e4m3',
        op: 'avg',
        code: 'NCCL_INVALID_ARGUMENT',
        message: 'ncclAllReduce failed: ncclInvalidArgument',
      },
    ]);
  });

  it('what another rank refused is skipped here too (all ranks run the same cases)', async () => {
    const r = await findRefusals(probe([], [0, 0, 1]).p);
    assert.deepEqual(
      r.map((x) => `${x.dtype} ${x.op} ${x.code}`),
      ['f8e4m3 mulsum refused by another rank'],
    );
  });

  it('an error that is not a refusal ends the run (thrown as is, before the combine)', async () => {
    const t = probe([]);
    t.p.runOne = async () => {
      throw nativeError('NCCL_UNHANDLED_CUDA_ERROR', 'Cuda failure');
    };
    await assert.rejects(findRefusals(t.p), /Cuda failure/);
    assert.deepEqual(t.agreed(), []);
    const plain = probe([]);
    plain.p.runOne = async () => {
      throw new Error('not a native error');
    };
    await assert.rejects(findRefusals(plain.p), /not a native error/);
  });

  it('a pair known to be computed wrongly is skipped without a probe, agreed as a refusal', async () => {
    const t = probe([]);
    const r = await findRefusals({ ...t.p, knownWrong: (c) => (c.op === 'mulsum' ? 'saturates' : null) });
    assert.deepEqual(t.ran, ['float sum', 'f8e4m3 avg']);
    assert.deepEqual(t.agreed(), [0, 0, 1]);
    assert.deepEqual(r, [{ dtype: 'f8e4m3', op: 'mulsum', code: KNOWN_WRONG, message: 'saturates' }]);
    // every pair known wrong: skipped, not thrown (nothing was refused)
    assert.equal((await findRefusals({ ...probe([]).p, knownWrong: () => 'saturates' })).length, 3);
  });

  it('every pair refused: not a skip but the failure itself', async () => {
    await assert.rejects(findRefusals(probe(['float sum', 'f8e4m3 avg', 'f8e4m3 mulsum']).p), /ncclInvalidArgument/);
  });

  it('nothing to probe, or a backend without refusal codes: no op is run', async () => {
    const t = probe([], [0, 0, 0], []);
    assert.deepEqual(await findRefusals(t.p), []);
    assert.deepEqual(t.ran, []);
    const none = probe([]);
    assert.deepEqual(await findRefusals({ ...none.p, pairs: [] }), []);
    assert.deepEqual(none.ran, []);
  });
});
