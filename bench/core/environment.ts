// The one table of collbench's environment variables: name, kind (a user setting, nccl-tests' own settings, a build
// setting, what collbench passes to its own children, a test hook, a test-suite knob), meaning, default and who reads it. TypeScript code reads
// a variable through ENV (no COLLBENCH_* literal elsewhere in bench/); native code and scripts keep their literal, and
// test/unit/environment.test.ts checks that every COLLBENCH_* name they use is here. `collbench help env` prints the
// table and docs/environment.md is generated from it (scripts/gen-env-doc.ts).

/** What a variable is for. */
export const ENV_KINDS = {
  setting: 'user setting',
  'nccl-tests': 'setting of nccl-tests (read as nccl-tests reads it)',
  build: 'build setting (make native)',
  internal: 'set by collbench for its own children (not to be set by hand)',
  hook: 'test hook (not for production runs)',
  suite: 'test-suite knob (make test, make stress)',
} as const;
export type EnvKind = keyof typeof ENV_KINDS;

export interface EnvVariable<K extends string = string, N extends string = string> {
  /** The name without its COLLBENCH_ prefix (nccl-tests' variables: the whole name). */
  key: K;
  name: N;
  kind: EnvKind;
  /** What it does, one or two sentences. */
  meaning: string;
  /** What happens when it is unset. */
  default: string;
  /** Files that read it, or set it for a child (repository paths): bench/ modules, native sources, scripts, the Makefile, tests. */
  readBy: readonly string[];
}

const v = <K extends string>(
  key: K,
  kind: EnvKind,
  meaning: string,
  dflt: string,
  readBy: readonly string[],
): EnvVariable<K, `COLLBENCH_${K}`> => ({ key, name: `COLLBENCH_${key}`, kind, meaning, default: dflt, readBy });
/** One of nccl-tests' own variables, which collbench reads under nccl-tests' name (docs/nccl-tests-contract.md). */
const ncclTests = <K extends `NCCL_TESTS_${string}`>(
  key: K,
  meaning: string,
  dflt: string,
  readBy: readonly string[],
): EnvVariable<K, K> => ({ key, name: key, kind: 'nccl-tests', meaning, default: dflt, readBy });

