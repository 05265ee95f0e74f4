// Tests for bench/cli/options.ts and bench/config/resolve.ts: getopt-style parsing of nccl-tests'
// flags, their defaults, program-name → collective mapping, --help, and every validation rule,
// including the sharp edges of nccl-tests (docs/nccl-tests-contract.md, "Flags" and "Deliberate differences") that we refuse.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COLLECTIVES, DTYPES, OPS } from '../../bench/core/types.js';
import { ACTIONS, FLAGS, type ResolvedOptions } from '../../bench/config/flags.js';
import { EXIT, UsageError } from '../../bench/core/errors.js';
import { DEFAULTS, FIELD_NAMES, MAX_SWEEP_SIZES, parseInteger, resolveOptions } from '../../bench/config/resolve.js';
import { MIB, sweepSizes } from '../../bench/config/sizes.js';
import { collectiveFromProgram, parseCommandLine } from '../../bench/config/run-options.js';

function run(args: string[], program = 'all_reduce_perf'): ResolvedOptions {
  const parsed = parseCommandLine(args, program);
  assert.equal(parsed.kind, 'run', `expected a run for ${args.join(' ')}`);
  return (parsed as { kind: 'run'; options: ResolvedOptions }).options;
}

/** Asserts a UsageError (exit 2) whose message matches `re` (which should name the flag). */
function usage(args: string[], re: RegExp, program = 'all_reduce_perf'): void {
  assert.throws(
    () => parseCommandLine(args, program),
    (err: unknown) => {
      assert.ok(err instanceof UsageError, `${args.join(' ')}: not a UsageError: ${String(err)}`);
      assert.equal(err.exitCode, EXIT.USAGE);
      assert.match(err.message, re, args.join(' '));
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    },
    args.join(' '),
  );
}

test('EXIT codes are the documented ones', () => {
  assert.deepEqual(
    { ...EXIT },
    { OK: 0, INTERNAL: 1, USAGE: 2, BACKEND: 3, TIMEOUT: 4, ENVIRONMENT: 5, INCONCLUSIVE: 6, WRONG_RESULTS: 7 },
  );
});

test('defaults equal nccl-tests', () => {
  const o = run([]);
  assert.equal(o.collective, 'all_reduce');
  assert.equal(o.program, 'all_reduce_perf');
  assert.equal(o.nThreads, 1);
  assert.equal(o.nGpus, 1);
  assert.equal(o.minBytes, 33554432);
  assert.equal(o.maxBytes, 33554432);
  assert.equal(o.stepBytes, 1048576);
  assert.equal(o.stepFactor, 1);
  assert.equal(o.iters, 20);
  assert.equal(o.aggIters, 1);
  assert.equal(o.warmupIters, 1);
  assert.equal(o.runCycles, 1);
  assert.equal(o.parallelInit, 0);
  assert.equal(o.check, 1);
  assert.deepEqual(o.ops, ['sum']);
  assert.deepEqual(o.dtypes, ['float']);
  assert.equal(o.root, 0);
  assert.equal(o.blocking, 0);
  assert.equal(o.streamNull, 0);
  assert.equal(o.timeoutSec, null); // not given: the default watchdog
  assert.equal(o.cudaGraph, 0);
  assert.equal(o.reportCpuTime, false);
  assert.equal(o.reportTimestamps, false);
  assert.equal(o.jsonFile, null);
  assert.equal(o.average, 1);
  assert.equal(o.localRegister, 0);
  assert.equal(o.ctaPolicy, -1);
  assert.equal(o.deviceImpl, 0);
  assert.equal(o.deviceCtaCount, 16);
  assert.equal(o.memoryReport, false);
  assert.equal(o.unalign, 0);
  assert.equal(o.perIterTiming, false);
  assert.equal(o.perIterSkip, 0);
  assert.equal(o.np, null);
  assert.equal(o.hosts, null);
  assert.equal(o.backend, null);
  assert.equal(o.quiet, false);
  assert.deepEqual(sweepSizes(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes), [32 * MIB]);
});

