// The objects TypeScript hands the native layer (HalfSpec, Segment, PeerCounts, SequenceOptions, mpi init) against the
// field tables every built module reads them with (native/src/addon/spec_fields.cc specFields()): same fields, same
// required ones, compatible kinds; and a missing, unknown or mistyped field is CORE_BAD_SPEC naming it. Modules are
// loaded without init(): a spec the reader accepts meets CORE_NOT_INITIALIZED next.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLL_ID, DTYPE_ID, OP_ID, type HalfSpec, type PeerCounts, type Segment } from '../../bench/core/types.js';
import type { NativeBackend, SequenceOptions, SpecField } from '../../bench/native/binding.js';
import { moduleBuilt, modulePath, requireNativeModule } from '../../bench/native/loader.js';

const MODULES = ['mpi', 'gloo', 'nccl'];

// One of each object with every field, optional ones included: Required<> makes the compiler insist on each key, so a
// field added to a TypeScript type and not to its example fails to compile here, and then fails the comparison below.
const segment: Required<Segment> = { buf: 'send', kind: 'copy', offset: 0, count: 4, indexBase: 0, stream: 0, rank: 0 };
const peers: Required<PeerCounts> = { sendCounts: [4], sendDispls: [0], recvCounts: [4], recvDispls: [0] };
const half: Required<HalfSpec> = {
  coll: COLL_ID.all_reduce,
  dtype: DTYPE_ID.float,
  op: OP_ID.sum,
  root: 0,
  inPlace: false,
  count: 4,
  sendOffset: 0,
  recvOffset: 0,
  rotateBytes: 16,
  maxBytes: 16,
  peers,
  fill: [segment],
  expect: [{ ...segment, buf: 'recv' }],
  iters: 1,
  aggIters: 1,
  blocking: 0,
  perIter: false,
  checkRounds: 0,
  checkSeed: 0,
  average: 1,
  unalignElems: 0,
  graphLaunches: 0,
  arrivals: false,
  group: -1,
  member: true,
  groupSize: 0,
};
const sequence: Required<SequenceOptions> = { iters: 1, warmupIters: 0, gapUs: [0], check: false };
const examples = { halfSpec: half, segment, peerCounts: peers, sequenceOptions: sequence };

// Which fields each TypeScript type requires, checked by the compiler against the type itself (an optional field
// must say false here, a required one true).
type Requiredness<T> = { [K in keyof T]-?: object extends Pick<T, K> ? false : true };
const required = {
  halfSpec: {
    coll: true,
    dtype: true,
    op: true,
    root: true,
    inPlace: true,
    count: true,
    sendOffset: true,
    recvOffset: true,
    rotateBytes: true,
    maxBytes: true,
    peers: false,
    fill: true,
    expect: true,
    iters: true,
    aggIters: true,
    blocking: true,
    perIter: true,
    checkRounds: true,
    checkSeed: true,
    average: true,
    unalignElems: true,
    graphLaunches: false,
    arrivals: false,
    group: false,
    member: false,
    groupSize: false,
  } satisfies Requiredness<HalfSpec>,
  segment: {
    buf: true,
    kind: true,
    offset: true,
    count: true,
    indexBase: true,
    stream: true,
    rank: true,
  } satisfies Requiredness<Segment>,
  peerCounts: {
    sendCounts: true,
    sendDispls: true,
    recvCounts: true,
    recvDispls: true,
  } satisfies Requiredness<PeerCounts>,
  sequenceOptions: {
    iters: true,
    warmupIters: true,
    gapUs: false,
    check: true,
  } satisfies Requiredness<SequenceOptions>,
};

/** Whether a TypeScript value fits a native kind. */
function fits(kind: string, v: unknown): boolean {
  const isInt = (x: unknown) => typeof x === 'number' && Number.isInteger(x);
  switch (kind) {
    case 'int32':
    case 'uint64':
      return isInt(v);
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    case 'uint64[]':
      return Array.isArray(v) && v.every(isInt);
    case 'number[]':
      return Array.isArray(v) && v.every((x) => typeof x === 'number');
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'object[]':
      return Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null);
    default:
      return false;
  }
}

function without<T extends object>(o: T, key: keyof T): Partial<T> {
  const copy: Partial<T> = { ...o };
  delete copy[key];
  return copy;
}

