// The nccl driver's pure decisions: NCCL_TESTS_SPLIT / _MASK colours, NCCL_TESTS_DEVICE and the device
// numbering, what -d all / -o all keep on a given library and GPUs (fp8 below sm_90), the GPU-memory cap
// (nccl-tests' rule for two buffers), flags the library is too old for, and flags refused up front.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  availableCases,
  firstDevice,
  libraryRefusals,
  memoryCappedMaxBytes,
  createNcclDriver,
  NATIVE_BACKSTOP_EXTRA_SEC,
  splitColor,
  type NcclLibraryInfo,
} from '../../bench/backends/nccl.js';
import { resolveOptions } from '../../bench/config/resolve.js';
import { DTYPES, OPS } from '../../bench/core/types.js';
import type { CollectiveDescriptor } from '../../bench/collectives/descriptor.js';
import { ENV } from '../../bench/core/environment.js';
import { launcherJobToken } from '../../bench/launch/job-token.js';
import { rendezvous, type TorchrunEnv } from '../../bench/launch/rendezvous.js';
import type { NativeBackend } from '../../bench/native/binding.js';
import { RAS_DEADLINE_MS } from '../../bench/backends/nccl-ras.js';
import { GRACE_MS, SURVEY_MS } from '../../bench/engine/watchdog.js';
import { listening, stray, freePort } from '../helpers/net.js';

const GiB = 1024 ** 3;
const allFeatures = (on: boolean): NcclLibraryInfo['features'] => ({
  alltoall: on,
  gather: on,
  scatter: on,
  preMulSum: on,
  avg: on,
  bfloat16: on,
  fp8: on,
  config: on,
  ctaPolicy: on,
  ctaPolicyZero: on,
  split: on,
  register: on,
  window: on,
  graphs: on,
  lastError: on,
});
const lib = (version: string, features: NcclLibraryInfo['features'], deviceApiRefusal = ''): NcclLibraryInfo => ({
  path: '/x/libnccl.so.2',
  how: 'test',
  version,
  versionCode: 0,
  features,
  deviceApiRefusal,
  deviceApiBuilt: [],
});

describe('NCCL_TESTS_SPLIT colours', () => {
  const cases: [string, number, number][] = [
    ['AND 1', 5, 1],
    ['&0x2', 6, 2],
    ['or 4', 1, 5],
    ['|0b10', 1, 3],
    ['MOD 4', 7, 3],
    ['%3', 7, 1],
    ['DIV 4', 7, 1],
    ['/ 2', 7, 3],
    ['  div   0x8 ', 17, 2],
  ];
  for (const [spec, rank, color] of cases) {
    it(`${JSON.stringify(spec)} rank ${rank} → ${color}`, () =>
      assert.equal(splitColor(rank, { NCCL_TESTS_SPLIT: spec }), color));
  }
  it('no split without the variables', () => assert.equal(splitColor(3, {}), -1));
  it('NCCL_TESTS_SPLIT_MASK is hexadecimal and wins', () => {
    assert.equal(splitColor(7, { NCCL_TESTS_SPLIT_MASK: '10', NCCL_TESTS_SPLIT: 'MOD 2' }), 7 & 0x10);
    assert.equal(splitColor(0x13, { NCCL_TESTS_SPLIT_MASK: '0x3' }), 3);
  });
  it('bad values are refused, naming the variable', () => {
    assert.throws(() => splitColor(1, { NCCL_TESTS_SPLIT: 'XOR 1' }), /NCCL_TESTS_SPLIT: 'XOR 1'/);
    assert.throws(() => splitColor(1, { NCCL_TESTS_SPLIT: 'MOD 0' }), /MOD 0/);
    assert.throws(() => splitColor(1, { NCCL_TESTS_SPLIT_MASK: 'zz' }), /NCCL_TESTS_SPLIT_MASK/);
  });
});

describe('the native wait for completion under -T', () => {
  it("ends after the watchdog's verdict and RAS's view, never before them (a race seen on one H100)", () => {
    const verdictMs = SURVEY_MS + GRACE_MS + SURVEY_MS + RAS_DEADLINE_MS;
    assert.ok(NATIVE_BACKSTOP_EXTRA_SEC * 1000 > verdictMs, `${NATIVE_BACKSTOP_EXTRA_SEC} s vs ${verdictMs} ms`);
  });
});

describe('device choice', () => {
  it('local process rank × t × g, as nccl-tests', () => {
    assert.equal(firstDevice(0, { nThreads: 1, nGpus: 1 }, {}), 0);
    assert.equal(firstDevice(3, { nThreads: 1, nGpus: 2 }, {}), 6);
    assert.equal(firstDevice(1, { nThreads: 2, nGpus: 2 }, {}), 4);
  });
  it('NCCL_TESTS_DEVICE overrides it', () => {
    assert.equal(firstDevice(3, { nThreads: 1, nGpus: 1 }, { NCCL_TESTS_DEVICE: '5' }), 5);
    assert.throws(() => firstDevice(0, { nThreads: 1, nGpus: 1 }, { NCCL_TESTS_DEVICE: 'gpu0' }), /NCCL_TESTS_DEVICE/);
  });
});