test('resolved options are frozen, lists included', () => {
  const o = run(['-o', 'all']);
  assert.ok(Object.isFrozen(o));
  assert.ok(Object.isFrozen(o.ops));
  assert.ok(Object.isFrozen(o.dtypes));
  assert.throws(() => {
    (o as { iters: number }).iters = 5;
  }, TypeError);
  assert.throws(() => {
    o.ops.push('sum');
  }, TypeError);
  assert.ok(Object.isFrozen(DEFAULTS) && Object.isFrozen(DEFAULTS.ops));
});

test('getopt forms: -b 8, -b8, --minbytes=8, --minbytes 8, unambiguous prefix --min 8', () => {
  for (const args of [['-b', '8'], ['-b8'], ['--minbytes=8'], ['--minbytes', '8'], ['--min', '8'], ['--minb=8']]) {
    assert.equal(run([...args, '-e', '64']).minBytes, 8, args.join(' '));
  }
  assert.equal(run(['--maxbytes=1G']).maxBytes, 1024 * MIB);
  assert.equal(run(['--iters', '5', '--agg_iters=3', '--warmup_iters', '0']).iters, 5);
  assert.equal(run(['--agg_iters=3']).aggIters, 3);
  assert.equal(run(['--warmup_iters', '0']).warmupIters, 0);
});

test('a value is the next word even when it starts with a dash: -r -1, --root -1', () => {
  for (const args of [['-r', '-1'], ['-r-1'], ['--root=-1'], ['--root', '-1']]) {
    assert.equal(run(args).root, -1, args.join(' '));
  }
  assert.equal(run(['-J', '-odd.json']).jsonFile, '-odd.json');
});

test('a letter with a value takes the rest of the word: -dfloat, -Jout.json, -oall', () => {
  assert.deepEqual(run(['-dhalf']).dtypes, ['half']);
  assert.equal(run(['-Jout.json']).jsonFile, 'out.json');
  assert.deepEqual(run(['-oall']).ops, [...OPS]);
});

test('the last occurrence of a flag wins, as with getopt', () => {
  assert.equal(run(['-n', '5', '-n', '7']).iters, 7);
  assert.deepEqual(run(['-d', 'int8', '--datatype', 'double']).dtypes, ['double']);
});

test('long options and -- behave like getopt_long', () => {
  usage(['--n', '4'], /^ambiguous option '--n': could be --nthreads, --ngpus, --np, --nccl-lib$/);
  usage(['--help=1'], /^--help: takes no value$/);
  usage(['--quiet=yes'], /^--quiet: takes no value$/);
  assert.equal(run(['--quiet']).quiet, true);
  assert.equal(run(['--q']).quiet, true); // prefix
  usage(['--', '-b', '8'], /^unexpected argument '-b'/); // after --, words are positionals
  assert.equal(parseCommandLine(['-b', '8', '-e', '16', '--', 'all_gather'], 'collbench').kind, 'run');
});

test('unknown options are refused (nccl-tests prints usage and exits 0)', () => {
  usage(['--foo'], /^unknown option '--foo'/);
  usage(['--foo=3'], /^unknown option '--foo'/);
  usage(['-q'], /^unknown option '-q'/);
  usage(['-b8', '-Z', '1'], /^unknown option '-Z'/);
});

test('a flag without its value is refused, naming the flag', () => {
  usage(['-b'], /^-b: missing value/);
  usage(['-n', '5', '--iters'], /^--iters: missing value/);
});

test('numeric flags read what strtol(…, 0) reads and refuse the rest', () => {
  assert.equal(run(['-n', '0x10']).iters, 16);
  assert.equal(run(['-n', '010']).iters, 8); // leading 0 = octal, as in nccl-tests
  assert.equal(run(['-n', ' 12']).iters, 12);
  assert.equal(run(['-n', '+3']).iters, 3);
  usage(['-n', 'abc'], /^-n: iteration count must be an integer ≥ 1, got abc$/);
  usage(['-n', '20x'], /^-n: .*got 20x$/);
  usage(['-n', '1.5'], /^-n: .*got 1\.5$/);
  usage(['-n', ''], /^-n: .*got ''$/);
  usage(['-n', '08'], /^-n: .*\(a leading 0 means octal\)$/);
  usage(['-w', '2147483648'], /^-w: /); // past C int
});

