// The judges of gpu-check part 60 (scripts/gpu-check/mr-judge.sh, issue #38) on recorded outputs, before lent GPU
// time is spent on them: the launcher's real output (CPU analogues on gloo, test/fixtures/gpu-multirank/), with the
// NCCL-only lines added from collbench's own formatters (RAS view, device-arrival late lines) and NCCL's message
// strings; each judge is shown to pass the expected output and to fail the ways the GPU run could go wrong.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { describeRasView, parseRasJson } from '../../bench/backends/nccl-ras.js';
import { lateLine, lateSummaryLine, type LateCell } from '../../bench/report/reporters/nccl-table.js';
import { repoRoot } from '../helpers/cli.js';

const JUDGE = join(repoRoot, 'scripts', 'gpu-check', 'mr-judge.sh');
const LATENESS = join(repoRoot, 'bench', 'numbers', 'lateness.ts');
const fixture = (name: string): string => readFileSync(join(repoRoot, 'test', 'fixtures', name), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'collbench-gpu-multirank-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** mr-judge.sh's verdict line and exit code on `output` (the judged command is `cat` of it). */
function judge(output: string, ...args: string[]): { line: string; code: number | null } {
  const file = join(dir, `out-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(file, output);
  // node runs the .ts lateness module through tsx, as the bundle's node runs dist/numbers/lateness.js
  const r = spawnSync('bash', [JUDGE, ...args, '--', 'cat', file], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '--import tsx', GC_NODE: process.execPath },
  });
  return { line: r.stdout.trimEnd().split('\n').pop()!, code: r.status };
}

/** The launcher's line for a rank it had to kill (the replacement of a "mr: rank R exit …" line whose time is $1). */
const killedLine = (rank: number): string =>
  `mr: rank ${rank} killed by the launcher at $1 s (still running 20 s after a peer failed)`;

/** Moves every "mr: … at +S s" event of `rank` to +`at` s. */
const retime = (out: string, rank: number, at: number): string =>
  out.replace(new RegExp(`^(mr: rank ${rank} [^\\n]* at \\+)[0-9.]+( s)`, 'm'), `$1${at}$2`);

describe('part 60 judges on recorded launcher output', () => {
  const hung = fixture('gpu-multirank/hung-gloo-4ranks.txt');
  // NCCL's view of the stopped job as collbench prints it, from a real RAS reply (test/fixtures/nccl-ras)
  const rasBody = fixture('nccl-ras/ras-status.json.txt')
    .split('\n')
    .filter((l) => !/^[<>]/.test(l))
    .join('\n');
  const rasLines = describeRasView(parseRasJson(rasBody), 'localhost:28028');
  const ncclHung = hung.replace(/^(timeout: rank 2 .*)$/m, `$1\n${rasLines.join('\n')}`);
  const report = join(dir, 'hung.json');
  const library = { source: 'NCCL RAS', state: 'answered', reason: null, lines: rasLines, view: null };
  writeFileSync(report, JSON.stringify({ timeout: { what: 'x', verdict: 'x', library } }, null, 2));

  it('hung: the stopped rank named once, the first peer out within T + 5 s; with NCCL, RAS printed and in -J', () => {
    assert.match(
      judge(hung, 'hung', '2', '5').line,
      /^judge: ok: hung: stopped at \+4\.0 s, first peer exit 4 at \+8\.4 s \(limit \+14 s\)$/,
    );
    assert.match(
      judge(ncclHung, 'hung', '2', '5', report).line,
      /^judge: ok: hung: .*RAS view in -J: "state": "answered"/,
    );
    assert.equal(judge(hung, 'hung', '2', '5', report).line, "judge: not met: hung: no '# NCCL RAS at' view printed");
    assert.equal(judge(hung, 'hung', '2', '5', report).code, 1);
    const noJson = judge(ncclHung, 'hung', '2', '5', join(dir, 'none.json')).line;
    assert.match(noJson, /not met: hung: no -J report /);
  });

  it('hung: too late, another rank named, a peer killed by the launcher, or nobody stopped: not met', () => {
    assert.match(
      judge(retime(hung, 0, 14.5), 'hung', '2', '5').line,
      /first peer exited 4 at \+14\.5 s, later than T \+ 5 s after the stop at \+4\.0 s/,
    );
    assert.match(
      judge(hung.replace('timeout: rank 2 (host', 'timeout: rank 3 (host'), 'hung', '2', '5').line,
      /0 verdict lines naming rank 2, expected 1; a verdict names another rank/,
    );
    assert.match(
      judge(hung.replace(/^mr: rank 3 exit 4 at (\S+) s$/m, killedLine(3)), 'hung', '2', '5').line,
      /a peer had to be killed by the launcher/,
    );
    assert.match(judge(hung, 'hung', '1', '5').line, /^judge: not met: hung: rank 1 was never stopped/);
  });

  const dead = fixture('gpu-multirank/dead-gloo-4ranks.txt');
  it('dead: every other rank ends non-zero within S s of the kill, none killed by the launcher', () => {
    assert.match(judge(dead, 'dead', '1', '5').line, /^judge: ok: dead: killed at \+4\.0 s; rank 1 exit 137/);
    assert.match(
      judge(dead, 'dead', '1', '0.3').line,
      /^judge: not met: dead: rank 0 ended at \+4\.4 s, more than 0\.3 s after the kill/,
    );
    assert.match(
      judge(retime(dead, 3, 40), 'dead', '1', '10').line,
      /rank 3 ended at \+40 s, more than 10 s after the kill at \+4\.0 s/,
    );
    assert.match(
      judge(dead.replace(/^mr: rank 2 exit 3 at (\S+) s$/m, killedLine(2)), 'dead', '1', '10').line,
      /rank 2 was killed by the launcher/,
    );
    assert.match(
      judge(dead.replace(/^mr: rank 2 exit 3 /m, 'mr: rank 2 exit 0 '), 'dead', '1', '10').line,
      /rank 2 exited 0/,
    );
  });

  it('bringup: a peer ending 20 s after the others (gloo, recorded) is a hang; every rank with a reason is met', () => {
    const late = fixture('gpu-multirank/bringup-gloo-4ranks-late.txt');
    assert.match(
      judge(late, 'bringup', '2', '10').line,
      /^judge: not met: bringup: rank 3 ended at \+33\.6 s, after T \+ 10 s; rank 2's lines do not name/,
    );
    // The same job on NCCL: rank 2's line as collbench words a library failure, with NCCL 2.28.9's own message
    // (src/bootstrap.cc, bootstrapNetInit); the others' as the bring-up watchdog words its expiry.
    const nccl = late
      .replace(
        /^\[rank 2\] .*$/m,
        '[rank 2] rank 2 on host gpu1: nccl failure NCCL_INVALID_USAGE at ' +
          'native/src/backends/nccl/nccl_backend.cc:310 ncclCommInitRank failed: ncclInvalidUsage (invalid usage (run ' +
          'with NCCL_DEBUG=WARN for details)): Bootstrap : no socket interface found',
      )
      .replace(/Gloo bring-up \([^)]*\)[^\n]*/g, 'NCCL bring-up (ncclCommInitRank)');
    assert.match(
      judge(retime(nccl, 3, 14.1), 'bringup', '2', '10').line,
      /^judge: ok: bringup: rank 2 exit 3 at \+2\.5 s;rank 0 exit 4/,
    );
    assert.match(judge(retime(nccl, 3, 14.1), 'bringup', '0', '10').line, /rank 1 exit 4, expected 5 \(no unique id\)/);
    assert.match(
      judge(retime(nccl, 3, 14.1).replace(/^\[rank 1\] .*\n/m, ''), 'bringup', '2', '10').line,
      /rank 1 printed no reason/,
    );
  });

  it("late: named with its GPU by device arrivals; host enqueue times, by collbench's own rule, name nobody", () => {
    const cell = (rank: number): LateCell => ({
      rank,
      host: 'gpu1',
      lastFraction: 1,
      medianLateUs: 2000,
      marginUs: 50,
      device: 0,
      bus: '0000:19:00',
    });
    const lines = [1024, 8192, 65536].flatMap((s) => ['out-of-place', 'in-place'].map((p) => lateLine(s, p, cell(2))));
    const out = [
      ...lines,
      lateSummaryLine(
        lines.map(() => cell(2)),
        6,
      )!,
      'mr: exit 0',
    ].join('\n');
    // 20 iterations per row-half: rank 2's device arrival 2 ms after the others', host enqueue within a few µs
    const trace = join(dir, 'trace.jsonl');
    const rows = (late: number, who: number) =>
      Array.from({ length: 4 }, (_, r) =>
        Array.from({ length: 20 }, (_, i) => 1e6 + i * 3000 + (r === who ? late : 0) + ((r * 7 + i * 3) % 5)),
      );
    const line = (hostLate: number, hostWho = 1) =>
      JSON.stringify({
        sizeBytes: 1024,
        inPlace: false,
        deviceUs: rows(2000, 2),
        referenceUs: [0, 0, 0, 0],
        hostUs: rows(hostLate, hostWho),
      });
    writeFileSync(trace, `${line(0)}\n${line(0)}\n`);
    assert.match(
      judge(out, 'late', '2', trace, LATENESS).line,
      /^judge: ok: late: device arrivals: rank 2 named in 6 row-halves; host enqueue: 2 row-halves: nobody in 2$/,
    );
    // Another rank's host enqueue noise (time-sliced ranks on one H100 showed it) is a note, not a failure...
    writeFileSync(trace, `${line(0)}\n${line(2500)}\n`);
    assert.match(
      judge(out, 'late', '2', trace, LATENESS).line,
      /^judge: ok: late: .*host enqueue: 2 row-halves: (nobody in 1, rank 1 in 1|rank 1 in 1, nobody in 1)$/,
    );
    // ...but the delayed rank named by host enqueue means the device delay reached the host: not met.
    writeFileSync(trace, `${line(0)}\n${line(2500, 2)}\n`);
    assert.match(
      judge(out, 'late', '2', trace, LATENESS).line,
      /^judge: not met: .*host enqueue names the delayed rank: .*: (nobody in 1, rank 2 in 1|rank 2 in 1, nobody in 1)$/,
    );
    const other = out.replace(/: rank 2 on gpu1, GPU 0 \[0000:19:00\] last in .*$/m, ': rank 1 on gpu1, GPU 0 last');
    assert.match(judge(other, 'late', '2').line, /another late line: # late: 1024 B out-of-place: rank 1/);
    assert.match(judge('# nothing late\n', 'late', '2').line, /no '# late rank: 2 on HOST, GPU N' summary/);
    assert.match(
      judge(out, 'late', '2', join(dir, 'missing.jsonl'), LATENESS).line,
      /no host enqueue times in the trace/,
    );
  });

  it('choices: every size row of compare\'s table has NCCL\'s algorithm/protocol; a "?" or no row is not met', () => {
    // compare's text table (bench/compare/render.ts renderText: '# ' header, '  ' rows, aligned columns)
    const table = (c: string) =>
      [
        '#  id  combination                       status  #wrong  runs  error',
        '#  C0  (default)                          ok           0     1',
        '#  C1  NCCL_ALGO=Ring NCCL_PROTO=LL       ok           0     1',
        '#  C2  NCCL_ALGO=Tree NCCL_PROTO=LL128    failed       -     1  ncclInvalidUsage',
        '#',
        '# all_reduce float sum',
        '# size (B)    C0    C1    C2  best  gain  vs C0  margin  NCCL chose (C0)',
        '      1024  0.01  0.01     -    C1   +3%      -       -  RING/LL',
        `  16777216  1.20  0.90     -    C0     -      -       -  ${c}`,
        '# no crossover',
      ].join('\n');
    assert.match(
      judge(table('TREE/SIMPLE'), 'choices').line,
      /^judge: ok: choices: 2 sizes with NCCL's choice; combinations: 3 \(1 not ok\)$/,
    );
    assert.match(judge(table('RING/LL+TREE/SIMPLE'), 'choices').line, /^judge: ok: /);
    assert.match(judge(table('?'), 'choices').line, /^judge: not met: choices: 1 sizes without NCCL's choice/);
    assert.match(judge('# nothing\n', 'choices').line, /no size rows under a 'NCCL chose' column/);
  });

  it('locate: the throttled host named, and no other', () => {
    // bench/locate/document.ts renderLocateText's suspect and verdict lines
    const out = (hosts: string[]) =>
      [
        ...hosts.map(
          (h) => `# suspect host ${h} (confidence 0.9990): every pair ` + 'with it at 12% of the reference busbw',
        ),
        `# verdict: suspect: ${hosts.join(', ')}`,
      ].join('\n');
    assert.match(judge(out(['cb38-h3']), 'locate', 'cb38-h3').line, /^judge: ok: locate: # verdict: suspect: cb38-h3$/);
    assert.match(
      judge(out(['cb38-h3', 'cb38-h1']), 'locate', 'cb38-h3').line,
      /another suspect: # suspect host cb38-h1 /,
    );
    assert.match(judge(out([]), 'locate', 'cb38-h3').line, /cb38-h3 not named a suspect host/);
  });
});
