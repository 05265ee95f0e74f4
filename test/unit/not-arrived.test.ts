// Naming who did not arrive when a wait expired (bench/launch/not-arrived.ts), and the progress board's start-up entries
// and answers over real loopback sockets (bench/launch/progress-board.ts). The end-to-end proof with a stopped rank is
// test/cli/hung-rank.test.ts.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { notArrivedLine, type Answer, type Position } from '../../bench/launch/not-arrived.js';
import {
  ask,
  boardBindAddress,
  decodeEntries,
  encodeEntry,
  ENTRY_DOUBLES,
  ipv4ToNumber,
  numberToIpv4,
  ProgressBoard,
  survey,
} from '../../bench/launch/progress-board.js';

const at = (rank: number, iteration: number, label = 'all_reduce float 524288 B out-of-place'): Position => ({
  rank,
  host: `h${rank}`,
  at: label,
  iteration,
});
const answered = (p: Position): Answer => ({ rank: p.rank, state: 'answered', position: p });
const hostOf = (r: number) => `h${r}`;

describe('notArrivedLine', () => {
  it('names a stopped rank, and the neighbours held up by it after it', () => {
    const line = notArrivedLine(
      at(0, 17),
      [answered(at(1, 17)), { rank: 2, state: 'silent' }, answered(at(3, 16))],
      hostOf,
    );
    assert.equal(
      line,
      'timeout: rank 2 (host h2) did not arrive at all_reduce float 524288 B out-of-place, iteration 17: ' +
        'rank 2 does not answer (stopped, or hung outside collbench); waiting on it: rank 3 is still in all_reduce float ' +
        '524288 B out-of-place, iteration 16',
    );
  });

  it('names ended processes, several hosts', () => {
    const line = notArrivedLine(
      at(1, 3),
      [{ rank: 0, state: 'gone' }, { rank: 4, state: 'gone' }, answered(at(2, 3))],
      hostOf,
    );
    assert.match(
      line,
      /^timeout: ranks 0, 4 \(hosts h0, h4\) did not arrive at .*, iteration 3: rank 0 is gone \(its process ended\); rank 4 is gone/,
    );
  });

  it('says where in the loop: before the first timed iteration, after the last', () => {
    const first = notArrivedLine({ ...at(0, -1), iterations: 20 }, [{ rank: 1, state: 'silent' }], hostOf);
    assert.match(first, /out-of-place, before its first timed iteration: rank 1 does not answer/);
    const last = notArrivedLine({ ...at(0, 20), iterations: 20 }, [{ rank: 1, state: 'silent' }], hostOf);
    assert.match(last, /out-of-place, after its last timed iteration: rank 1/);
  });

  it('names ranks in another wait when nobody is silent, and says so when everybody arrived', () => {
    assert.match(
      notArrivedLine(
        at(0, 5),
        [answered({ ...at(1, 0, 'the barrier before all_reduce float sum root -1'), iteration: null })],
        hostOf,
      ),
      /^timeout: rank 1 \(host h1\) did not arrive at .*iteration 5: rank 1 is still in the barrier before all_reduce float sum root -1$/,
    );
    assert.match(notArrivedLine(at(0, 5), [answered(at(1, 5))], hostOf), /every rank reached .*none is missing/);
  });
});

describe('progress boards', () => {
  it('listen on loopback when every rank is on this host, else on a host address, or where COLLBENCH_BOARD_ADDR says', () => {
    assert.equal(boardBindAddress({ OMPI_COMM_WORLD_LOCAL_SIZE: '4', OMPI_COMM_WORLD_SIZE: '4' }), '127.0.0.1');
    assert.equal(boardBindAddress({ LOCAL_WORLD_SIZE: '2', WORLD_SIZE: '2' }), '127.0.0.1');
    assert.equal(
      boardBindAddress({
        COLLBENCH_BOARD_ADDR: '10.1.2.3',
        OMPI_COMM_WORLD_LOCAL_SIZE: '4',
        OMPI_COMM_WORLD_SIZE: '4',
      }),
      '10.1.2.3',
    );
    const across = boardBindAddress({ OMPI_COMM_WORLD_LOCAL_SIZE: '1', OMPI_COMM_WORLD_SIZE: '4' });
    assert.match(across, /^\d+\.\d+\.\d+\.\d+$/);
  });

  it('carry address and host through the numeric start-up exchange (an allreduce sum)', () => {
    const entries = [
      { ipv4: ipv4ToNumber('10.250.7.3'), port: 40001, host: 'node-a' },
      { ipv4: ipv4ToNumber('127.0.0.1'), port: 65535, host: 'n'.repeat(80) },
    ];
    const sum = entries.map((e, r) => encodeEntry(r, 2, e)).reduce((a, b) => a.map((x, i) => x + b[i]!));
    assert.equal(sum.length, 2 * ENTRY_DOUBLES);
    const back = decodeEntries(sum);
    assert.deepEqual(back[0], entries[0]);
    assert.equal(back[1]!.host, 'n'.repeat(60), 'host names are cut at 60 bytes');
    assert.equal(numberToIpv4(back[0]!.ipv4), '10.250.7.3');
  });

  it('answer with the token only; silent and gone peers are told apart', async () => {
    let iteration = 7;
    const board = new ProgressBoard(1, 'hb', 'tok', () => iteration);
    const addr = await board.listen('127.0.0.1');
    board.enter('warm-up of all_reduce float sum root -1 1024 B', 20);
    const a = await ask(1, addr, 'tok', 1000);
    assert.deepEqual(a, {
      rank: 1,
      state: 'answered',
      position: {
        rank: 1,
        host: 'hb',
        at: 'warm-up of all_reduce float sum root -1 1024 B',
        iteration: 7,
        iterations: 20,
      },
    });
    assert.notEqual(
      (await ask(1, addr, 'wrong', 1000)).state,
      'answered',
      'a wrong token gets the connection closed, nothing else',
    );
    board.enter('the barrier before x', null);
    iteration = 9;
    const b = await ask(1, addr, 'tok', 1000);
    assert.equal(b.state === 'answered' && b.position.iteration, null, 'no iteration outside a native loop');
    // A listener that accepts but never answers (a stopped process's socket), and a closed port.
    const mute = createServer(() => {}).listen(0, '127.0.0.1');
    await new Promise((r) => mute.once('listening', r));
    const mutePort = (mute.address() as { port: number }).port;
    board.close();
    const t0 = Date.now();
    const all = await survey(
      [{ ipv4: ipv4ToNumber('127.0.0.1'), port: mutePort }, addr, { ipv4: 0, port: 0 }],
      2,
      'tok',
      300,
    );
    assert.deepEqual(
      all.map((x) => x.state),
      ['silent', 'gone'],
    );
    assert.ok(Date.now() - t0 < 2000);
    mute.close();
  });
});