test('parseInteger mirrors strtol base 0, strictly', () => {
  assert.equal(parseInteger('0'), 0);
  assert.equal(parseInteger('-1'), -1);
  assert.equal(parseInteger('0x1F'), 31);
  assert.equal(parseInteger('-0x10'), -16);
  assert.equal(parseInteger('017'), 15);
  assert.equal(parseInteger('00'), 0);
  assert.ok(Object.is(parseInteger('-0'), 0));
  for (const bad of ['', '-', '0x', '08', '1e3', '1.0', 'all', '0b1', '1 2', '99999999999999999999']) {
    assert.equal(parseInteger(bad), undefined, bad);
  }
});

test('program name → collective', () => {
  for (const c of COLLECTIVES) {
    const o = run([], `${c}_perf`);
    assert.equal(o.collective, c);
    assert.equal(o.program, `${c}_perf`);
    assert.equal(collectiveFromProgram(`${c}_perf`), c);
  }
  assert.equal(run([], '/opt/nccl-tests/build/all_gather_perf').program, 'all_gather_perf');
  assert.equal(run([], 'all_reduce_perf_mpi').collective, 'all_reduce'); // NAME_SUFFIX builds
  assert.equal(run([], 'all_reduce_perf_mpi').program, 'all_reduce_perf_mpi');
  assert.equal(collectiveFromProgram('collbench'), null);
  assert.equal(collectiveFromProgram('/usr/lib/node_modules/collbench/dist/bin/collbench.js'), null);
  usage([], /^unknown collective binary 'foo_perf'; valid: all_reduce_perf, .*hypercube_perf$/, 'foo_perf');
});

test('collbench front end: collective as first word, or after run', () => {
  const a = run(['all_reduce', '-b', '8', '-e', '16'], 'collbench');
  assert.equal(a.collective, 'all_reduce');
  assert.equal(a.program, 'all_reduce_perf');
  assert.equal(a.minBytes, 8);
  assert.equal(run(['run', 'broadcast'], 'collbench').collective, 'broadcast');
  assert.equal(run(['reduce_scatter_perf'], 'collbench').collective, 'reduce_scatter');
  assert.equal(run(['-b', '8', '-e', '16', 'gather'], 'collbench.js').collective, 'gather'); // options first
  usage([], /^missing collective: collbench \[run\] <collective>.*valid: all_reduce, /, 'collbench');
  usage(['run'], /^missing collective/, 'collbench');
  usage(['allreduce'], /^unknown collective 'allreduce'; valid: all_reduce, all_gather, .*hypercube$/, 'collbench');
  usage(['all_reduce', 'extra'], /^unexpected argument 'extra'/, 'collbench');
  usage(['extra'], /^unexpected argument 'extra'/, 'all_reduce_perf');
});

