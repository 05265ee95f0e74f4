// The enum values the TypeScript layer sends (bench/core/types.ts DTYPE_ID, OP_ID, COLL_ID,
// SEGMENT_KIND_ID) against those of every built module's enumIds() (native/src/core/types.h and
// spec.h tables): one value, name or entry that differs fails here instead of silently mis-running.
// Loads each module without init(), so nccl takes part without a GPU; a module not built is skipped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLL_ID, DTYPE_ID, OP_ID, SEGMENT_KIND_ID } from '../../bench/core/types.js';
import type { NativeBackend } from '../../bench/native/binding.js';
import { moduleBuilt, modulePath, requireNativeModule } from '../../bench/native/loader.js';

const MODULES = ['mpi', 'gloo', 'nccl'];
const expected = { dtype: DTYPE_ID, op: OP_ID, coll: COLL_ID, segmentKind: SEGMENT_KIND_ID };

describe('native enum ids equal bench/core/types.ts', () => {
  for (const name of MODULES) {
    const skip = moduleBuilt(name) ? false : `${modulePath(name)} is not built`;
    it(`collbench_${name}.node`, { skip }, () => {
      const ids = requireNativeModule<NativeBackend>(name).enumIds();
      // Plain objects on both sides: deepEqual compares names, values and the set of entries.
      assert.deepEqual({ ...ids }, expected);
    });
  }
  it('at least one module is built', () => {
    assert.ok(
      MODULES.some((m) => moduleBuilt(m)),
      `no module in ${modulePath('mpi').replace(/[^/]*$/, '')}`,
    );
  });
});
