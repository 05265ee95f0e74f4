// The bounded line reader shared by the rendezvous, the progress boards and the NCCL RAS client
// (bench/launch/bounded-lines.ts): lines split anywhere across chunks, UTF-8 cut mid-character, the bound exact.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BoundedLines } from '../../bench/launch/bounded-lines.js';

describe('BoundedLines', () => {
  it('gives the same lines whichever way the stream is cut, multi-byte characters included', () => {
    const text = Buffer.from('première ligne\n{"rank":1}\n\nend\nrest', 'utf8');
    for (let cut = 1; cut < text.length; cut++) {
      const r = new BoundedLines(64);
      const lines = [...r.push(text.subarray(0, cut))!, ...r.push(text.subarray(cut))!];
      assert.deepEqual(lines, ['première ligne', '{"rank":1}', '', 'end'], `cut at ${cut}`);
      assert.equal(r.takeRest().toString('utf8'), 'rest');
    }
  });

  it('a line of exactly the bound passes; one byte more ends the reading, with or without its newline', () => {
    assert.deepEqual(new BoundedLines(4).push(Buffer.from('abcd\n')), ['abcd']);
    assert.equal(new BoundedLines(4).push(Buffer.from('abcde\n')), null);
    const r = new BoundedLines(4);
    assert.deepEqual(r.push(Buffer.from('ab')), []);
    assert.deepEqual(r.push(Buffer.from('cd')), []);
    assert.equal(r.push(Buffer.from('e')), null);
    assert.equal(r.push(Buffer.from('\nok\n')), null, 'nothing more once over');
  });

  it('holds at most the bound however much comes without a newline', () => {
    const r = new BoundedLines(1024);
    const mib = Buffer.alloc(2 ** 20, 'x');
    assert.equal(r.push(mib), null);
    assert.equal(r.takeRest().length, 0);
  });
});
