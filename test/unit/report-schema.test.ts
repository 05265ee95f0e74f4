// The report document (bench/report/schema.ts, exporters/json.ts) and provenance (bench/report/provenance.ts):
// the published JSON Schema compiles strictly, a document is valid after begin, after each row and after
// end, the schema really rejects what it should, the environment is filtered, rerun commands are exact.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { isoLocal, renderJson, reportBuilder } from '../../bench/report/exporters/json.js';
import {
  ARGV_ENV,
  filterEnv,
  launcherKind,
  libraryVersions,
  reportRank,
  rerunCommand,
  shellQuote,
} from '../../bench/report/provenance.js';
import { reportErrors, reportJsonSchema, SCHEMA_PATH, type ReportDocument } from '../../bench/report/schema.js';
import { fakeMeta, fakeRow, info } from '../helpers/report-fixtures.js';

describe('the published JSON Schema', () => {
  it('is shipped as schema/collbench-report.v2.schema.json, with v1 beside it, both compiling in strict mode', () => {
    assert.ok(SCHEMA_PATH.endsWith('collbench-report.v2.schema.json'), SCHEMA_PATH);
    assert.ok(existsSync(SCHEMA_PATH), SCHEMA_PATH);
    for (const version of [1, 2] as const) {
      assert.equal(reportJsonSchema(version).$schema, 'https://json-schema.org/draft/2020-12/schema');
      assert.deepEqual(reportErrors({ schemaVersion: version }).length > 0, true);
    }
  });

  it('reads version 1 documents (no late-rank fields) and refuses v2 fields in them, and v2 documents without them', () => {
    const b = reportBuilder({});
    b.begin(fakeMeta(false));
    b.row(fakeRow(8, false));
    const v2 = JSON.parse(renderJson(b.doc!)) as ReportDocument;
    assert.equal(v2.schemaVersion, 2);
    assert.deepEqual(v2.rows[0]!.outOfPlace.late, {
      rank: 1,
      host: 'nodeB',
      lastFraction: 0.9,
      medianLateUs: 1500,
      marginUs: 50,
    });
    assert.deepEqual(v2.rows[0]!.outOfPlace.lastShare, [0.05, 0.9]);
    assert.equal(v2.rows[0]!.inPlace.late, null);
    assert.deepEqual(reportErrors(v2), []);
    // The same run as version 1 wrote it: no lateness, no late, no lastShare.
    const v1 = structuredClone(v2);
    v1.schemaVersion = 1;
    delete v1.lateness;
    for (const row of v1.rows)
      for (const h of [row.outOfPlace, row.inPlace]) {
        delete h.late;
        delete h.lastShare;
      }
    assert.deepEqual(reportErrors(v1), []);
    assert.ok(reportErrors({ ...v1, lateness: v2.lateness }).length > 0, 'v1 has no lateness');
    const v2missing = structuredClone(v2);
    delete v2missing.rows[0]!.outOfPlace.late;
    assert.ok(
      reportErrors(v2missing).some((e) => e.includes('late')),
      'v2 requires late',
    );
    assert.ok(reportErrors({ ...v2, schemaVersion: 3 }).length > 0, 'unknown versions fail');
  });
});