describe('native spec fields equal the TypeScript types', () => {
  for (const name of MODULES) {
    const skip = moduleBuilt(name) ? false : `${modulePath(name)} is not built`;
    describe(`collbench_${name}.node`, { skip }, () => {
      const load = () => requireNativeModule<NativeBackend>(name);
      // The reader refuses before the backend is asked for; a spec it accepts meets the missing init() instead.
      const refused = (call: () => unknown, message: RegExp) =>
        assert.throws(call, (e: Error & { code?: string }) => {
          assert.equal(e.code, 'CORE_BAD_SPEC', e.message);
          assert.match(e.message, message);
          return true;
        });
      const accepted = (call: () => unknown) => assert.throws(call, { code: 'CORE_NOT_INITIALIZED' });

      it('has the same fields, required ones and kinds', () => {
        const fields = load().specFields();
        assert.deepEqual(Object.keys(fields).sort(), Object.keys(examples).sort());
        for (const [object, table] of Object.entries(fields) as [keyof typeof examples, Record<string, SpecField>][]) {
          const example = examples[object] as Record<string, unknown>;
          assert.deepEqual(Object.keys(table).sort(), Object.keys(example).sort(), `${object}: field names`);
          const req = required[object] as Record<string, boolean>;
          for (const [field, f] of Object.entries(table)) {
            assert.equal(f.required, req[field], `${object}.${field}: required`);
            assert.ok(
              fits(f.kind, example[field]),
              `${object}.${field}: ${JSON.stringify(example[field])} is not ${f.kind}`,
            );
          }
        }
      });

      it('accepts complete specs, with and without the optional fields', () => {
        const m = load();
        accepted(() => m.runHalf(half));
        accepted(() => m.runHalf(without(without(without(half, 'peers'), 'graphLaunches'), 'arrivals') as HalfSpec));
        accepted(() => m.runHalf([half, half]));
        accepted(() => m.warmup(half, 1));
        accepted(() => m.runSequence([half, [half, half]], sequence));
        accepted(() => m.runSequence([half], without(sequence, 'gapUs') as SequenceOptions));
      });

      it('refuses a missing, unknown or mistyped field, naming it', () => {
        const m = load();
        const run = (spec: unknown) => () => m.runHalf(spec as HalfSpec);
        refused(run(without(half, 'iters')), /^runHalf: field 'iters' is missing \(int32\)$/);
        refused(run({ ...half, itres: 20 }), /^runHalf: field 'itres' is not a field of this object$/);
        refused(run({ ...half, iters: '20' }), /^runHalf: field 'iters' must be an int32, not '20'$/);
        refused(run({ ...half, iters: 2.5 }), /field 'iters' must be an int32, not 2.5$/);
        refused(run({ ...half, count: -1 }), /field 'count' must be an integer from 0 to 2\^53, not -1$/);
        refused(run({ ...half, inPlace: 0 }), /field 'inPlace' must be a boolean, not 0$/);
        refused(run({ ...half, peers: null }), /field 'peers' must be an object, not null$/);
        refused(run({ ...half, peers: without(peers, 'recvDispls') }), /field 'peers\.recvDispls' is missing/);
        refused(run({ ...half, peers: { ...peers, sendCounts: [1, -2] } }), /field 'peers\.sendCounts\[1\]' must be/);
        refused(run({ ...half, fill: [segment, without(segment, 'rank')] }), /field 'fill\[1\]\.rank' is missing/);
        refused(
          run({ ...half, expect: [{ ...segment, kind: 'bogus' }] }),
          /field 'expect\[0\]\.kind' must be one of reduceInput, reduceOutput, copy, zero, not 'bogus'$/,
        );
        refused(
          run({ ...half, fill: [{ ...segment, buf: 'both' }] }),
          /field 'fill\[0\]\.buf' must be 'send' or 'recv'/,
        );
        refused(run([half, { ...half, op: 'sum' }]), /^runHalf: field '\[1\]\.op' must be an int32/);
        refused(run(7), /^runHalf: the argument must be an object, not 7$/);
        refused(
          () => m.warmup({ ...half, checkSeed: undefined } as unknown as HalfSpec, 1),
          /^warmup: field 'checkSeed' is missing/,
        );
        refused(
          () => m.runSequence([half, { ...half, extra: 1 } as HalfSpec], sequence),
          /^runSequence op 1: field 'extra' is not a field/,
        );
        refused(
          () => m.runSequence([half], without(sequence, 'check') as SequenceOptions),
          /^runSequence options: field 'check' is missing \(boolean\)$/,
        );
        refused(
          () => m.runSequence([half], { ...sequence, gapUs: [1, 'x'] } as unknown as SequenceOptions),
          /^runSequence options: field 'gapUs\[1\]' must be a finite number, not 'x'$/,
        );
      });

      if (name === 'mpi') {
        it('init({initTimeoutSec}) refuses an unknown or mistyped field before MPI_Init', () => {
          const m = load();
          refused(() => m.init({ initTimeoutSec: '5' }), /^init: field 'initTimeoutSec' must be an int32, not '5'$/);
          refused(() => m.init({ timeoutSec: 5 }), /^init: field 'timeoutSec' is not a field of this object$/);
          refused(() => m.init({}), /^init: field 'initTimeoutSec' is missing \(int32\)$/);
        });
      }
    });
  }
});