describe('datatypes and ops the job can run', () => {
  const all = { dtypes: [...DTYPES], ops: [...OPS] };
  it('-d all drops fp8 below sm_90 (nccl-tests), keeps it on sm_90', () => {
    assert.deepEqual(
      availableCases(all, allFeatures(true), 80, 'NCCL 2.30.7').dtypes,
      DTYPES.filter((t) => !t.startsWith('f8')),
    );
    assert.deepEqual(availableCases(all, allFeatures(true), 90, 'NCCL 2.30.7').dtypes, [...DTYPES]);
  });
  it('an explicit fp8 request below sm_90 is refused with the reason', () => {
    assert.throws(
      () => availableCases({ dtypes: ['float', 'f8e4m3'], ops: ['sum'] }, allFeatures(true), 80, 'NCCL 2.30.7'),
      /-d: f8e4m3 needs compute capability 9.0 \(sm_90\) or newer on every GPU; the job has sm_80/,
    );
  });
  it('an old library loses bf16, fp8, avg and mulsum from "all", and refuses them when asked', () => {
    const old = { ...allFeatures(false) };
    const r = availableCases(all, old, 90, 'NCCL 2.8.4');
    assert.deepEqual(
      r.dtypes,
      DTYPES.filter((t) => t !== 'bfloat16' && !t.startsWith('f8')),
    );
    assert.deepEqual(r.ops, ['sum', 'prod', 'max', 'min']);
    assert.throws(
      () => availableCases({ dtypes: ['float'], ops: ['mulsum'] }, old, 90, 'NCCL 2.8.4'),
      /-o: mulsum needs .*NCCL 2.8.4/,
    );
  });
});

describe('GPU memory cap (nccl-tests rule, two buffers)', () => {
  it('80 GiB GPUs: reserve 4 GiB, limit (80 − 4 − 1) / 2 GiB', () => {
    assert.equal(memoryCappedMaxBytes(64 * GiB, 80 * GiB), Math.floor((75 * GiB) / 2));
    assert.equal(memoryCappedMaxBytes(8 * GiB, 80 * GiB), null);
  });
  it('16 GiB GPU: reserve 1 GiB', () => assert.equal(memoryCappedMaxBytes(16 * GiB, 16 * GiB), 7 * GiB));
  it('the cap is exact at the boundary', () => {
    const limit = Math.floor((24 * GiB - 2 * GiB - GiB) / 2);
    assert.equal(memoryCappedMaxBytes(limit, 24 * GiB), null);
    assert.equal(memoryCappedMaxBytes(limit + 1, 24 * GiB), limit);
  });
});