describe('reportBuilder: a valid document at every step', () => {
  for (const perIter of [false, true]) {
    it(`-I ${perIter ? 1 : 0}: begin, rows, end`, () => {
      const b = reportBuilder({ NCCL_TESTS_MIN_BW: '5' });
      b.begin(fakeMeta(perIter));
      assert.deepEqual(reportErrors(b.doc), []);
      assert.equal(b.doc!.status, 'incomplete');
      assert.equal(b.doc!.endTime, null);
      b.row(fakeRow(8, perIter));
      b.row(fakeRow(16, perIter, 3));
      assert.deepEqual(reportErrors(JSON.parse(renderJson(b.doc!))), []);
      b.end({ outOfBounds: 1, avgBusBw: 0.5, minBwVerdict: 'FAILED', exitCode: 7, skipped: null });
      const doc = JSON.parse(renderJson(b.doc!)) as ReportDocument;
      assert.deepEqual(reportErrors(doc), []);
      assert.equal(doc.status, 'complete');
      assert.equal(doc.summary!.minBwGBps, 5);
      assert.equal(doc.rows.length, 2);
      // in-place time 0 → infinite bandwidth: null in JSON, not a non-JSON Infinity
      assert.equal(doc.rows[0]!.inPlace.busBwGBps, null);
      assert.equal(doc.rows[0]!.inPlace.wrong, null);
      assert.deepEqual(doc.rows[1]!.outOfPlace.firstWrong, { rank: 1, index: 5, expected: '1', got: '2' });
      assert.equal(doc.ranks[1]!.pciBusId, '0000:18:00');
      assert.equal(doc.ranks[0]!.numaNode, 0);
      assert.equal(doc.ranks[0]!.pciBusId, null);
      const p = doc.rows[0]!.outOfPlace.perIter;
      if (!perIter) assert.equal(p, undefined);
      else {
        assert.equal(p!.skip, 1);
        assert.deepEqual(p!.samplesUs, [30, 10, 10, 10]);
        assert.equal(p!.stats.n, 3); // -K 1 leaves the first sample out of the statistics
        assert.equal(p!.stats.max, 10);
        assert.equal(p!.perRank.length, 2);
        assert.equal(p!.perRank[1]!.stats.min, 8);
      }
    });
  }

  it('the schema rejects unknown fields, wrong types and unfiltered environment variables', () => {
    const b = reportBuilder({});
    b.begin(fakeMeta(false));
    b.row(fakeRow(8, false));
    const good = JSON.parse(renderJson(b.doc!)) as ReportDocument;
    const bad = (mutate: (d: ReportDocument & Record<string, unknown>) => void): string[] => {
      const d = structuredClone(good) as ReportDocument & Record<string, unknown>;
      mutate(d);
      return reportErrors(d);
    };
    assert.deepEqual(
      bad(() => {}),
      [],
    );
    assert.ok(
      bad((d) => {
        d.extra = 1;
      }).length > 0,
    );
    assert.ok(
      bad((d) => {
        d.schemaVersion = 1;
      }).length > 0,
    );
    assert.ok(
      bad((d) => {
        d.provenance.env.HOME = '/root';
      }).some((e) => e.includes('/provenance/env')),
    );
    assert.ok(
      bad((d) => {
        (d.rows[0]!.outOfPlace as unknown as Record<string, unknown>).timeUs = '1';
      }).length > 0,
    );
    assert.ok(
      bad((d) => {
        delete (d.rows[0] as Partial<(typeof d.rows)[0]>).inPlace;
      }).length > 0,
    );
    assert.ok(
      bad((d) => {
        d.startTime = 'yesterday';
      }).length > 0,
    );
  });
});

