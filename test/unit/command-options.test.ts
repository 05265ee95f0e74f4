// Every command's options come from one kind of table (bench/config/option-parser.ts): one parser with getopt_long's
// prefix rule, one value parser (the flag kinds' syntax and ranges), one help renderer, one --timeout. Each command's
// table is checked here for what the shared code relies on, and the shared rules are checked through several commands.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACCEPT_OPTIONS } from '../../bench/accept/command.js';
import { BUNDLE_OPTIONS } from '../../bench/commands/bundle.js';
import { COMPARE_OPTIONS, parseCompareArgs } from '../../bench/compare/command.js';
import { INFO_OPTIONS } from '../../bench/commands/info.js';
import { REPORT_OPTIONS } from '../../bench/commands/report.js';
import { WORKLOAD_OPTIONS } from '../../bench/workload/command.js';
import { main } from '../../bench/cli/main.js';
import { commandHelp, parseOptions, type CommandOptions } from '../../bench/config/option-parser.js';
import { parseCommandLine } from '../../bench/config/run-options.js';
import { UsageError } from '../../bench/core/errors.js';
import { VARIABLES } from '../../bench/core/environment.js';
import {
  ACTIONS,
  FLAGS,
  MAX_TIMEOUT_SEC,
  PASS_ON_FLAGS,
  type FlagSpec,
  type ValueFlag,
} from '../../bench/config/flags.js';
import { LOCATE_OPTIONS, parseLocateArgs } from '../../bench/locate/options.js';

const RUN: CommandOptions = {
  command: 'run',
  usage: '',
  about: '',
  groups: [...new Set(FLAGS.map((f) => f.group)), 'Other'],
  flags: [...FLAGS, ...ACTIONS],
  footer: '',
};
const COMMANDS: CommandOptions[] = [
  RUN,
  COMPARE_OPTIONS,
  ACCEPT_OPTIONS,
  WORKLOAD_OPTIONS,
  LOCATE_OPTIONS,
  REPORT_OPTIONS,
  INFO_OPTIONS,
  BUNDLE_OPTIONS,
] as CommandOptions[];

const usage =
  (re: RegExp) =>
  (e: unknown): boolean =>
    e instanceof UsageError && re.test(e.message);

describe('the run flags accept and workload pass on (passOn in the flag table)', () => {
  it('are how ranks start, never what is measured; both commands take every one, workload also -T', () => {
    assert.deepEqual(
      PASS_ON_FLAGS.map((f) => f.long),
      [
        'nthreads',
        'ngpus',
        'np',
        'hosts',
        'oversubscribe',
        'backend',
        'gloo-algo',
        'gloo-store',
        'gloo-iface',
        'nccl-lib',
      ],
    );
    assert.deepEqual(
      ACCEPT_OPTIONS.flags.filter((f) => 'passOn' in f).map((f) => f.long),
      PASS_ON_FLAGS.map((f) => f.long),
    );
    assert.deepEqual(
      WORKLOAD_OPTIONS.flags.filter((f) => 'passOn' in f || f.long === 'timeout').map((f) => f.long),
      [
        'nthreads',
        'ngpus',
        'timeout',
        'np',
        'hosts',
        'oversubscribe',
        'backend',
        'gloo-algo',
        'gloo-store',
        'gloo-iface',
        'nccl-lib',
      ],
    );
    for (const c of [ACCEPT_OPTIONS, WORKLOAD_OPTIONS])
      assert.ok(!c.flags.some((f) => f.long === 'minbytes'), c.command);
  });
});

describe("every command's table", () => {
  for (const c of COMMANDS) {
    it(`${c.command}: unique names, every group shown, -h, help lists every flag with its default`, () => {
      const longs = c.flags.map((f) => f.long),
        shorts = c.flags.flatMap((f) => (f.short ? [f.short] : []));
      assert.equal(new Set(longs).size, longs.length, `${c.command}: a long name twice`);
      assert.equal(new Set(shorts).size, shorts.length, `${c.command}: a letter twice`);
      for (const f of c.flags)
        assert.ok(c.groups.includes(f.group), `${c.command} --${f.long}: group '${f.group}' is not shown`);
      assert.ok(
        c.flags.some((f) => f.kind === 'action' && f.short === 'h' && f.long === 'help'),
        `${c.command}: no -h/--help`,
      );
      if (c === RUN) return;
      const help = commandHelp(c);
      assert.match(help, /^USAGE: collbench /);
      for (const f of c.flags) assert.ok(help.includes(`--${f.long}`), `${c.command} --help lacks --${f.long}`);
    });
  }
});

