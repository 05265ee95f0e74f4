// What passes from mpirun's stderr to the user's terminal while rank 0 draws its progress bar (#36.4): a redraw (a
// carriage return or escapes, no newline) at once, not held until the next newline; Open MPI's banners still as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MpirunNotices } from '../../bench/launch/mpirun-notices.js';

describe('mpirun stderr with a progress bar in it', () => {
  it('passes a redraw at once and keeps lines whole', () => {
    const passed: string[] = [];
    const n = new MpirunNotices((t) => passed.push(t));
    n.push('# a rank line\n\u001b[?7l\u001b[1G 1/4 rows | all_reduce float 1MB');
    assert.deepEqual(passed, ['# a rank line\n', '\u001b[?7l\u001b[1G 1/4 rows | all_reduce float 1MB']);
    n.push('\u001b[1G\u001b[2K');
    assert.equal(passed.at(-1), '\u001b[1G\u001b[2K');
    n.push('half a li');
    n.push('ne\n');
    assert.equal(passed.at(-1), 'half a line\n');
  });

  it('still holds back a banner collbench explains, a redraw after it included', () => {
    const passed: string[] = [];
    const n = new MpirunNotices((t) => passed.push(t));
    const rule = '-'.repeat(74);
    n.push(`${rule}\nmpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n${rule}\n`);
    n.push('\r\u001b[K');
    n.end();
    assert.equal(n.held, true);
    assert.deepEqual(passed, ['\r\u001b[K']);
  });
});
