// The exporters and live reporters on a known document (bench/report/exporters/*, reporters/progress.ts,
// reporters/pretty.ts, atomic-write.ts): CSV columns and cells, the Markdown table, JUnit cases and
// failures, the nccl-tests v3 layout, atomic replacement, progress only on a terminal, the pretty table.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { removeOrphanedTemps, writeFileAtomic } from '../../bench/report/atomic-write.js';
import { CSV_COLUMNS, renderCsv } from '../../bench/report/exporters/csv.js';
import { renderJson as renderJsonDoc, reportBuilder } from '../../bench/report/exporters/json.js';
import { renderJunit, xmlEscape } from '../../bench/report/exporters/junit.js';
import { renderMarkdown } from '../../bench/report/exporters/md.js';
import { ncclTestsJson } from '../../bench/report/exporters/nccl-tests-json.js';
import {
  buildReporters,
  checkOutputPaths,
  documentJson,
  EXPORT_INTERVAL_MS,
  exportReporter,
  OutputError,
  outputFiles,
  writeDocument,
} from '../../bench/report/outputs.js';
import { prettyReporter } from '../../bench/report/reporters/pretty.js';
import {
  formatDuration,
  periodicProgress,
  progressMode,
  progressReporter,
  progressWanted,
  timeLeft,
} from '../../bench/report/reporters/progress.js';
import { resolveOptions } from '../../bench/config/resolve.js';
import { UsageError } from '../../bench/core/errors.js';
import type { ReportDocument } from '../../bench/report/schema.js';
import { fakeMeta, fakeRow } from '../helpers/report-fixtures.js';

function doc(perIter: boolean, wrong: number | null = 0, minBw?: string): ReportDocument {
  // Two mpi ranks: started by mpirun, whose variable says how many processes the rerun command starts.
  const b = reportBuilder({ OMPI_COMM_WORLD_SIZE: '2', ...(minBw ? { NCCL_TESTS_MIN_BW: minBw } : {}) });
  b.begin(fakeMeta(perIter));
  b.row(fakeRow(8, perIter));
  b.row(fakeRow(16, perIter, wrong));
  b.end({
    outOfBounds: wrong ? 1 : 0,
    avgBusBw: 0.001,
    minBwVerdict: minBw ? 'FAILED' : null,
    exitCode: wrong ? 7 : 0,
    skipped: null,
  });
  return b.doc!;
}

