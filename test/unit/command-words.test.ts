// The front end's first word (bench/cli/main.ts, one table of the commands): `collbench` and `collbench help` list
// the commands, a mistyped command or collective is one line naming the nearest (exit 2), nothing is run (#36, item 5).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMAND_WORDS, main, unknownWordLine } from '../../bench/cli/main.js';

const capture = async (argv: string[]): Promise<{ code: number; out: string; err: string }> => {
  let out = '',
    err = '';
  const code = await main(argv, 'collbench', {
    out: (l) => {
      out += `${l}\n`;
    },
    err: (l) => {
      err += `${l}\n`;
    },
  });
  return { code, out, err };
};

describe('collbench <word>', () => {
  it('`collbench` alone and `collbench help` list every command, each of which answers --help', async () => {
    const bare = await capture([]);
    assert.equal(bare.code, 0);
    const help = await capture(['help']);
    assert.equal(help.code, 0);
    assert.match(help.out, /^USAGE: collbench \[run\] <collective> \[options\]$/m); // the run's flags follow
    for (const c of COMMAND_WORDS) {
      for (const text of [bare.out, help.out]) assert.match(text, new RegExp(`^  ${c} +\\S`, 'm'), c);
      if (c !== 'run' && c !== 'help') assert.equal((await capture([c, '--help'])).code, 0, c);
    }
  });

  it('a mistyped command or collective: one line naming the nearest, exit 2', async () => {
    const r = await capture(['compar', '--env', 'NCCL_ALGO=Ring']);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    assert.match(
      r.err,
      /^collbench: unknown command or collective 'compar' \(did you mean compare\?\); commands: run, .*compare.*; collectives: all_reduce, /,
    );
    assert.equal(r.err.split('\n').length, 2);
    assert.match((await capture(['allreduce'])).err, /\(did you mean all_reduce\?\)/);
    assert.match((await capture(['acept'])).err, /\(did you mean accept\?\)/);
  });

  it('no suggestion when nothing is near; commands, collectives, *_perf names and flags are not refused', () => {
    assert.match(unknownWordLine('xyz')!, /^unknown command or collective 'xyz'; commands: /);
    for (const ok of ['compare', 'run', 'all_reduce', 'all_reduce_perf', '-b', undefined])
      assert.equal(unknownWordLine(ok), null, ok);
  });
});