describe('flags against the library and the driver', () => {
  const opts = (o: Record<string, unknown>) => resolveOptions({ collective: 'all_reduce', backend: 'nccl', ...o });
  it('flags an old NCCL cannot honour are named with the version needed', () => {
    const old = lib('2.18.1', {
      ...allFeatures(true),
      register: false,
      window: false,
      ctaPolicy: false,
      ctaPolicyZero: false,
    });
    assert.match(
      libraryRefusals(opts({ localRegister: 1 }), old)!,
      /^-R 1: .*2.19.*loaded NCCL 2.18.1 from \/x\/libnccl.so.2/,
    );
    assert.match(libraryRefusals(opts({ localRegister: 2 }), old)!, /^-R 2: .*2.27/);
    assert.match(libraryRefusals(opts({ ctaPolicy: 1 }), old)!, /^-x: .*2.27/);
    assert.equal(libraryRefusals(opts({}), old), null);
    assert.equal(
      libraryRefusals(opts({ localRegister: 2, ctaPolicy: 2, cudaGraph: 1 }), lib('2.30.7', allFeatures(true))),
      null,
    );
  });
  it('-D on a library whose device API does not match the kernels: the native refusal, with -D and the path', () => {
    const why =
      'the device-API kernels were built against NCCL 2.28.9 headers; … this is loaded NCCL 2.30.7: rebuild …';
    const mismatched = lib('2.30.7', allFeatures(true), why);
    assert.equal(
      libraryRefusals(opts({ deviceImpl: 2, localRegister: 2 }), mismatched),
      `-D 2: ${why} (/x/libnccl.so.2)`,
    );
    assert.equal(
      libraryRefusals(opts({ localRegister: 2 }), mismatched),
      null,
      'without -D the device API does not matter',
    );
    assert.equal(libraryRefusals(opts({ deviceImpl: 1, localRegister: 2 }), lib('2.28.9', allFeatures(true))), null);
  });
  it('-D/-V: what the device-API kernels do not do is one usage line, before any library work', () => {
    const v = (o: Record<string, unknown>) => () => createNcclDriver().validate(opts({ localRegister: 2, ...o }));
    assert.throws(
      () => createNcclDriver().validate(opts({ deviceCtaCount: 32 })),
      /^UsageError: -V\/--device_cta_count: .*give -D 1\.\.4/,
    );
    assert.throws(
      () =>
        createNcclDriver().validate(
          resolveOptions({ collective: 'all_gather', backend: 'nccl', deviceImpl: 1, localRegister: 2 }),
        ),
      /-D\/--device_implementation: .*all_reduce only, not all_gather/,
    );
    assert.throws(
      v({ deviceImpl: 1, ops: ['max'] }),
      /^UsageError: -D 1: the device-API kernels reduce with sum only, not max/,
    );
    assert.throws(
      v({ deviceImpl: 3, dtypes: ['int32'] }),
      /^UsageError: -D 3: no device-API kernel for int32; it has float, double$/,
    );
    assert.throws(
      v({ deviceImpl: 4, dtypes: ['double'] }),
      /^UsageError: -D 4: no device-API kernel for double; it has float$/,
    );
    assert.throws(v({ deviceImpl: 1, dtypes: ['bfloat16'] }), /no device-API kernel for bfloat16/);
    for (const impl of [1, 2, 3, 4])
      assert.doesNotThrow(v({ deviceImpl: impl, deviceCtaCount: 128 }), `-D ${impl} float sum`);
    assert.doesNotThrow(v({ deviceImpl: 2, dtypes: ['half'] }));
  });
  it('validate refuses what collbench does not do, instead of ignoring it', () => {
    assert.throws(() => createNcclDriver().validate(opts({ cudaGraph: 1, streamNull: 1 })), /-G: .*-y 1/);
    assert.doesNotThrow(() =>
      createNcclDriver().validate(opts({ nGpus: 8, nThreads: 2, cudaGraph: 4, localRegister: 1, memoryReport: 1 })),
    );
  });
  it('--nccl-lib needs the nccl backend when another one is named', () => {
    assert.throws(
      () => resolveOptions({ collective: 'all_reduce', backend: 'mpi', ncclLib: '/x' }),
      /ncclLib: needs the nccl backend, not mpi/,
    );
    assert.doesNotThrow(() => resolveOptions({ collective: 'all_reduce', ncclLib: '/x' }));
  });
});

describe("the torchrun-style bootstrap's lines in the preamble (driver.warnings)", () => {
  /** Rank 0's driver on a stand-in module (the library, a unique id, an init that succeeds), and rank 1 in this process
   *  through the rendezvous itself after an HTTP probe at MASTER_PORT. */
  async function rank0Notes(jobEnv: NodeJS.ProcessEnv): Promise<string[]> {
    const port = await freePort();
    const env = {
      RANK: '0',
      WORLD_SIZE: '2',
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: String(port),
      [ENV.RENDEZVOUS_TIMEOUT]: '20',
      ...jobEnv,
    };
    const native = {
      library: () => lib('2.30.7', allFeatures(true)),
      uniqueId: () => new Array<number>(128).fill(7),
      devices: () => ({ count: 1 }),
      init: async () => ({ nranks: 2, rank: 0 }),
    } as unknown as NativeBackend;
    const driver = createNcclDriver(env);
    const options = resolveOptions({ collective: 'all_reduce', backend: 'nccl' });
    const up = driver.init!(native, options, 120);
    while (!listening(port)) await new Promise((r) => setTimeout(r, 20));
    await stray('127.0.0.1', port, (s) => s.write('GET / HTTP/1.0\r\n\r\n'));
    const world: TorchrunEnv = { rank: 1, worldSize: 2, localRank: null, masterAddr: '127.0.0.1', masterPort: port };
    await rendezvous(world, JSON.stringify({ host: 'h1', pid: 1 }), 20_000, { token: launcherJobToken(jobEnv) });
    const info = await up;
    return driver.warnings(options, {} as CollectiveDescriptor, info);
  }

  it('no job id: unauthenticated, and the probe turned away', async () => {
    const notes = await rank0Notes({});
    assert.equal(notes.length, 2, notes.join('\n'));
    assert.match(
      notes[0]!,
      /^# Warning: the torchrun-style rendezvous is unauthenticated: .*set COLLBENCH_JOB_TOKEN to one value/,
    );
    assert.equal(
      notes[1],
      '# Rendezvous: turned away 1 connection that did not belong to this job: 1 from 127.0.0.1 ' +
        "(not a rendezvous hello: 'GET / HTTP/1.0')",
    );
  });

  it('with TORCHELASTIC_RUN_ID: only the probe', async () => {
    assert.deepEqual(await rank0Notes({ TORCHELASTIC_RUN_ID: 'run-7' }), [
      '# Rendezvous: turned away 1 connection that did ' +
        "not belong to this job: 1 from 127.0.0.1 (not a rendezvous hello: 'GET / HTTP/1.0')",
    ]);
  });
});