/** Every COLLBENCH_* variable, user settings first, and nccl-tests' variables collbench reads. */
export const VARIABLES = Object.freeze([
  v(
    'NCCL_LIB',
    'setting',
    'the libnccl.so.2 (or its directory) the nccl backend loads, when --nccl-lib is not given',
    'libnccl.so.2 from the system loader path, then pip nvidia-nccl-cu* wheels in site-packages',
    ['native/src/backends/nccl/nccl_loader.cc', 'bench/commands/info.ts', 'scripts/gpu-check.sh'],
  ),
  v(
    'NATIVE_DIR',
    'setting',
    'the folder holding the native backend modules (collbench_<backend>.node)',
    'build/Release of the installation',
    ['bench/native/loader.ts', 'bench/commands/info.ts'],
  ),
  v('MPIRUN', 'setting', "the mpirun command that --np (and locate's jobs) start ranks with", 'mpirun from PATH', [
    'bench/launch/mpirun.ts',
    'scripts/bench-overhead.ts',
  ]),
  v(
    'BOARD_ADDR',
    'setting',
    'the address the live progress board of a multi-rank run listens on',
    "127.0.0.1 when every rank is on this host, else the host's first non-internal IPv4 address",
    ['bench/launch/progress-board.ts'],
  ),
  v(
    'WATCHDOG_MIN_S',
    'setting',
    "the default watchdog's floor in whole seconds (also bounds MPI_Init and the bring-up)",
    '120',
    ['bench/config/watchdog-floor.ts'],
  ),
  v(
    'RENDEZVOUS_TIMEOUT',
    'setting',
    'seconds the nccl backend waits for the other ranks in its TCP rendezvous (torchrun-style launches)',
    '300',
    ['bench/backends/nccl.ts'],
  ),
  v(
    'JOB_TOKEN',
    'setting',
    'a value every rank of one job shares and no other job has (set it the same on every rank, e.g. ' +
      '$(openssl rand -hex 16) once per job): the torchrun-style rendezvous turns away a hello that does not carry it, so a ' +
      'stray or another job on the same MASTER_PORT cannot join; never printed nor recorded in reports',
    'TORCHELASTIC_RUN_ID, else SLURM_JOB_ID and SLURM_STEP_ID; with none of them the rendezvous is unauthenticated (the ' +
      'preamble says so)',
    ['bench/launch/job-token.ts'],
  ),
  v(
    'PIN_LOOP',
    'setting',
    "0 leaves the timed loop's thread where the system puts it instead of on a CPU of its own",
    'pinned when this process decides placement (one CPU backend rank on the host, two or more CPUs)',
    ['bench/engine/loop-cpu.ts'],
  ),
  v(
    'GLOO_STORE',
    'setting',
    'the gloo rendezvous store when --gloo-store is not given: file:DIR (a directory every rank sees) ' +
      'or redis://HOST:PORT; collbench --np sets it for its local ranks',
    'a private directory under --np, else per launcher',
    ['bench/backends/gloo.ts', 'bench/launch/local-ranks.ts'],
  ),
  v(
    'GLOO_RUN_ID',
    'setting',
    "the prefix of the gloo store's keys, so that runs sharing a store do not meet",
    "from the launcher's job id",
    ['bench/backends/gloo.ts', 'bench/launch/local-ranks.ts'],
  ),
  v(
    'GLOO_TIMEOUT_MS',
    'setting',
    'milliseconds every Gloo wait (rendezvous, collectives) may take before GLOO_TIMEOUT',
    '30000',
    ['bench/backends/gloo.ts'],
  ),
  v(
    'GLOO_REDIS_PASSWORD',
    'setting',
    'the password of a redis:// gloo store (never on the command line; reports never record it)',
    'REDISCLI_AUTH, else none',
    ['bench/backends/gloo.ts'],
  ),
  v(
    'GLOO_FLOAT16',
    'setting',
    "how the gloo backend reduces half: gloo (gloo::float16's operators, as PyTorch) or collbench " +
      "(collbench's own arithmetic, which avoids Gloo's stale-element defect)",
    'gloo',
    ['bench/backends/gloo.ts'],
  ),
  ncclTests(
    'NCCL_TESTS_MIN_BW',
    'a floor in GB/s: after the footer, the average bus bandwidth below 0.9 times it fails the ' +
      'run (exit 7); read as C atof',
    'no floor',
    ['bench/engine/suite.ts', 'bench/report/exporters/json.ts'],
  ),
  ncclTests(
    'NCCL_TESTS_ALLTOALLV_SPREAD',
    'alltoallv: how unequal the generated per-peer counts are, 0 (equal) to 1',
    '1',
    ['bench/collectives/alltoallv-plan.ts'],
  ),
  ncclTests(
    'NCCL_TESTS_ALLTOALLV_MATRIX_FILE',
    'alltoallv: a square matrix of bytes (row = sender) instead of the ' + 'spread; -b must equal -e',
    'none',
    ['bench/collectives/alltoallv-plan.ts'],
  ),
  ncclTests('NCCL_TESTS_ALLTOALLV_MATRIX_SCALE', "alltoallv: the factor applied to the matrix file's counts", '1', [
    'bench/collectives/alltoallv-plan.ts',
  ]),
  ncclTests('NCCL_TESTS_DEVICE', 'nccl: the first CUDA device of the process', 'the local rank times -t times -g', [
    'bench/backends/nccl.ts',
  ]),
  ncclTests(
    'NCCL_TESTS_SPLIT',
    'nccl: processes of equal colour share a communicator; the colour is the process rank <op> <value>, op ' +
      'AND, OR, MOD or DIV (&, |, %, /)',
    'one communicator',
    ['bench/backends/nccl.ts'],
  ),
  ncclTests(
    'NCCL_TESTS_SPLIT_MASK',
    'nccl: the colour is the process rank & <hex mask>; wins over NCCL_TESTS_SPLIT',
    'none',
    ['bench/backends/nccl.ts'],
  ),
  v(
    'NCCL_INCLUDE',
    'build',
    'NCCL include directories (DIR[:DIR…]) to build the -D device-API kernels against, one variant each',
    '.cache/nccl/nvidia/nccl/include',
    ['Makefile', 'native/CMakeLists.txt', 'scripts/gpu-kit.sh'],
  ),
  v(
    'NCCL_WHEEL',
    'build',
    'the nvidia-nccl wheel scripts/nccl-cache.sh unpacks into .cache/nccl (headers and a libnccl for the ' +
      'ABI and error-path tests without a GPU)',
    'the first nvidia_nccl_cu1*-*.whl found on the file system',
    ['scripts/nccl-cache.sh'],
  ),
  v(
    'ARGV',
    'internal',
    "the user's command line (JSON array) that --np, compare, accept, locate and workload pass to their children, so " +
      "that each child's report records the command to rerun (report/provenance.ts ARGV_ENV)",
    "the process's own argv",
    ['bench/report/provenance.ts'],
  ),
  v(
    'VERDICT_DIR',
    'internal',
    'the folder the --np launcher gives its ranks: a rank whose run ends with a failing verdict ' +
      'writes it there and exits 0, so mpirun sees no crash and the launcher exits with the verdict (launch/verdict-relay.ts)',
    'unset: a rank exits with its verdict',
    ['bench/launch/verdict-relay.ts'],
  ),
  v(
    'STDERR_TTY',
    'internal',
    "1: the --np launcher's stderr is a terminal, so rank 0 draws the progress bar although mpirun " +
      'hands it a pipe (unset: rank 0 prints a plain progress line every 10 s instead)',
    'rank 0 asks its own stderr',
    ['bench/engine/launch-ranks.ts', 'bench/report/reporters/progress.ts'],
  ),
  v(
    'GLOO_LAUNCHER',
    'internal',
    "collbench: the gloo ranks were started by collbench --np (RANK, WORLD_SIZE are torchrun's names)",
    'the launcher is read from its own variables (Open MPI, PMI, torchrun)',
    ['bench/backends/gloo.ts', 'bench/launch/local-ranks.ts'],
  ),
  v(
    'CLOCK_ALIGN',
    'hook',
    "barrier: estimate clock offsets between ranks even when they share one clock (to see the estimate's accuracy)",
    'offsets are estimated only between ranks on different clocks',
    ['bench/engine/arrivals.ts'],
  ),
  v('TARGET_RSD_BUDGET_S', 'hook', 'seconds one row-half may spend doubling its iterations under --target-rsd', '10', [
    'bench/engine/measure.ts',
  ]),
  v(
    'NCCL_HOSTID_PER_RANK',
    'setting',
    '1: each nccl process sets NCCL_HOSTID to <host>-rank<N> (N its process rank) before ' +
      'NCCL starts, so that NCCL takes every process for a node of its own: several ranks on one GPU with any NCCL, also ' +
      'under --np and compare (the network transport between them: set NCCL_SOCKET_IFNAME, e.g. lo)',
    'off',
    ['bench/backends/nccl-devices.ts', 'scripts/gpu-check/60-multirank.sh'],
  ),
  v(
    'ARRIVAL_TRACE',
    'hook',
    'FILE: rank 0 appends one JSON line per row-half with its raw device arrivals (no schema)',
    'off',
    ['bench/engine/arrivals.ts', 'scripts/gpu-check/40-arrival.sh'],
  ),
  v(
    'TEST_GPU_DELAY',
    'hook',
    "MICROS:ITER[:RANK]: a device-side busy wait of MICROS µs on rank RANK's stream before iteration ITER " +
      '(a number or all) of each row-half; needs -I 1',
    'off; RANK 0',
    ['native/src/core/device_arrivals.cc', 'scripts/gpu-check/40-arrival.sh'],
  ),
  v('DEATH_TRIALS', 'suite', 'kill -9 trials per backend of the rank-death test', '2 (make stress: 10)', [
    'test/cli/rank-death.test.ts',
    'Makefile',
  ]),
  v(
    'STRESS',
    'suite',
    '1 runs the 2^31 + 4096 element tests (minutes, 4.3 GB per rank)',
    'skipped (make stress sets 1)',
    ['test/cli/big-count.test.ts', 'Makefile'],
  ),
  v(
    'FUZZ_SEED',
    'suite',
    'the seed of the command-line fuzz tests (printed in their names, to reproduce a failure)',
    '20261123',
    ['test/helpers/fuzz-argv.ts'],
  ),
  v(
    'NCCL_PROFILER_INCLUDE',
    'suite',
    "DIR[:DIR…]: folders holding NCCL's profiler headers (nccl/profiler.h) that " +
      "the link profiler's declarations are compiled against",
    '.cache/nccl-profiler/ (scripts/nccl-profiler-headers.sh)',
    ['test/native/link-profiler.test.ts'],
  ),
  v('CHROMIUM', 'suite', 'the browser the report-command test renders HTML pages with', '/usr/bin/chromium', [
    'test/cli/report-command.test.ts',
  ]),
] as const);