test('--help and -h print grouped help with every flag and its default; --version', () => {
  for (const args of [['-h'], ['--help'], ['--he'], ['-n', 'abc', '-h'], ['-h', '--foo']]) {
    const parsed = parseCommandLine(args, 'all_reduce_perf');
    assert.equal(parsed.kind, 'help', args.join(' '));
  }
  const parsed = parseCommandLine(['-h'], 'all_reduce_perf');
  assert.ok(parsed.kind === 'help');
  const text = parsed.text;
  assert.match(text, /^USAGE: all_reduce_perf \[options\]/);
  for (const f of [...FLAGS, ...ACTIONS]) {
    const head = `${f.short ? `-${f.short}, ` : '    '}--${f.long}`;
    assert.ok(text.includes(head), `help lacks ${head}`);
  }
  for (const d of [
    'first size of the sweep (default: 32M)',
    '(default: 1M)',
    'timed iterations per row (default: 20)',
    'reduction op, or all (default: sum)',
    'or all (default: float)',
    '(default: 16)',
    '(default: not set)',
  ]) {
    assert.ok(text.replace(/\s+/g, ' ').includes(d), `help lacks ${d}`); // wrapping aside
  }
  const long = parseCommandLine(['--help'], 'collbench');
  assert.ok(long.kind === 'help');
  assert.match(long.text, /^USAGE: collbench \[run\] <collective> \[options\]/);
  assert.ok(long.text.includes(COLLECTIVES.join(' ')));
  const coll = parseCommandLine(['all_gather', '-h'], 'collbench');
  assert.ok(coll.kind === 'help' && coll.text.startsWith('USAGE: collbench [run] all_gather [options]'));
  assert.deepEqual(parseCommandLine(['--version'], 'collbench'), { kind: 'version' });
  assert.deepEqual(parseCommandLine(['-b', '8', '--version'], 'all_reduce_perf'), { kind: 'version' });
  usage(['--foo', '-h'], /^unknown option '--foo'/); // getopt order: the error comes first
});

test('every table field has a default and a message name', () => {
  for (const f of FLAGS) {
    assert.ok(f.field in DEFAULTS, f.field);
    assert.equal(FIELD_NAMES[f.field], f.short ? `-${f.short}` : `--${f.long}`);
  }
  const shorts = [...FLAGS, ...ACTIONS]
    .filter((f) => f.short)
    .map((f) => f.short)
    .sort()
    .join('');
  assert.equal(shorts, [...'tgbeifnmwNpcodrzyTGCSJaRxDVMuIKh'].sort().join('')); // nccl-tests' letters
});

test('sizes on the command line: -b 8 -e 128M -f 2 → 25 sizes; -b 1M -e 4M → 4 sizes', () => {
  const o = run(['-b', '8', '-e', '128M', '-f', '2']);
  assert.equal(sweepSizes(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes).length, 25);
  const p = run(['-b', '1M', '-e', '4M']);
  assert.deepEqual(sweepSizes(p.minBytes, p.maxBytes, p.stepFactor, p.stepBytes), [MIB, 2 * MIB, 3 * MIB, 4 * MIB]);
  assert.equal(run(['-b', '128KB', '-e', '1GB']).maxBytes, 1024 * MIB);
  usage(['-b', '8B'], /^-b: invalid size '8B'/);
  usage(['-e', '1T'], /^-e: invalid size '1T'/);
  usage(['--stepbytes', 'lots'], /^-i: invalid size 'lots'/);
});

test('sharp edge: -b 0 with a step factor never advances → refused', () => {
  usage(['-b', '0', '-f', '2'], /^-b: min size 0 never grows with -f 2/);
  usage(['-b', '0', '-e', '1M', '-f', '2'], /^-b: /);
  assert.deepEqual(run(['-b', '0', '-e', '0', '-f', '2']).maxBytes, 0); // one size: nothing to advance
  assert.equal(run(['-b', '0', '-e', '4M']).minBytes, 0); // additive steps from 0 are fine
});

test('sharp edge: min > max is refused, with a hint when -e was left at its default', () => {
  usage(['-b', '64M'], /^-b: min size 67108864 is larger than max size 33554432 \(the default of -e; give -e too\)$/);
  usage(['-b', '1M', '-e', '512K'], /^-b: min size 1048576 is larger than max size 524288$/);
  usage(['-e', '8'], /^-b: min size 33554432 is larger than max size 8$/);
});

test('sharp edge: -f must be an integer ≥ 1 (nccl-tests truncates 1.5 to 1)', () => {
  usage(['-f', '1.5'], /^-f: step factor must be an integer ≥ 1, got 1\.5$/);
  usage(['-f', '0'], /^-f: step factor must be an integer ≥ 1, got 0$/);
  usage(['-f', '-2'], /^-f: /);
  assert.equal(run(['-b', '1', '-e', '8', '-f', '0x2']).stepFactor, 2);
});

