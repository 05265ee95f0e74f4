// The nccl module (collbench_nccl.node) against the real libnccl of the cached NCCL wheel, on whatever
// devices this machine has: library loading and version, unique ids, CUDA's view of the devices, and
// communicator init — which, without a GPU, must fail as a typed error naming ncclUnhandledCudaError
// and the CUDA driver. Skips, saying why, without the module or a libnccl.
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { prepareSingletonMpi } from '../../bench/launch/launcher.js';
import type { NcclInitConfig } from '../../bench/backends/nccl.js';
import { selectBackend } from '../../bench/backends/registry.js';
import { cachedNccl, ncclModule } from '../helpers/nccl.js';

const nccl = cachedNccl();
const m = ncclModule();
const skip = !m
  ? 'the nccl module is not built (no nvcc)'
  : !nccl
    ? 'no libnccl: no cached NCCL wheel to unpack'
    : false;
if (skip) console.log(`# skipping the nccl module tests: ${skip}`);

function headerVersion(): { code: number; text: string } {
  const h = readFileSync(join(nccl!.include, 'nccl.h'), 'utf8');
  const get = (name: string) => Number(new RegExp(`#define ${name} (\\d+)`).exec(h)![1]);
  return { code: get('NCCL_VERSION_CODE'), text: `${get('NCCL_MAJOR')}.${get('NCCL_MINOR')}.${get('NCCL_PATCH')}` };
}

interface TypedError extends Error {
  code: string;
  backend: string;
  site: string;
}
const typed = (e: unknown) => e as TypedError;

/** A whole init config (every field the driver passes, bench/backends/nccl.ts) for one process, one GPU, changed by
 *  `over`: init() refuses a missing field instead of defaulting it. */
function initConfig(over: Partial<NcclInitConfig>): NcclInitConfig {
  return {
    lib: nccl!.lib,
    procRank: 0,
    nprocs: 1,
    localRank: 0,
    localSize: 1,
    nThreads: 1,
    nGpus: 1,
    firstDevice: 0,
    shareDevices: 0,
    uniqueId: [],
    splitColor: -1,
    streamNull: 0,
    ctaPolicy: -1,
    localRegister: 0,
    timeoutSec: 0,
    deviceImpl: 0,
    deviceCtaCount: 16,
    ...over,
  };
}