describe("--timeout: one definition for the subcommands, nccl-tests' -T for runs", () => {
  const all = COMMANDS.flatMap((c) =>
    c.flags.filter((f: FlagSpec) => f.long === 'timeout').map((f) => ({ c, f: f as ValueFlag })),
  );
  const timeouts = all.filter((t) => t.f.short !== 'T');
  it('the same kind, syntax and limits wherever a subcommand has it (compare, accept, locate); runs and workloads take -T', () => {
    assert.deepEqual(timeouts.map((t) => t.c.command).sort(), ['accept', 'compare', 'locate']);
    assert.deepEqual(
      all
        .filter((t) => t.f.short === 'T')
        .map((t) => t.c.command)
        .sort(),
      ['run', 'workload'],
    );
    for (const { c, f } of timeouts) {
      assert.deepEqual(
        [f.kind, f.field, f.min, f.max, f.integer, f.value],
        ['duration', 'timeoutSec', 0, MAX_TIMEOUT_SEC, true, '<time>'],
        c.command,
      );
      assert.match(f.help, /0 = no limit/, c.command);
    }
  });
  it('reads seconds or a unit, 0 = no limit, refuses fractions, negatives and more than 7 days alike', () => {
    for (const { c } of timeouts) {
      const read = (v: string): unknown => parseOptions(['--timeout', v], c).values.timeoutSec;
      assert.equal(read('90'), 90);
      assert.equal(read('2h'), 7200);
      assert.equal(read('0'), 0);
      for (const bad of ['1.5', '-1', '8d', 'soon']) {
        assert.throws(
          () => read(bad),
          usage(new RegExp(`^${c.command}: --timeout: timeout must be whole seconds from 0 to 604800 s`)),
          `${c.command} ${bad}`,
        );
      }
    }
  });
  it("-T reads an int as nccl-tests does (strtol base 0), any size: the watchdog's timer waits through it", () => {
    const run = (v: string): unknown =>
      (parseCommandLine(['all_reduce', '-T', v], 'collbench') as { options: { timeoutSec: unknown } }).options
        .timeoutSec;
    assert.equal(run('30'), 30);
    assert.equal(run('0x10'), 16);
    assert.equal(run('010'), 8);
    assert.equal(run('2200000'), 2200000);
    assert.throws(() => run('30m'), usage(/^-T: /));
    assert.throws(() => run('-1'), usage(/^-T: /));
  });
  it("keeps each command's default and makes 0 a limit no job reaches in locate", () => {
    assert.equal((parseCompareArgs([]) as { timeoutSec: number }).timeoutSec, 600);
    const loc = parseLocateArgs(['--hosts', 'a,b', '--timeout', '0']);
    assert.ok(loc.kind === 'run' && loc.options.timeoutSec === MAX_TIMEOUT_SEC);
  });
});

describe("one prefix rule: getopt_long's, in every command", () => {
  it('an unambiguous prefix names its option; an ambiguous one lists the candidates; the message names the command', () => {
    assert.equal(parseOptions(['--quie'], COMPARE_OPTIONS).values.quiet, true);
    assert.equal(parseOptions(['--quie'], LOCATE_OPTIONS).values.quiet, true);
    assert.equal(parseOptions(['--tit', 'x'], REPORT_OPTIONS).values.title, 'x');
    assert.equal(
      (parseCommandLine(['all_reduce', '--min', '8'], 'collbench') as { options: { minBytes: number } }).options
        .minBytes,
      8,
    );
    assert.throws(
      () => parseOptions(['--rep', '3'], COMPARE_OPTIONS),
      usage(/^compare: ambiguous option '--rep': could be --repeats, --reports-dir$/),
    );
    assert.throws(
      () => parseOptions(['--bogus'], ACCEPT_OPTIONS),
      usage(/^accept: unknown option '--bogus' \(see --help\)$/),
    );
    assert.throws(() => parseOptions(['--json=1'], INFO_OPTIONS), usage(/^info: --json: takes no value$/));
    assert.throws(() => parseOptions(['--output'], BUNDLE_OPTIONS), usage(/^bundle: --output: missing value <file>$/));
  });
});

describe('collbench help', () => {
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
  it("help env prints the environment table; help <command> that command's help; an unknown topic exits 2", async () => {
    const env = await capture(['help', 'env']);
    assert.equal(env.code, 0);
    for (const v of VARIABLES) assert.ok(env.out.includes(v.name), v.name);
    const report = await capture(['help', 'report']);
    assert.equal(report.out, `${commandHelp(REPORT_OPTIONS)}\n`);
    const run = await capture(['help']);
    assert.match(run.out, /^USAGE: collbench <command> \[options\]/); // the command list, then the run's help
    assert.match(run.out, /^USAGE: collbench \[run\] <collective> \[options\]/m);
    assert.match((await capture(['help', 'run'])).out, /^USAGE: collbench \[run\] <collective> \[options\]/);
    assert.match(run.out, /environment variables: collbench help env/);
    const bad = await capture(['help', 'nope']);
    assert.equal(bad.code, 2);
    assert.match(
      bad.err,
      /^collbench: help: unknown topic 'nope'; valid: env, run, compare, accept, locate, workload, /,
    );
  });
});

describe("a run flag's check stays with the run flag", () => {
  it("locate --hosts takes spaced host names (trimmed, its own rule), not mpirun's host[:slots] syntax", () => {
    const loc = parseLocateArgs(['--hosts', 'a, b']);
    assert.ok(loc.kind === 'run');
    assert.deepEqual(loc.options.hosts, ['a', 'b']);
    assert.throws(
      () => parseCommandLine(['all_reduce', '--np', '2', '--hosts', 'a, b'], 'collbench'),
      usage(/^--hosts: invalid host entry ' b'/),
    );
  });
});