test('sharp edge: -r all is refused with a pointer to -r -1; roots below -1 are refused', () => {
  usage(['-r', 'all'], /^-r: 'all' is not a root .* use -r -1 to run every root$/);
  usage(['--root', 'ALL'], /^-r: 'all' is not a root/);
  usage(['-r', '-2'], /^-r: root \(-1 = every root\) must be an integer ≥ -1, got -2$/);
  assert.equal(run(['-r', '3']).root, 3);
});

test('-o / -d: unknown names are refused listing the valid ones; all expands', () => {
  usage(['-o', 'foo'], /^-o: unknown op 'foo'; valid: sum, prod, max, min, avg, mulsum, all$/);
  usage(['-o', 'SUM'], /^-o: unknown op 'SUM'/); // nccl-tests matches case-sensitively
  usage(['-d', 'fp32'], /^-d: unknown datatype 'fp32'; valid: int8, uint8, .*f8e5m2, all$/);
  assert.deepEqual(run(['-o', 'all']).ops, [...OPS]);
  assert.deepEqual(run(['-d', 'all']).dtypes, [...DTYPES]);
  assert.deepEqual(run(['-o', 'max', '-d', 'bfloat16']).ops, ['max']);
  assert.deepEqual(run(['-d', 'bfloat16']).dtypes, ['bfloat16']);
});

test('single-flag ranges', () => {
  const bad: [string[], RegExp][] = [
    [['-t', '0'], /^-t: thread count must be an integer ≥ 1, got 0$/],
    [['-g', '0'], /^-g: /],
    [['-n', '0'], /^-n: iteration count must be an integer ≥ 1, got 0$/],
    [['-m', '0'], /^-m: /],
    [['-w', '-1'], /^-w: /],
    [['-N', '-1'], /^-N: /],
    [['-p', '2'], /^-p: parallel init must be 0 or 1, got 2$/],
    [['-c', '-1'], /^-c: /],
    [['-z', '4'], /^-z: blocking mode must be 0, 1, 2 or 3, got 4$/],
    [['-z', '-1'], /^-z: /],
    [['-y', '2'], /^-y: /],
    [['-T', '-1'], /^-T: /],
    [['-G', '-1'], /^-G: /],
    [['-C', '2'], /^-C: report_cputime must be 0 or 1, got 2$/],
    [['-S', 'x'], /^-S: /],
    [['-a', '4'], /^-a: average mode must be 0, 1, 2 or 3, got 4$/],
    [['-R', '3'], /^-R: /],
    [['-x', '3'], /^-x: /],
    [['-x', '-2'], /^-x: /],
    [['-D', '-1'], /^-D: /],
    [['-V', '0'], /^-V: device CTA count must be an integer between 1 and 128, got 0$/],
    [['-V', '129'], /^-V: /],
    [['-M', '2'], /^-M: /],
    [['-u', '-1'], /^-u: /],
    [['-I', '2'], /^-I: per-iteration timing must be 0 or 1, got 2$/],
    [['-K', '-1'], /^-K: /],
    [['--np', '0'], /^--np: rank count must be an integer ≥ 1, got 0$/],
    [['--backend', 'ucc'], /^--backend: unknown backend 'ucc'; valid: nccl, mpi, gloo$/],
    [['-J', ''], /^-J: output file name is empty$/],
  ];
  for (const [args, re] of bad) usage(args, re);
  // The edges of each range are accepted.
  const o = run([
    '-w',
    '0',
    '-N',
    '0',
    '-c',
    '0',
    '-z',
    '3',
    '-a',
    '0',
    '-V',
    '128',
    '-x',
    '2',
    '-u',
    '3',
    '-T',
    '30',
    '-C',
    '1',
    '-S',
    '1',
    '-M',
    '1',
    '-p',
    '1',
    '-y',
    '1',
    '-t',
    '2',
    '--backend',
    'gloo',
  ]);
  assert.deepEqual(
    [
      o.warmupIters,
      o.runCycles,
      o.check,
      o.blocking,
      o.average,
      o.deviceCtaCount,
      o.ctaPolicy,
      o.unalign,
      o.timeoutSec,
      o.reportCpuTime,
      o.reportTimestamps,
      o.memoryReport,
      o.parallelInit,
      o.streamNull,
      o.nThreads,
      o.backend,
    ],
    [0, 0, 0, 3, 0, 128, 2, 3, 30, true, true, true, 1, 1, 2, 'gloo'],
  );
});

