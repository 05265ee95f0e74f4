// Progress of multi-rank runs (#36.4): rank 0 under mpirun writes stderr to a pipe, yet the user may sit at a terminal
// (the --np launcher says so, and the bar is drawn); where stderr is not a terminal a long run prints a plain line
// every 10 s on stderr, never in the table on stdout, and a short one prints none.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { binDir, parseRows, runProgram } from '../helpers/cli.js';

/** Plain lines every 300 ms instead of 10 s, so that a short run shows them. */
const fastLines = { COLLBENCH_PROGRESS_PERIOD_MS: '300' };
const terminalEnv = { ...process.env, CI: undefined, TERM: 'xterm' };
// eslint-disable-next-line no-control-regex -- terminal escapes of the progress bar are removed on purpose
const plain = (text: string): string => text.replace(/\r|\u001b\[[0-9;?]*[A-Za-z]|\u001b[78]/g, '\n');

describe('progress under --np with the mpi backend', () => {
  it("is drawn when the launcher's stderr is a terminal, and every table row survives it", () => {
    const cmd = `${join(binDir, 'all_reduce_perf')} -b 1M -e 8M -f 2 -n 5 --np 2 --backend mpi`;
    const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], {
      encoding: 'utf8',
      env: terminalEnv,
      timeout: 180_000,
    });
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /\d\/4 rows \| all_reduce float \d+MB \| \d+s elapsed, ETA/);
    assert.equal(parseRows(plain(r.stdout)).length, 4, r.stdout);
  });

  it('prints a plain line every ~10 s on stderr when it is not a terminal; stdout keeps only the table', () => {
    // A line every 300 ms (COLLBENCH_PROGRESS_PERIOD_MS) over two rows of about 2.4 s each idle (4.8 s at -n 2000),
    // longer under load: lines naming a row whatever the machine's speed, far inside the timeout on a busy machine.
    const args = ['-b', '2M', '-e', '4M', '-f', '2', '-n', '2000', '-w', '1', '--np', '2', '--backend', 'mpi'];
    const r = runProgram('all_reduce_perf', args, { env: { CI: undefined, ...fastLines }, timeoutMs: 300_000 });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('progress: '));
    assert.ok(lines.length >= 1, `no progress line on stderr:\n${r.stderr}`);
    const duration = String.raw`\d+(?:m\d\d)?s`; // formatDuration below an hour: 45s, 3m05s
    const progressLine = new RegExp(
      String.raw`^progress: [0-2]/2 rows, ${duration} elapsed(, ~${duration} left)? ` +
        String.raw`\(now all_reduce float [24]MB\)$`,
    );
    // before the first row starts (the bring-up) a line has no "(now …)"; later ones name the row
    const bringUpLine = new RegExp(String.raw`^progress: 0/2 rows, ${duration} elapsed$`);
    for (const l of lines) assert.ok(progressLine.test(l) || bringUpLine.test(l), `not a progress line: ${l}`);
    assert.ok(
      lines.some((l) => progressLine.test(l)),
      `no line names the row being measured:\n${r.stderr}`,
    );
    assert.doesNotMatch(r.stdout, /progress|rows \|/);
    assert.equal(parseRows(r.stdout).length, 2);
    for (const line of r.stdout.split('\n')) {
      const tableLine = line.startsWith('#') || /^\s+\d+\s+\d+\s+float\s+sum\s/.test(line);
      if (line !== '') assert.ok(tableLine, `not a table line: ${line}`);
    }
  });

  it('prints none with --quiet, nor in a short run', () => {
    const quiet = runProgram(
      'all_reduce_perf',
      ['-b', '2M', '-e', '4M', '-f', '2', '-n', '500', '--np', '2', '--quiet'],
      { env: { CI: undefined, ...fastLines }, timeoutMs: 300_000 },
    );
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stderr, '');
    const short = runProgram('all_reduce_perf', ['-b', '1M', '-e', '2M', '-f', '2', '-n', '5', '--np', '2'], {
      env: { CI: undefined },
    });
    assert.equal(short.code, 0, short.stderr);
    assert.equal(short.stderr, '');
  });
});
