// collbench compare's input side: the --env/--mca/--gloo-algo axes, their cartesian product with the
// default as baseline, the environment and arguments each combination's child gets, and the program
// after -- (parsed with the *_perf option parser, so bad input is refused before anything runs).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../bench/core/errors.js';
import { parseCompareArgs } from '../../bench/compare/command.js';
import { checkCombination, childWords, parseProgram } from '../../bench/compare/program.js';
import { childEnv, combinations, parseAxis, parseGlooAxis, splitValues } from '../../bench/compare/settings.js';

const usage =
  (re: RegExp) =>
  (e: unknown): boolean =>
    e instanceof UsageError && re.test(e.message) && !e.message.includes('\n');

describe('compare settings: values and axes', () => {
  it('splits values on commas, with \\, for a comma inside a value', () => {
    assert.deepEqual(splitValues('--env', 'X', 'Ring,Tree'), ['Ring', 'Tree']);
    assert.deepEqual(splitValues('--env', 'NCCL_ALGO', 'allreduce:tree\\,ring,Ring'), ['allreduce:tree,ring', 'Ring']);
    assert.deepEqual(splitValues('--env', 'X', 'a\\\\b'), ['a\\b']);
    assert.throws(() => splitValues('--env', 'X', 'a,,b'), usage(/^--env: X: empty value/));
    assert.throws(() => splitValues('--env', 'X', ''), usage(/empty value/));
    assert.throws(() => splitValues('--env', 'X', 'LL,LL'), usage(/value 'LL' given twice/));
  });

  it('parses NAME=values and refuses malformed specs with one line naming the flag', () => {
    assert.deepEqual(parseAxis('env', 'NCCL_PROTO=Simple,LL,LL128'), {
      kind: 'env',
      name: 'NCCL_PROTO',
      values: ['Simple', 'LL', 'LL128'],
    });
    assert.deepEqual(parseAxis('mca', 'coll_tuned_allreduce_algorithm=0,1'), {
      kind: 'mca',
      name: 'coll_tuned_allreduce_algorithm',
      values: ['0', '1'],
    });
    assert.throws(() => parseAxis('env', 'NCCL_ALGO'), usage(/^--env: expected NAME=value1,value2/));
    // NCCL_ALGO / NCCL_PROTO: names NCCL knows (any case), lists, ^ exclusions and per-collective lists pass; typos do not
    for (const ok of [
      'NCCL_ALGO=ring,TREE,nvls,pat',
      'NCCL_ALGO=^Ring',
      'NCCL_ALGO=allreduce:tree\\,ring;broadcast:ring',
      'NCCL_PROTO=^LL128,Simple',
    ]) {
      assert.doesNotThrow(() => parseAxis('env', ok), ok);
    }
    assert.throws(
      () => parseAxis('env', 'NCCL_ALGO=Rnig,Tree'),
      usage(/^--env: NCCL_ALGO: 'Rnig' in 'Rnig' is no algorithm NCCL knows; valid: Tree, Ring, /),
    );
    assert.throws(
      () => parseAxis('env', 'NCCL_PROTO=Simple,LL129'),
      usage(/^--env: NCCL_PROTO: 'LL129' in 'LL129' is no protocol NCCL knows; valid: LL, LL128, Simple/),
    );
    assert.doesNotThrow(() => parseAxis('env', 'NCCL_MIN_NCHANNELS=Rnig')); // other variables' values are NCCL's business
    assert.throws(() => parseAxis('env', '=Ring'), usage(/^--env: '' is not a valid environment variable name/));
    assert.throws(() => parseAxis('env', '1X=a'), usage(/not a valid environment variable name/));
    assert.throws(
      () => parseAxis('mca', 'coll-tuned=1'),
      usage(/^--mca: 'coll-tuned' is not a valid MCA parameter name/),
    );
    assert.throws(() => parseAxis('mca', 'OMPI_MCA_pml=ob1'), usage(/without OMPI_MCA_/));
    assert.deepEqual(parseGlooAxis('ring,bcube').values, ['ring', 'bcube']);
  });
});