test('-K must be 0..n-1 and needs -I 1', () => {
  usage(['-I', '1', '-K', '20'], /^-K: per-iteration skip must be between 0 and 19 \(-n 20 minus 1\), got 20$/);
  usage(['-I', '1', '-n', '5', '-K', '5'], /^-K: .*between 0 and 4/);
  usage(['-K', '1'], /^-K: per-iteration skip needs per-iteration timing \(-I 1\)$/);
  const o = run(['-I', '1', '-K', '19']);
  assert.equal(o.perIterTiming, true);
  assert.equal(o.perIterSkip, 19);
});

test('combinations nccl-tests silently rewrites are refused: -I 1 with -G, -z 3 with -G', () => {
  usage(['-I', '1', '-G', '1'], /^-I: per-iteration timing cannot be combined with CUDA graphs \(-G 1\)/);
  usage(['-z', '3', '-G', '4'], /^-z: blocking mode 3 cannot be combined with CUDA graphs \(-G 4\)/);
  assert.equal(run(['-z', '2', '-G', '4']).cudaGraph, 4);
  assert.equal(run(['-I', '1', '-G', '0']).perIterTiming, true);
});

test('-D > 0 needs -R 2', () => {
  usage(['-D', '1'], /^-D: device implementation 1 needs symmetric buffer registration \(-R 2\)$/);
  usage(['-D', '2', '-R', '1'], /^-D: /);
  usage(['-D', '5', '-R', '2'], /^-D: .*4/); // nccl-tests has kernels 1..4 (all_reduce)
  const o = run(['-D', '3', '-R', '2', '-V', '32']);
  assert.deepEqual([o.deviceImpl, o.localRegister, o.deviceCtaCount], [3, 2, 32]);
});

test('-i 0 without a factor and min < max would loop forever → refused', () => {
  usage(
    ['-b', '1M', '-e', '2M', '-i', '0'],
    /^-i: step 0 never advances from 1048576 to 2097152; give -i > 0 or -f > 1$/,
  );
  assert.equal(run(['-i', '0']).stepBytes, 0); // defaults: one size
  assert.equal(run(['-b', '1', '-e', '8', '-f', '2', '-i', '0']).stepFactor, 2);
});

test('a sweep with more than MAX_SWEEP_SIZES sizes is refused', () => {
  usage(
    ['-b', '1', '-e', '1G', '-i', '1'],
    new RegExp(`^-i: the sweep 1\\.\\.1073741824 in steps of 1 has 1073741824 sizes \\(limit ${MAX_SWEEP_SIZES}\\)`),
  );
  assert.equal(run(['-b', '0', '-e', '999999', '-i', '1']).maxBytes, 999999); // exactly the limit
});

test('--np / --hosts', () => {
  const o = run(['--np', '4', '--hosts', 'h1,h2:4']);
  assert.equal(o.np, 4);
  assert.equal(o.hosts, 'h1,h2:4');
  assert.equal(run(['--np=0x8']).np, 8);
  usage(['--hosts', 'h1,h2'], /^--hosts: needs --np N/);
  usage(['--np', '2', '--hosts', 'h1,,h2'], /^--hosts: invalid host entry '' in h1,,h2/);
  usage(['--np', '2', '--hosts', 'h1:0'], /^--hosts: invalid host entry h1:0/);
  usage(['--np', '2', '--hosts', 'h1:x'], /^--hosts: /);
});