describe('nccl module with a real libnccl', { skip }, () => {
  it('loads the library given, reports its version and the optional functions it has', () => {
    const lib = m!.library({ lib: nccl!.lib });
    const want = headerVersion();
    assert.equal(lib.versionCode, want.code);
    assert.equal(lib.version, want.text);
    assert.equal(realpathSync(lib.path), realpathSync(nccl!.lib));
    if (want.code >= 22800)
      for (const f of ['alltoall', 'gather', 'scatter', 'window', 'fp8', 'preMulSum', 'split'])
        assert.equal(lib.features[f], true, f);
  });

  it('a directory is accepted for --nccl-lib (DIR/libnccl.so.2), and the first library stays loaded', () => {
    const lib = m!.library({ lib: join(nccl!.lib, '..') });
    assert.equal(realpathSync(lib.path), realpathSync(nccl!.lib));
  });

  it('ncclGetUniqueId works without a GPU and gives 128 fresh bytes each time', () => {
    const a = m!.uniqueId({ lib: nccl!.lib }),
      b = m!.uniqueId({ lib: nccl!.lib });
    assert.equal(a.length, 128);
    assert.ok(a.every((x) => Number.isInteger(x) && x >= 0 && x < 256));
    assert.notDeepEqual(a, b);
  });

  it('probe() says whether the backend can run here, and why not', () => {
    const p = m!.probe({ lib: nccl!.lib });
    const d = m!.devices();
    assert.equal(p.usable, d.count > 0);
    assert.equal(p.library?.version, headerVersion().text);
    if (d.count === 0) assert.match(p.reason!, /^no CUDA device: /);
  });

  it('communicator init without a GPU: typed error naming ncclUnhandledCudaError and the CUDA driver', async (t) => {
    if (m!.devices().count > 0) {
      t.skip('this machine has a GPU');
      return;
    }
    const id = m!.uniqueId({ lib: nccl!.lib });
    await assert.rejects(m!.init(initConfig({ uniqueId: id })), (e) => {
      assert.equal(typed(e).code, 'NCCL_UNHANDLED_CUDA_ERROR');
      assert.equal(typed(e).backend, 'nccl');
      assert.match(
        typed(e).site,
        /^native\/src\/backends\/nccl\/nccl_backend\.cc:\d+ \S/,
        'relative to the source tree',
      );
      assert.match(typed(e).message, /^no CUDA device: .*CUDA driver/);
      assert.match(typed(e).message, /ncclCommInitRank failed: ncclUnhandledCudaError/);
      assert.match(typed(e).message, new RegExp(`NCCL ${headerVersion().text.replace(/\./g, '\\.')} from `));
      assert.ok(!typed(e).message.includes('\n'), 'one line');
      return true;
    });
  });

  it('bad init arguments are refused before anything starts', async () => {
    await assert.rejects(
      m!.init(initConfig({ uniqueId: [1, 2, 3] })),
      (e) => typed(e).code === 'CORE_BAD_SPEC' && /unique id must have 128 bytes/.test(typed(e).message),
    );
    await assert.rejects(
      m!.init(initConfig({ uniqueId: m!.uniqueId({}), nGpus: 0 })),
      (e) => typed(e).code === 'CORE_BAD_SPEC',
    );
    assert.throws(
      () => m!.init(initConfig({ uniqueId: m!.uniqueId({}), controlPlane: { not: 'an External' } })),
      (e) => typed(e).code === 'CORE_BAD_SPEC' && /controlPlane/.test(typed(e).message),
    );
  });

  it("init reads exactly NcclInitConfig's fields, and refuses a missing, unknown or mistyped one naming it", () => {
    // Every field, optional ones included (Required<>: the compiler insists on each key of the TypeScript type).
    const all: Required<NcclInitConfig> = { ...initConfig({ uniqueId: [0] }), lib: '', controlPlane: null };
    const optional = new Set(['lib', 'controlPlane']); // NcclInitConfig's `?` fields
    const fields = m!.initFields();
    assert.deepEqual(Object.keys(fields).sort(), Object.keys(all).sort());
    for (const [name, f] of Object.entries(fields)) assert.equal(f.required, !optional.has(name), name);
    const refused = (config: object, message: RegExp) =>
      assert.throws(
        () => m!.init(config),
        (e) => typed(e).code === 'CORE_BAD_SPEC' && message.test(typed(e).message),
      );
    refused({ lib: nccl!.lib, uniqueId: m!.uniqueId({}) }, /^init: field 'procRank' is missing \(int32\)$/);
    refused({ ...initConfig({ uniqueId: [1] }), nGPUs: 2 }, /^init: field 'nGPUs' is not a field of this object$/);
    refused(
      initConfig({ uniqueId: [1], timeoutSec: '5' as unknown as number }),
      /^init: field 'timeoutSec' must be an int32, not '5'$/,
    );
    refused(initConfig({ uniqueId: [1, 256] }), /^init: field 'uniqueId' must hold bytes \(0 to 255\), not 256$/);
  });

  it("accepts the MPI module's control plane (the mpirun bootstrap path)", async (t) => {
    let mpi;
    try {
      mpi = selectBackend('mpi').module;
    } catch {
      t.skip('the mpi module is not built');
      return;
    }
    prepareSingletonMpi();
    const info = mpi.init() as { nranks: number };
    try {
      assert.equal(info.nranks, 1);
      const lent = mpi.controlPlane!();
      const id = m!.uniqueId({});
      const init = m!.init(initConfig({ uniqueId: id, controlPlane: lent }));
      if (m!.devices().count === 0) {
        // Past the type-tag check: it fails only where this machine lacks a GPU.
        await assert.rejects(init, (e) => typed(e).code === 'NCCL_UNHANDLED_CUDA_ERROR');
      } else {
        await init;
        m!.finalize();
      }
    } finally {
      mpi.finalize();
    }
  });
});
