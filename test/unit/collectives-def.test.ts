// A collective's facts are written once per side: the TypeScript descriptors (bench/collectives/) and the native
// X-macro list (native/src/core/collectives.def). This holds them against each other, line by line, without a build:
// order and names, rooted (-r), reducing (-o), and the in-place layout the descriptor's in-place half really uses.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ALL_COLLECTIVES } from '../../bench/collectives/index.js';
import { COLLECTIVES, PROGRAMS } from '../../bench/core/types.js';

const DEF = join(import.meta.dirname, '..', '..', 'native', 'src', 'core', 'collectives.def');

interface NativeColl {
  name: string;
  inPlace: string;
  rooted: boolean;
  reducing: boolean;
}

/** CB_COLL(Enum, "name", method, inPlace, rooted, reducing) lines, in file order. */
function nativeCollectives(text: string): NativeColl[] {
  const line = /^CB_COLL\(\s*\w+\s*,\s*"(\w+)"\s*,\s*\w+\s*,\s*(\w+)\s*,\s*(true|false)\s*,\s*(true|false)\s*\)/gm;
  return [...text.matchAll(line)].map((m) => ({
    name: m[1]!,
    inPlace: m[2]!,
    rooted: m[3] === 'true',
    reducing: m[4] === 'true',
  }));
}

/** The in-place layout of a descriptor, read from its in-place half on rank 1 of 4: where the send pointer is. */
function inPlaceLayout(d: (typeof ALL_COLLECTIVES)[number]): string {
  const h = d.half(d.layout(4096, 4, 4, 1, {}), { rank: 1, nranks: 4, root: 0, inPlace: true, op: 'sum' });
  assert.equal(h.sendBuf, 'recv', `${d.name}: an in-place half sends from the recv buffer`);
  return h.sendOffset === h.recvOffset ? 'Same' : h.sendOffset > h.recvOffset ? 'SendInRecv' : 'RecvInSend';
}

describe('collectives.def and the TypeScript descriptors say the same', () => {
  const native = nativeCollectives(readFileSync(DEF, 'utf8'));

  it("the same collectives in the same order (nccl-tests' binary order); program names derived from them", () => {
    assert.deepEqual(
      native.map((c) => c.name),
      [...COLLECTIVES],
    );
    assert.deepEqual(
      ALL_COLLECTIVES.map((d) => d.name),
      [...COLLECTIVES],
    );
    assert.deepEqual(
      PROGRAMS,
      COLLECTIVES.map((c) => `${c}_perf`),
    );
  });

  it('rooted, reducing and the in-place layout of each', () => {
    const ts = ALL_COLLECTIVES.map((d) => ({
      name: d.name,
      inPlace: inPlaceLayout(d),
      rooted: d.rooted,
      reducing: d.reduces,
    }));
    assert.deepEqual(ts, native);
  });

  it('the reader fails on a changed trait (the check can fail)', () => {
    const text = readFileSync(DEF, 'utf8').replace(/(CB_COLL\(Broadcast,.*?,\s*)true(\s*,\s*false\))/, '$1false$2');
    const changed = nativeCollectives(text).find((c) => c.name === 'broadcast')!;
    assert.equal(changed.rooted, false);
    assert.equal(nativeCollectives('CB_COLL(X, "x", x, Same, true, false)').length, 1);
  });
});