describe('provenance', () => {
  it('says which launcher started the rank: srun (a job step, PMIx or not) before mpirun, torchrun-style, none', () => {
    assert.equal(launcherKind({ SLURM_STEP_ID: '0', SLURM_PROCID: '1', PMIX_RANK: '1' }), 'srun');
    assert.equal(launcherKind({ SLURM_PROCID: '0', SLURM_NTASKS: '2' }), 'other'); // a batch script, not a step task
    assert.equal(launcherKind({ OMPI_COMM_WORLD_SIZE: '2' }), 'mpirun');
    assert.equal(launcherKind({ WORLD_SIZE: '2' }), 'other');
    assert.equal(launcherKind({}), 'none');
  });

  it('keeps only NCCL_, CUDA_, OMPI_, UCX_, GLOO_ and COLLBENCH_ variables', () => {
    const env = {
      NCCL_DEBUG: 'INFO',
      CUDA_VISIBLE_DEVICES: '0,1',
      OMPI_MCA_pml: 'ob1',
      UCX_TLS: 'rc',
      GLOO_SOCKET_IFNAME: 'eth0',
      COLLBENCH_X: '1',
      HOME: '/root',
      AWS_SECRET_ACCESS_KEY: 'x',
      PATH: '/bin',
      MY_NCCL_DEBUG: 'no',
      nccl_debug: 'no',
    };
    assert.deepEqual(Object.keys(filterEnv(env)), [
      'COLLBENCH_X',
      'CUDA_VISIBLE_DEVICES',
      'GLOO_SOCKET_IFNAME',
      'NCCL_DEBUG',
      'OMPI_MCA_pml',
      'UCX_TLS',
    ]);
  });

  it('records NCCL and CUDA versions when a backend reports them, and only then', () => {
    assert.deepEqual(libraryVersions(info), { mpi: 'Open MPI 4.1.4' });
    const nccl = {
      ...info,
      backend: 'nccl',
      ncclVersion: 22807,
      ncclHeadersVersion: 22703,
      cudaRuntimeVersion: 13000,
      cudaDriverVersion: 12080,
    };
    assert.deepEqual(libraryVersions(nccl), {
      ncclRuntime: 22807,
      ncclHeaders: 22703,
      cudaRuntime: 13000,
      cudaDriver: 12080,
    });
    // what bench/backends/nccl.ts reports: the loaded library's version code and path
    const loaded = {
      ...info,
      backend: 'nccl',
      library: { versionCode: 23007, path: '/x/libnccl.so.2' },
      cudaRuntimeVersion: 13000,
      cudaDriverVersion: 0,
    };
    assert.deepEqual(libraryVersions(loaded), {
      ncclRuntime: 23007,
      ncclLibraryPath: '/x/libnccl.so.2',
      cudaRuntime: 13000,
    });
  });

  it('rerun: the typed --np command, else mpirun -np N, else the command itself, shell-quoted', () => {
    const argv = ['/x/all_reduce_perf', '-b', '8', '-J', "it's here.json"];
    assert.equal(rerunCommand(argv, 1, {}), `/x/all_reduce_perf -b 8 -J 'it'\\''s here.json'`);
    assert.equal(
      rerunCommand(argv, 4, { OMPI_COMM_WORLD_SIZE: '4' }),
      `mpirun -np 4 /x/all_reduce_perf -b 8 -J 'it'\\''s here.json'`,
    );
    assert.equal(
      rerunCommand(argv, 4, { [ARGV_ENV]: JSON.stringify(['all_reduce_perf', '--np', '4']) }),
      'all_reduce_perf --np 4',
    );
    // A torchrun-style job (as GPU check part 60 launches one) was written "mpirun -np 4": its own launcher now.
    assert.equal(
      rerunCommand(argv, 4, { WORLD_SIZE: '4', LOCAL_WORLD_SIZE: '4' }),
      `torchrun --no-python --nnodes=1 --nproc-per-node=4 ${argv.map(shellQuote).join(' ')}`,
    );
    assert.match(rerunCommand(argv, 8, { WORLD_SIZE: '8', LOCAL_WORLD_SIZE: '4' }), /^torchrun .*--nnodes=2 /);
    assert.match(rerunCommand(argv, 4, { SLURM_STEP_ID: '0', SLURM_PROCID: '1', SLURM_NTASKS: '4' }), /^srun -n 4 /);
    assert.equal(rerunCommand(['/x/all_reduce_perf', '-g', '8'], 8, {}), '/x/all_reduce_perf -g 8', 'ranks in argv');
    assert.equal(shellQuote('a b'), "'a b'");
    assert.equal(shellQuote('-b8'), '-b8');
  });

  it('rank entries: GPU PCI id, CPU NUMA node', () => {
    assert.deepEqual(reportRank({ rank: 3, pid: 9, host: 'h', device: 1, bus: '0000:2a:00', name: 'GPU' }), {
      rank: 3,
      group: 0,
      host: 'h',
      pid: 9,
      device: 1,
      deviceName: 'GPU',
      pciBusId: '0000:2a:00',
      numaNode: null,
    });
    assert.equal(reportRank({ rank: 0, pid: 9, host: 'h', device: 'cpu', bus: '-', name: 'cpu' }).numaNode, null);
  });

  it('timestamps are local ISO 8601 with an offset that round-trips', () => {
    const d = new Date('2026-05-06T07:08:09.010Z');
    const s = isoLocal(d);
    assert.match(s, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
    assert.equal(new Date(s).getTime(), d.getTime());
  });

  it('the schema file and the TypeScript types list the same top-level fields', () => {
    const schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as { required: string[] };
    const b = reportBuilder({});
    b.begin(fakeMeta(false));
    assert.deepEqual(Object.keys(b.doc!).sort(), [...schema.required].sort());
  });
});