/** Minimal RFC 4180 reader for the test (quotes, doubled quotes, commas and newlines inside quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [],
    cell = '',
    quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += ch;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

describe('temporary files of killed writers', () => {
  it("are removed after the job; a live writer's and other files stay", () => {
    const dir = mkdtempSync(join(tmpdir(), 'collbench-orphans-'));
    const dead = spawnSync('true').pid!; // a process that has exited: its pid names no writer any more
    const target = join(dir, 'r.json');
    for (const f of [
      `.r.json.${dead}.0.tmp`,
      `.r.json.${dead}.7.tmp`,
      `.r.json.${process.pid}.0.tmp`,
      `.other.json.${dead}.0.tmp`,
      'r.json',
    ]) {
      writeFileSync(join(dir, f), 'x');
    }
    assert.deepEqual(removeOrphanedTemps(target).sort(), [`.r.json.${dead}.0.tmp`, `.r.json.${dead}.7.tmp`]);
    assert.deepEqual(
      readdirSync(dir).sort(),
      [`.other.json.${dead}.0.tmp`, `.r.json.${process.pid}.0.tmp`, 'r.json'].sort(),
    );
  });
});

describe('CSV', () => {
  it('one line per row-half, the same columns with units whether -I or not', () => {
    for (const perIter of [false, true]) {
      const rows = parseCsv(renderCsv(doc(perIter)));
      assert.deepEqual(rows[0], [...CSV_COLUMNS]);
      assert.equal(rows.length, 1 + 2 * 2);
      for (const r of rows) assert.equal(r.length, CSV_COLUMNS.length);
      const col = (r: string[], name: string): string => r[CSV_COLUMNS.indexOf(name as (typeof CSV_COLUMNS)[number])]!;
      assert.deepEqual(
        rows.slice(1).map((r) => col(r, 'placement')),
        ['out-of-place', 'in-place', 'out-of-place', 'in-place'],
      );
      assert.deepEqual(
        rows.slice(1).map((r) => col(r, 'size_bytes')),
        ['8', '8', '16', '16'],
      );
      assert.equal(col(rows[1]!, 'time_us'), '10');
      assert.equal(col(rows[2]!, 'wrong'), ''); // in-place not checked: empty, and checked = 0
      assert.equal(col(rows[2]!, 'checked'), '0');
      assert.equal(col(rows[2]!, 'busbw_gbps'), ''); // infinite → empty
      assert.equal(col(rows[1]!, 'iter_max_us'), perIter ? '10' : '');
      assert.ok(CSV_COLUMNS.every((c) => /^[a-z0-9_]+$/.test(c)));
    }
  });
});

describe('Markdown', () => {
  it('a header, the rerun command and the nccl-tests columns as a table', () => {
    const md = renderMarkdown(doc(true, 2));
    const table = md.split('\n').filter((l) => l.startsWith('|'));
    assert.equal(table.length, 2 + 2);
    assert.match(
      table[0]!,
      /^\| size \(B\) \| count \(elements\) \| type \| redop \| root \| oop time \(us\) \| oop algbw \(GB\/s\) \| oop busbw \(GB\/s\) \| oop #wrong \| oop i_min \(us\)/,
    );
    assert.equal(table[0]!.split(' | ').length, table[2]!.split(' | ').length);
    assert.match(table[3]!, /^\| 16 \| 4 \| float \| sum \| -1 \| 10.00 \| .* \| 2 \| /);
    assert.match(table[3]!, /\| N\/A \|/);
    assert.match(md, /```sh\nmpirun -np 2 \/opt\/cb\/bin\/all_reduce_perf -b 8 -e 64 -f 2 -J 'out file.json'\n```/);
    assert.match(md, /Out of bounds values: 1 FAILED/);
  });
});

describe('JUnit', () => {
  it('one case per row-half; #wrong > 0 and a failed minimum bandwidth are failures', () => {
    const xml = renderJunit(doc(false, 3, '100'));
    assert.equal((xml.match(/<testcase /g) ?? []).length, 4 + 1);
    assert.equal((xml.match(/<failure /g) ?? []).length, 2);
    assert.match(xml, /<testsuites name="collbench all_reduce_perf" tests="5" failures="2"/);
    assert.match(
      xml,
      /<testcase name="16 B out-of-place" classname="collbench.all_reduce.float.sum.root-1"[^>]*>\s*<failure message="3 wrong elements on 1 rank\(s\); first: rank 1 index 5 expected 1 got 2" type="wrong-results">/,
    );
    assert.match(
      xml,
      /<failure message="average bus bandwidth 0.001 GB\/s is below 0.9 x 100 GB\/s" type="threshold">/,
    );
    const clean = renderJunit(doc(false, 0));
    assert.match(clean, /tests="4" failures="0"/);
    assert.equal(xmlEscape('a<b & "c"\u0001'), 'a&lt;b &amp; &quot;c&quot;');
  });
});

describe('nccl-tests v3 layout', () => {
  it('keys in nccl-tests order, bool-strings, padded root, per-process rows with -I', () => {
    const j = ncclTestsJson(doc(true)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.deepEqual(Object.keys(j), [
      'version',
      'start_time',
      'args',
      'env',
      'nccl_version',
      'config',
      'results',
      'out_of_bounds',
      'average_bus_bandwidth',
      'errors',
      'end_time',
    ]);
    assert.equal(j.version, 3);
    assert.match(j.start_time, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.deepEqual(Object.keys(j.config), [
      'nthreads',
      'ngpus',
      'minimum_bytes',
      'maximum_bytes',
      'step_factor',
      'warmup_iters',
      'iterations',
      'aggregated_iterations',
      'validation',
      'graph',
      'blocking_collectives',
      'per_iter_timing',
      'per_iter_skip',
      'parallel_init',
      'devices',
    ]);
    assert.equal(j.config.per_iter_timing, 'true');
    assert.equal(j.config.devices.length, 2);
    assert.deepEqual(Object.keys(j.config.devices[1]), [
      'rank',
      'group',
      'pid',
      'hostname',
      'device',
      'device_hex',
      'device_info',
    ]);
    assert.equal(j.config.devices[0].hostname, 'node1');
    assert.equal(j.config.devices[1].device_hex, '0000:18:00');
    const r = j.results[0];
    assert.deepEqual(Object.keys(r), [
      'size',
      'count',
      'type',
      'redop',
      'root',
      'out_of_place',
      'out_of_place_per_iter',
      'in_place',
      'in_place_per_iter',
      'actual_iterations',
      'experiment_name',
    ]);
    assert.equal(r.root, '    -1');
    assert.deepEqual(Object.keys(r.out_of_place), ['time', 'alg_bw', 'bus_bw', 'nwrong']);
    assert.equal(r.in_place.nwrong, null);
    assert.equal(r.in_place.bus_bw, 'nan');
    assert.deepEqual(Object.keys(r.out_of_place_per_iter), [
      'skipped_iterations',
      'min_us',
      'max_us',
      'avg_us',
      'p50_us',
      'p95_us',
      'p99_us',
      'stdev_us',
      'cv_pct',
      'times_us',
      'per_process_max_times_us',
    ]);
    assert.deepEqual(r.out_of_place_per_iter.per_process_max_times_us, [
      [30, 10, 9, 10],
      [10, 8, 10, 9],
    ]);
    assert.deepEqual(j.out_of_bounds, { count: 0, okay: 'true' });
    assert.deepEqual(j.average_bus_bandwidth, { bandwidth: 0.001, okay: 'unchecked' });
  });
});

describe('atomic rewrite', () => {
  it('replaces the file whole and leaves no temporary file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-atomic-'));
    const f = join(dir, 'r.json');
    writeFileSync(f, 'old');
    writeFileAtomic(f, 'new content');
    assert.equal(readFileSync(f, 'utf8'), 'new content');
    assert.deepEqual(readdirSync(dir), ['r.json']);
    assert.throws(() => writeFileAtomic(join(dir, 'missing', 'x'), 'x'), /ENOENT/);
  });

  it('refuses unwritable or clashing outputs before a run starts', () => {
    assert.throws(
      () => checkOutputPaths([{ flag: '--csv', path: '/nonexistent-dir/x.csv' }]),
      (e: unknown) =>
        e instanceof UsageError &&
        /^--csv: cannot write \/nonexistent-dir\/x.csv: folder \/nonexistent-dir does not exist$/.test(e.message),
    );
    assert.throws(
      () =>
        checkOutputPaths([
          { flag: '-J', path: '-' },
          { flag: '--md', path: '-' },
        ]),
      /--md: stdout \(-\) already receives -J/,
    );
    assert.throws(
      () =>
        checkOutputPaths([
          { flag: '-J', path: 'a' },
          { flag: '--md', path: './a' },
        ]),
      /--md: \.\/a is also the file of -J/,
    );
    assert.throws(() => checkOutputPaths([{ flag: '--html', path: tmpdir() }]), /is a directory/);
    // /proc exists but takes no new file (ENOENT): not "does not exist" (issue #36)
    assert.throws(
      () => checkOutputPaths([{ flag: '-J', path: '/proc/out.json' }]),
      (e: unknown) =>
        e instanceof UsageError &&
        e.message ===
          '-J: cannot write /proc/out.json: folder /proc takes no new files (a kernel file system such as /proc or /sys)',
    );
  });
});

describe('rewrites during a run', () => {
  const rowsIn = (f: string): number => (JSON.parse(readFileSync(f, 'utf8')) as { rows: unknown[] }).rows.length;
  const statusOf = (f: string): string => (JSON.parse(readFileSync(f, 'utf8')) as { status: string }).status;
  const summary = {
    outOfBounds: 0,
    avgBusBw: 0,
    minBwVerdict: null,
    exitCode: 0,
    skipped: null,
    memory: null,
    cycles: 1,
    cyclesBelowWarnBusBw: 0,
  };

  it('at begin, then at most once per interval (the rows in between at its end), whole at the end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-throttle-'));
    const f = join(dir, 'r.json');
    const r = exportReporter([{ flag: '-J', path: f, render: renderJsonDoc }], () => {}, {});
    await r.begin!(fakeMeta(false));
    assert.equal(rowsIn(f), 0);
    await r.row!(fakeRow(8, false)); // first row: the last write was just now (begin): held back
    await r.row!(fakeRow(16, false));
    assert.equal(rowsIn(f), 0, 'rows within the interval are not written one by one');
    await new Promise((res) => setTimeout(res, EXPORT_INTERVAL_MS + 300));
    assert.equal(rowsIn(f), 2, 'the held-back rows are written when the interval ends, without another row');
    await new Promise((res) => setTimeout(res, EXPORT_INTERVAL_MS + 50));
    await r.row!(fakeRow(32, false)); // a row a whole interval after the last write: written at once
    assert.equal(rowsIn(f), 3);
    await r.row!(fakeRow(64, false));
    assert.equal(rowsIn(f), 3);
    await r.end!(summary);
    assert.equal(rowsIn(f), 4);
    assert.equal(statusOf(f), 'complete');
    assert.deepEqual(readdirSync(dir), ['r.json']);
  });

  it('a run that stops early writes what it held back (still incomplete)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-abandon-'));
    const f = join(dir, 'r.json');
    const r = exportReporter([{ flag: '-J', path: f, render: renderJsonDoc }], () => {}, {});
    await r.begin!(fakeMeta(false));
    await r.row!(fakeRow(8, false));
    await r.row!(fakeRow(16, false));
    assert.equal(rowsIn(f), 0);
    await r.abandon!();
    assert.equal(rowsIn(f), 2);
    assert.equal(statusOf(f), 'incomplete');
  });
});

describe('progress', () => {
  const tty = () => {
    const chunks: string[] = [];
    return {
      chunks,
      stream: {
        isTTY: true,
        write: (s: string) => {
          chunks.push(s);
          return true;
        },
      },
    };
  };

  it('only on a terminal, never with --quiet, in CI or on a dumb terminal', () => {
    assert.equal(progressWanted({ isTTY: true, write: () => true }, false, {}), true);
    assert.equal(progressWanted({ isTTY: false, write: () => true }, false, {}), false);
    assert.equal(progressWanted({ write: () => true }, false, {}), false);
    assert.equal(progressWanted({ isTTY: true, write: () => true }, true, {}), false);
    assert.equal(progressWanted({ isTTY: true, write: () => true }, false, { CI: 'true' }), false);
    const o = resolveOptions({ collective: 'all_reduce' });
    const piped = buildReporters(
      o,
      { out: () => {}, err: () => {} },
      { stderr: { isTTY: false, write: () => true }, env: {} },
    );
    assert.equal(piped.length, 2); // the table and the plain progress lines
    const quiet = buildReporters(
      { ...o, quiet: true },
      { out: () => {}, err: () => {} },
      { stderr: { isTTY: false, write: () => true }, env: {} },
    );
    assert.equal(quiet.length, 1); // the table only
    const term = buildReporters(
      o,
      { out: () => {}, err: () => {} },
      { stderr: { isTTY: true, write: () => true }, env: {} },
    );
    assert.equal(term.length, 2);
  });

  it("draws the bar for rank 0 under mpirun when the launcher's stderr is a terminal; plain lines elsewhere", () => {
    const pipe = { isTTY: false, write: () => true };
    assert.equal(progressMode(pipe, false, { COLLBENCH_STDERR_TTY: '1' }), 'bar');
    assert.equal(progressMode(pipe, false, {}), 'lines');
    assert.equal(progressMode(pipe, false, { COLLBENCH_STDERR_TTY: '1', TERM: 'dumb' }), 'lines');
    assert.equal(progressMode(pipe, true, { COLLBENCH_STDERR_TTY: '1' }), null);
  });

  it('prints a plain line each period with rows done, elapsed and the time left, none before the first period', async () => {
    const lines: string[] = [];
    let t = 0,
      done = 0;
    const ticker = periodicProgress(
      (l) => lines.push(l),
      () => ({ done, planned: 40, unit: 'rows', what: 'x 8MB' }),
      30,
      () => t,
    );
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(lines, []);
    t = 80_000;
    done = 12;
    await new Promise((r) => setTimeout(r, 45));
    ticker.stop();
    assert.equal(lines[0], 'progress: 12/40 rows, 1m20s elapsed, ~3m07s left (now x 8MB)');
    // 8 s into the 13th row, at the pace of the 12 done (6 s each): 28 rows less the 8 s spent (2m40s) would be less
    // than the 27 rows after it take (2m42s); 13 s into it (over twice the pace) the pace says nothing
    assert.equal(timeLeft(80, 12, 40, 8), '2m42s');
    assert.equal(timeLeft(85, 12, 40, 13), '?');
    assert.equal(timeLeft(62, 12, 40, 2), '2m18s'); // 2 s into it: 28 × 5 s less 2 s
    assert.equal(timeLeft(80, 12, 40, 0), '3m07s');
    assert.equal(timeLeft(80, 0, 40, 0), '?');
  });

  it('draws rows done/total, the size and an ETA, and erases itself before each row prints', async () => {
    const { chunks, stream } = tty();
    let t = 0;
    const p = progressReporter(stream, () => t);
    const meta = fakeMeta(false);
    await p.begin!(meta);
    const sweep = { dtype: 'float' as const, op: 'sum' as const, root: -1 };
    p.rowStart!({ index: 0, sweep, cycle: 0, sizeBytes: 8 });
    assert.match(chunks.join(''), /0\/4 rows \| all_reduce float 8B \| 0s elapsed, ETA \?/);
    t = 10_000;
    await p.row!(fakeRow(8, false));
    chunks.length = 0;
    p.rowStart!({ index: 1, sweep, cycle: 0, sizeBytes: 1 << 20 });
    assert.match(chunks.join(''), /1\/4 rows \| all_reduce float 1MB \| 10s elapsed, ETA 30s/);
    chunks.length = 0;
    await p.row!(fakeRow(16, false));
    // eslint-disable-next-line no-control-regex -- the escape that clears the line is what is checked
    assert.match(chunks.join(''), /\r|\u001b\[/); // the line is cleared before the table prints
    await p.end!({ outOfBounds: 0, avgBusBw: 0, minBwVerdict: null, exitCode: 0, skipped: null });
    assert.equal(formatDuration(3725), '1h02m');
  });
});

describe('--format pretty', () => {
  it('prints a boxed table per sweep with both halves, then the footer', async () => {
    const lines: string[] = [];
    const r = prettyReporter((l) => lines.push(l));
    await r.begin!(fakeMeta(true));
    await r.row!(fakeRow(8, true));
    await r.row!(fakeRow(16, true, 2));
    assert.equal(lines.length, 2); // nothing until the sweep completes
    await r.end!({ outOfBounds: 1, avgBusBw: 0.5, minBwVerdict: null, exitCode: 7, skipped: null });
    const text = lines.join('\n');
    assert.match(text, /all_reduce_perf: type float, redop sum, root -1/);
    assert.match(text, /out-of-place/);
    assert.match(text, /in-place/);
    assert.match(text, /┌/);
    assert.match(text, /│ +16 │ +4 │ +10.00 │/);
    assert.match(text, /# Out of bounds values : 1 FAILED/);
  });
});

describe("writeDocument (the commands' one output writer)", () => {
  const doc = { kind: 'x', rows: [1, 2] };
  const captured = (): { io: { out: (l: string) => void; err: (l: string) => void }; out: string[]; err: string[] } => {
    const out: string[] = [],
      err: string[] = [];
    return { io: { out: (l) => out.push(l), err: (l) => err.push(l) }, out, err };
  };

  it('summary on stdout, files written whole; a document on stdout: summary to stderr or none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-tidy-docout-'));
    const file = join(dir, 'doc.json');
    const a = captured();
    await writeDocument(
      doc,
      [
        { flag: '-J', path: file, render: documentJson },
        { flag: '--csv', path: null, render: () => 'no' },
      ],
      a.io,
      { lines: ['summary'], besideStdout: 'stderr' },
    );
    assert.deepEqual(a.out, ['summary']);
    assert.deepEqual(a.err, []);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), doc);
    const b = captured();
    await writeDocument(doc, [{ flag: '-J', path: '-', render: documentJson }], b.io, {
      lines: ['summary'],
      besideStdout: 'stderr',
    });
    assert.deepEqual(b.err, ['summary']);
    assert.deepEqual(b.out, [JSON.stringify(doc, null, 2)]);
    const c = captured();
    await writeDocument(doc, [{ flag: '--csv', path: '-', render: async () => 'a,b\n' }], c.io, {
      lines: ['summary'],
      besideStdout: 'none',
    });
    assert.deepEqual([c.out, c.err], [['a,b'], []]);
    assert.deepEqual(
      outputFiles([
        { flag: '-J', path: '-', render: documentJson },
        { flag: '--csv', path: file, render: documentJson },
        { flag: '--html', path: null, render: documentJson },
      ]),
      [{ flag: '--csv', path: file }],
    );
  });

  it('a file that cannot be written is an OutputError naming the flag and the file', async () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'cb-tidy-docout-')), 'gone', 'doc.json');
    await assert.rejects(
      writeDocument(doc, [{ flag: 'locate: -J', path: missing, render: documentJson }], captured().io, {
        lines: [],
        besideStdout: 'stderr',
      }),
      (e: unknown) => e instanceof OutputError && e.message.startsWith(`locate: -J: cannot write ${missing}: ENOENT`),
    );
  });
});
