// The NCCL TUNING log parser of collbench compare, against the (synthetic, labelled) excerpts in
// test/fixtures/nccl-logs/, which follow NCCL's format strings of 2.20–2.22, 2.23 and 2.24+ (see the README
// there): per-call algorithm/protocol, the row each call belongs to, and what the table cell shows.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { choiceCell, choicesAt, loggedBytes, parseNcclTuningLog } from '../../bench/compare/tuning-log.js';
import { repoRoot } from '../helpers/cli.js';

const fixture = (name: string): string => readFileSync(join(repoRoot, 'test/fixtures/nccl-logs', name), 'utf8');

describe('NCCL TUNING log parser', () => {
  it('reads the 2.24+ per-call lines (names, channel range) and nothing else of the log', () => {
    const text = fixture('v2.30-allreduce-g8.log');
    assert.match(text, /^# SYNTHETIC/); // the fixture says what it is
    const ev = parseNcclTuningLog(text);
    assert.equal(ev.length, 5 * 3 + 2); // 3 calls per size, one control-plane call, one timestamped line
    assert.deepEqual(ev[0], {
      pid: 4242,
      lineNo: 10,
      func: 'AllReduce',
      bytes: 1024,
      algo: 'RING',
      proto: 'LL',
      detail: 'channels 0..0',
      format: 'v2.24',
    });
    assert.ok(ev.every((e) => e.func === 'AllReduce'));
    const ts = ev[ev.length - 1]!;
    assert.equal(ts.bytes, 1024);
    assert.equal(ts.pid, 4242); // the timestamp prefix is skipped, the pid still read
  });

  it('maps each row to the calls NCCL logged for it; a minority of other calls does not hide the choice', () => {
    const ev = parseNcclTuningLog(fixture('v2.30-allreduce-g8.log'));
    assert.deepEqual(choicesAt(ev, 'all_reduce', 1024, 8), [{ label: 'RING/LL', calls: 4 }]);
    assert.deepEqual(choicesAt(ev, 'all_reduce', 16384, 8), [
      { label: 'RING/LL', calls: 3 },
      { label: 'TREE/LL', calls: 1 },
    ]);
    assert.equal(choiceCell(choicesAt(ev, 'all_reduce', 16384, 8)), 'RING/LL+TREE/LL'); // 25 % of the calls: shown
    assert.equal(choiceCell(choicesAt(ev, 'all_reduce', 262144, 8)), 'RING/LL128');
    assert.equal(choiceCell(choicesAt(ev, 'all_reduce', 16777216, 8)), 'NVLS/SIMPLE');
    assert.deepEqual(choicesAt(ev, 'all_reduce', 2048, 8), []); // a size it never logged
    assert.deepEqual(choicesAt(ev, 'broadcast', 1024, 8), []); // another function
    assert.deepEqual(choicesAt(ev, 'sendrecv', 1024, 8), []); // not tuned by NCCL's algorithm selection
    assert.equal(
      choiceCell([
        { label: 'A', calls: 95 },
        { label: 'B', calls: 5 },
      ]),
      'A',
    ); // below 10 %: not shown
  });

  it('reads the 2.23 numeric form with NCCL_ALGO_*/NCCL_PROTO_* numbers (PAT = 6) and total bytes', () => {
    const ev = parseNcclTuningLog(fixture('v2.23-allgather-numeric.log'));
    assert.equal(ev.length, 6);
    assert.deepEqual(
      ev.map((e) => `${e.func} ${e.bytes} ${e.algo}/${e.proto} ${e.format}`),
      [
        'AllGather 4096 RING/LL v2.23',
        'AllGather 4096 RING/LL v2.23',
        'AllGather 65536 PAT/LL v2.23',
        'AllGather 65536 PAT/LL v2.23',
        'AllGather 1048576 RING/SIMPLE v2.23',
        'AllGather 1048576 RING/SIMPLE v2.23',
      ],
    );
    // 2.23 logs the total bytes, which is nccl-tests' all_gather size
    assert.equal(choiceCell(choicesAt(ev, 'all_gather', 65536, 4)), 'PAT/LL');
  });

  it('reads the 2.20–2.22 form, which names no function', () => {
    const ev = parseNcclTuningLog(fixture('v2.21-nofunc.log'));
    assert.deepEqual(
      ev.map((e) => [e.func, e.bytes, e.algo, e.proto]),
      [
        [null, 8, 'TREE', 'LL'],
        [null, 8, 'TREE', 'LL'],
        [null, 1048576, 'RING', 'LL128'],
        [null, 134217728, 'RING', 'SIMPLE'],
      ],
    );
    assert.equal(choiceCell(choicesAt(ev, 'all_reduce', 8, 16)), 'TREE/LL');
  });

  it('reads symmetric-kernel and copy-engine lines and ignores tuner-plugin chatter', () => {
    const ev = parseNcclTuningLog(fixture('v2.30-symmetric-ce.log'));
    assert.deepEqual(
      ev.map((e) => [e.func, e.bytes, e.algo, e.format]),
      [
        ['AllReduce', 4096, 'SYMMETRIC', 'symmetric'],
        ['AllReduce', 4096, 'SYMMETRIC', 'symmetric'],
        ['AllGather', 1048576, 'CE', 'copy-engine'],
        ['AllGather', 2097152, 'CE', 'copy-engine'],
      ],
    );
    assert.equal(choiceCell(choicesAt(ev, 'all_reduce', 4096, 8)), 'SYMMETRIC(AllReduce_AGxLL_R)');
    // 2.24+ AllGather lines log the per-rank bytes: nccl-tests' 8 MiB row with 8 ranks is NCCL's 1 MiB
    assert.equal(choiceCell(choicesAt(ev, 'all_gather', 8 * 1048576, 8)), 'CE');
  });

  it('knows which bytes NCCL logs for a row', () => {
    assert.equal(loggedBytes('all_reduce', 4096, 8, 'v2.24'), 4096);
    assert.equal(loggedBytes('all_gather', 4096, 8, 'v2.24'), 512);
    assert.equal(loggedBytes('reduce_scatter', 4096, 4, 'v2.24'), 1024);
    assert.equal(loggedBytes('all_gather', 4096, 8, 'v2.23'), 4096);
    assert.equal(loggedBytes('all_gather', 4096, 8, 'v2.20'), 4096);
  });

  it("finds nothing in a CPU run's output (the probe is a no-op there)", () => {
    const cpu = readFileSync(join(repoRoot, 'test/fixtures/golden', 'allreduce-cpu.txt'), 'utf8');
    assert.deepEqual(parseNcclTuningLog(cpu), []);
  });
});