export type EnvKey = (typeof VARIABLES)[number]['key'];

/** Each variable's name by key: `env[ENV.NCCL_LIB]`. */
export const ENV = Object.freeze(Object.fromEntries(VARIABLES.map((x) => [x.key, x.name]))) as {
  readonly [K in EnvKey]: Extract<(typeof VARIABLES)[number], { key: K }>['name'];
};

/** Names that look like variables but are compile-time macros of the native build, never read from the environment. */
export const NATIVE_MACROS: readonly string[] = Object.freeze(['COLLBENCH_GLOO_NO_REDIS', 'COLLBENCH_DEVAPI_VARIANT']);

function wrap(text: string, indent: number, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.map((l) => `${' '.repeat(indent)}${l}`);
}

/** `collbench help env`: the table grouped by kind, each variable with its meaning, default and readers. */
export function environmentText(): string {
  const out = ['Environment variables of collbench (docs/environment.md):'];
  for (const [kind, title] of Object.entries(ENV_KINDS)) {
    out.push('', `${title[0]!.toUpperCase()}${title.slice(1)}:`);
    for (const x of VARIABLES.filter((y) => y.kind === kind)) {
      out.push(`  ${x.name}`, ...wrap(`${x.meaning} (default: ${x.default}). Read by ${x.readBy.join(', ')}.`, 6, 100));
    }
  }
  return `${out.join('\n')}\n`;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** docs/environment.md, generated (scripts/gen-env-doc.ts; test/unit/environment.test.ts fails when it is stale). */
export function environmentMarkdown(): string {
  const out = [
    '# Environment variables',
    '',
    '<!-- Generated from bench/core/environment.ts by `node --import tsx scripts/gen-env-doc.ts`; do not edit. -->',
    '',
    'Every `COLLBENCH_*` variable collbench, its build, its scripts and its tests read, and the `NCCL_TESTS_*`',
    'variables it reads as nccl-tests does. `collbench help env` prints the same table. Command-line flags win over',
    'variables where both exist (`--nccl-lib` over `COLLBENCH_NCCL_LIB`, `--gloo-store` over `COLLBENCH_GLOO_STORE`).',
  ];
  for (const [kind, title] of Object.entries(ENV_KINDS)) {
    out.push(
      '',
      `## ${title[0]!.toUpperCase()}${title.slice(1)}`,
      '',
      '| Variable | Meaning | Default | Read by |',
      '|---|---|---|---|',
    );
    for (const x of VARIABLES.filter((y) => y.kind === kind)) {
      out.push(
        `| \`${x.name}\` | ${cell(x.meaning)} | ${cell(x.default)} | ${x.readBy.map((p) => `\`${p}\``).join(', ')} |`,
      );
    }
  }
  return `${out.join('\n')}\n`;
}