test('GPU-only flags are parsed here and left for the backend to refuse', () => {
  const o = run(['-g', '8', '-G', '10', '-R', '1', '-x', '1', '-y', '1', '-M', '1', '-p', '1', '-t', '2']);
  assert.deepEqual(
    [o.nGpus, o.cudaGraph, o.localRegister, o.ctaPolicy, o.streamNull, o.memoryReport, o.parallelInit],
    [8, 10, 1, 1, 1, true, 1],
  );
  assert.equal(run(['-J', 'results.JSON']).jsonFile, 'results.JSON'); // kept as given
});

test('resolveOptions: programmatic input uses field names in messages and accepts numbers', () => {
  const o = resolveOptions({ collective: 'alltoall', minBytes: 8, maxBytes: '1M', stepFactor: 2, ops: ['sum', 'all'] });
  assert.equal(o.program, 'alltoall_perf');
  assert.equal(o.maxBytes, MIB);
  assert.deepEqual(o.ops, [...OPS]); // de-duplicated
  assert.throws(
    () => resolveOptions({ collective: 'all_reduce', stepFactor: 1.5 }),
    /^UsageError: stepFactor: step factor must be an integer ≥ 1, got 1\.5$/,
  );
  assert.throws(
    () => resolveOptions({ collective: 'all_reduce', minBytes: -1 }),
    /minBytes: size must be a whole number/,
  );
  assert.throws(() => resolveOptions({ collective: 'all_reduce', ops: [] }), /ops: needs at least one op/);
  assert.throws(() => resolveOptions({ collective: 'nope' }), /^UsageError: unknown collective 'nope'/);
  assert.equal(resolveOptions({ collective: 'scatter_perf', perIterTiming: true }).perIterTiming, true);
});

test("Gloo's legacy algorithms refuse -e above 2 GiB - 1 (their byte counts are C ints); the new API does not", () => {
  usage(
    ['--backend', 'gloo', '--gloo-algo', 'legacy_ring', '-b', '8', '-e', '2G'],
    /^-e: 2147483648 bytes exceed what Gloo's legacy legacy_ring takes \(2 GiB - 1\)$/,
  );
  usage(
    ['--backend', 'gloo', '--gloo-algo', 'legacy_halving_doubling', '-b', '8', '-e', '4G'],
    /^-e: 4294967296 bytes exceed what Gloo's legacy ReduceScatterHalvingDoubling takes/,
    'reduce_scatter_perf',
  );
  assert.equal(run(['--backend', 'gloo', '--gloo-algo', 'ring', '-b', '8', '-e', '4G']).maxBytes, 4 * 1024 * MIB);
  assert.equal(
    run(['--backend', 'gloo', '--gloo-algo', 'legacy_ring', '-b', '8', '-e', '2147483647']).maxBytes,
    2 ** 31 - 1,
  );
});

test('--help marks every flag the flag table gives to one backend, and only those', () => {
  const parsed = parseCommandLine(['-h'], 'all_reduce_perf');
  assert.ok(parsed.kind === 'help');
  const text = parsed.text.replace(/\n {44}/g, ' '); // unwrap
  for (const f of FLAGS) {
    const line = text.split('\n').find((l) => l.includes(`--${f.long} `) || l.endsWith(`--${f.long}`))!;
    const mark = f.backends ? ` [${f.backends.map((b) => (b === 'nccl' ? 'NCCL' : b)).join(', ')}]` : null;
    if (mark) assert.ok(line.includes(mark), `${f.long}: ${line}`);
    else assert.ok(!/\[(NCCL|gloo)\]/.test(line), `${f.long} is marked but runs everywhere: ${line}`);
  }
  // -t and -p were refused on CPU backends but not marked: both now come from the same record.
  assert.match(text, /--nthreads <num threads> +threads per process, each driving -g GPUs \[NCCL\]/);
  assert.match(text, /--parallel_init <0\/1> +threads initialise .* \[NCCL\]/);
});