describe('compare settings: combinations', () => {
  it('is the default plus the cartesian product, first axis slowest', () => {
    const c = combinations([parseAxis('env', 'NCCL_ALGO=Ring,Tree'), parseAxis('env', 'NCCL_PROTO=Simple,LL,LL128')]);
    assert.equal(c.length, 1 + 2 * 3);
    assert.deepEqual(
      c.map((x) => x.id),
      ['C0', 'C1', 'C2', 'C3', 'C4', 'C5', 'C6'],
    );
    assert.equal(c[0]!.baseline, true);
    assert.deepEqual(c[0]!.env, {});
    assert.deepEqual(c[0]!.unset, ['NCCL_ALGO', 'NCCL_PROTO']);
    assert.deepEqual(
      c.slice(1).map((x) => x.label),
      [
        'NCCL_ALGO=Ring NCCL_PROTO=Simple',
        'NCCL_ALGO=Ring NCCL_PROTO=LL',
        'NCCL_ALGO=Ring NCCL_PROTO=LL128',
        'NCCL_ALGO=Tree NCCL_PROTO=Simple',
        'NCCL_ALGO=Tree NCCL_PROTO=LL',
        'NCCL_ALGO=Tree NCCL_PROTO=LL128',
      ],
    );
    assert.deepEqual(c[5]!.env, { NCCL_ALGO: 'Tree', NCCL_PROTO: 'LL' });
    assert.ok(c.every((x) => !x.baseline || x === c[0]));
  });

  it('passes MCA parameters as OMPI_MCA_ variables, with dynamic rules for coll_tuned_*', () => {
    const c = combinations([
      parseAxis('mca', 'coll_tuned_allreduce_algorithm=1,4'),
      parseAxis('mca', 'btl_vader_eager_limit=4096'),
    ]);
    assert.equal(c.length, 3);
    assert.deepEqual(c[1]!.env, {
      OMPI_MCA_coll_tuned_allreduce_algorithm: '1',
      OMPI_MCA_coll_tuned_use_dynamic_rules: '1',
      OMPI_MCA_btl_vader_eager_limit: '4096',
    });
    assert.deepEqual(c[0]!.unset, [
      'OMPI_MCA_btl_vader_eager_limit',
      'OMPI_MCA_coll_tuned_allreduce_algorithm',
      'OMPI_MCA_coll_tuned_use_dynamic_rules',
    ]);
    // an explicit dynamic-rules axis is the user's to set
    const e = combinations([
      parseAxis('mca', 'coll_tuned_allreduce_algorithm=4'),
      parseAxis('mca', 'coll_tuned_use_dynamic_rules=0,1'),
    ]);
    assert.deepEqual(
      e.slice(1).map((x) => x.env.OMPI_MCA_coll_tuned_use_dynamic_rules),
      ['0', '1'],
    );
  });

  it('turns --gloo-algo values into program arguments', () => {
    const c = combinations([parseGlooAxis('ring,bcube')]);
    assert.deepEqual(
      c.map((x) => x.args),
      [[], ['--gloo-algo', 'ring'], ['--gloo-algo', 'bcube']],
    );
    assert.deepEqual(
      c.map((x) => x.label),
      ['default', 'gloo-algo=ring', 'gloo-algo=bcube'],
    );
  });

  it('refuses no settings, a repeated axis and an axis twice through --env and --mca', () => {
    assert.throws(() => combinations([]), usage(/^compare: no settings to compare/));
    assert.throws(
      () => combinations([parseAxis('env', 'A=1'), parseAxis('env', 'A=2')]),
      usage(/^--env: --env A repeats --env A/),
    );
    assert.throws(
      () => combinations([parseAxis('mca', 'pml=ob1'), parseAxis('env', 'OMPI_MCA_pml=ucx')]),
      usage(/repeats --mca pml/),
    );
  });

  it('gives the baseline a clean environment and each combination its own', () => {
    const [base, c1] = combinations([parseAxis('env', 'NCCL_ALGO=Ring')]);
    const inherited = { PATH: '/bin', NCCL_ALGO: 'Tree', NCCL_PROTO: 'LL' };
    assert.deepEqual(childEnv(inherited, base!), { PATH: '/bin', NCCL_PROTO: 'LL' });
    assert.deepEqual(childEnv(inherited, c1!), { PATH: '/bin', NCCL_ALGO: 'Ring', NCCL_PROTO: 'LL' });
    assert.deepEqual(childEnv(inherited, base!, { NCCL_DEBUG: 'INFO' }).NCCL_DEBUG, 'INFO');
  });
});

describe('compare: the program after --', () => {
  it("accepts the *_perf names and collbench <collective>, parsed by the program's own option parser", () => {
    const p = parseProgram(['all_reduce_perf', '-b', '1K', '-e', '16M', '-f', '4', '--np', '4', '--oversubscribe']);
    assert.equal(p.collective, 'all_reduce');
    assert.deepEqual(p.args, ['all_reduce', '-b', '1K', '-e', '16M', '-f', '4', '--np', '4', '--oversubscribe']);
    assert.equal(p.options?.np, 4);
    // more ranks than cores without --oversubscribe: refused once, before any run
    assert.throws(
      () => parseProgram(['all_reduce_perf', '--np', '100000']),
      /--np 100000: this host has \d+ cores?; add --oversubscribe/,
    );
    const q = parseProgram(['/usr/local/bin/collbench', 'run', 'all_gather', '-b', '8']);
    assert.equal(q.collective, 'all_gather');
    assert.deepEqual(q.args, ['run', 'all_gather', '-b', '8']);
    assert.equal(parseProgram(['./bin/broadcast_perf']).collective, 'broadcast');
  });

  it('refuses an unknown command, bad flags, -J and -N 0 with one line', () => {
    assert.throws(() => parseProgram([]), usage(/^compare: no program after --/));
    assert.throws(() => parseProgram(['ls', '-la']), usage(/^compare: unknown program 'ls' after --/));
    assert.throws(() => parseProgram(['allreduce_perf']), usage(/unknown program 'allreduce_perf'/));
    assert.throws(() => parseProgram(['all_reduce_perf', '-b']), usage(/^compare: all_reduce_perf: -b: missing value/));
    assert.throws(() => parseProgram(['collbench', 'nonsense']), usage(/^compare: collbench: unknown collective/));
    assert.throws(
      () => parseProgram(['all_reduce_perf', '-J', 'x.json']),
      usage(/^-J: compare writes each run's report itself/),
    );
    assert.throws(() => parseProgram(['all_reduce_perf', '--csv', 'x.csv']), usage(/^--csv: compare writes/));
    assert.throws(() => parseProgram(['all_reduce_perf', '-N', '0']), usage(/^-N: compare needs runs that end/));
    assert.throws(() => parseProgram(['all_reduce_perf', '-h']), usage(/ask for --help/));
  });

  it("checks every combination's arguments (a Gloo algorithm needs --backend gloo)", () => {
    const [, ring] = combinations([parseGlooAxis('ring')]);
    assert.throws(
      () => checkCombination(parseProgram(['all_reduce_perf']), ring!),
      usage(/--gloo-algo: needs --backend gloo \(in combination C1: gloo-algo=ring\)/),
    );
    assert.equal(checkCombination(parseProgram(['all_reduce_perf', '--backend', 'gloo']), ring!)?.glooAlgo, 'ring');
    const [, bad] = combinations([parseGlooAxis('zigzag')]);
    assert.throws(
      () => checkCombination(parseProgram(['all_reduce_perf', '--backend', 'gloo']), bad!),
      usage(/unknown Gloo all_reduce algorithm/),
    );
  });

  it("builds the child's words after the script: the collective, program args, the combination's, -J", () => {
    const p = parseProgram(['all_reduce_perf', '-b', '8']);
    const [, c1] = combinations([parseGlooAxis('ring')]);
    assert.deepEqual(childWords(p, c1!, '/tmp/r.json'), [
      'all_reduce',
      '-b',
      '8',
      '--gloo-algo',
      'ring',
      '--force',
      '-J',
      '/tmp/r.json',
    ]);
  });
});

describe('compare: its own flags', () => {
  it('keeps the axes in command-line order and reads the options', () => {
    const o = parseCompareArgs([
      '--mca',
      'pml=ob1',
      '--env',
      'A=1,2',
      '--gloo-algo=ring',
      '--runs',
      '3',
      '--timeout',
      '0',
      '--placement',
      'in-place',
      '--json',
      'x.json',
      '--tuner-csv',
      't.conf',
      '--quiet',
    ]);
    assert.notEqual(o, 'help');
    if (o === 'help') return;
    assert.deepEqual(
      o.axes.map((a) => `${a.kind}:${a.name}`),
      ['mca:pml', 'env:A', 'gloo-algo:gloo-algo'],
    );
    assert.equal(o.runs, 3);
    assert.equal(o.timeoutSec, 0);
    assert.equal(o.placement, 'in-place');
    assert.deepEqual(
      o.outputs.map((x) => x.flag),
      ['--json', '--tuner-csv'],
    );
    assert.equal(o.quiet, true);
    assert.equal(parseCompareArgs(['-h']), 'help');
  });

  it('refuses bad values and unknown flags with one line', () => {
    assert.throws(
      () => parseCompareArgs(['--runs', '0']),
      usage(/^compare: --runs: repeat count must be an integer between 1 and 1000, got 0$/),
    );
    assert.throws(() => parseCompareArgs(['--runs', 'two']), usage(/^compare: --runs:/));
    assert.throws(() => parseCompareArgs(['--timeout', '-1']), usage(/^compare: .*--timeout|^--timeout:/));
    assert.throws(
      () => parseCompareArgs(['--placement', 'both']),
      usage(/^compare: --placement: unknown placement both; valid: out-of-place, in-place$/),
    );
    assert.throws(() => parseCompareArgs(['--bogus']), usage(/^compare: unknown option '--bogus'/));
    assert.throws(() => parseCompareArgs(['stray']), usage(/^compare: .*stray/));
  });
});
