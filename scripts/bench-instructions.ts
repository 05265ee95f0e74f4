// Benchmark (not a test): how many instructions collbench's own code adds per operation, counted rather than timed.
// On a shared 2-core VM a few hundredths of a microsecond drown in run-to-run noise (launch "modes" of ±0.1 µs);
// valgrind's callgrind counts executed instructions exactly. For each backend × collective it runs the plain loop of the
// engine's calls (native/test/plain_*_loop) and collbench's own timed loop and backend without Node (native_*_loop, the
// loop bench-overhead --native-loop times) at one size, 1 rank, out of place, twice each (-n LOW and -n HIGH), and
// prints per op (count(HIGH) - count(LOW)) / (HIGH - LOW): start-up, warm-up and teardown cancel out. Node itself is left
// out: its JIT would put V8's instructions in the count, and the loop and backend it calls are the native loop's.
// Options: --help (USAGE below). Needs valgrind (`make bench-instructions` installs it).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COLLS = ['all_reduce', 'all_gather', 'alltoall', 'broadcast', 'reduce_scatter', 'sendrecv'] as const;
const BACKENDS = ['mpi', 'gloo'] as const;
type Backend = (typeof BACKENDS)[number];

const USAGE = `usage: node --import tsx scripts/bench-instructions.ts [options]
  --backends LIST   mpi,gloo (default both)
  --colls LIST      ${COLLS.join(',')} (default all)
  --bytes SIZE      the op's size in bytes, K or M suffix allowed (default 64)
  --low N           ops of the shorter run (default 5000)
  --high N          ops of the longer run (default 15000, more than --low)
  --native-dir DIR  the loops' directory (default build/Release)
  --json FILE       also write the counts as JSON`;

function fail(message: string): never {
  console.error(`bench-instructions: ${message}\n${USAGE}`);
  process.exit(2);
}

function count(text: string, what: string, min: number): number {
  const m = /^(\d+)([kKmM]?)$/.exec(text);
  const n = m ? Number(m[1]) * ({ '': 1, k: 1024, m: 1024 ** 2 }[m[2]!.toLowerCase()] ?? 1) : NaN;
  if (!Number.isSafeInteger(n) || n < min) fail(`--${what}: expected a whole number >= ${min}, got '${text}'`);
  return n;
}

const { values: argv } = (() => {
  try {
    return parseArgs({
      options: {
        backends: { type: 'string', default: BACKENDS.join(',') },
        colls: { type: 'string', default: COLLS.join(',') },
        bytes: { type: 'string', default: '64' },
        low: { type: 'string', default: '5000' },
        high: { type: 'string', default: '15000' },
        'native-dir': { type: 'string' },
        json: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    return fail((e as Error).message);
  }
})();
if (argv.help) {
  console.log(USAGE);
  process.exit(0);
}
const backends = argv.backends
  .split(',')
  .map((b) =>
    (BACKENDS as readonly string[]).includes(b) ? (b as Backend) : fail(`--backends: unknown backend '${b}'`),
  );
const colls = argv.colls
  .split(',')
  .map((c) =>
    (COLLS as readonly string[]).includes(c) ? c : fail(`--colls: unknown collective '${c}' (${COLLS.join(', ')})`),
  );
const bytes = count(argv.bytes, 'bytes', 4);
const low = count(argv.low, 'low', 1);
const high = count(argv.high, 'high', low + 1);
const dir = argv['native-dir'] ?? join(root, 'build', 'Release');
for (const b of backends) {
  for (const p of [`plain_${b}_loop`, `native_${b}_loop`])
    if (!existsSync(join(dir, p))) fail(`${join(dir, p)} is missing: build first (make build)`);
}
if (spawnSync('valgrind', ['--version']).error) {
  console.error('bench-instructions: valgrind is not installed (make bench-instructions installs it with apt)');
  process.exit(1);
}

const work = mkdtempSync(join(tmpdir(), 'collbench-instructions-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

/** Instructions callgrind counted over a whole run of `program` with -n `ops`. */
function instructions(program: string, coll: string, ops: number): number {
  const env = { ...process.env, OMPI_MCA_pml: 'ob1', OMPI_MCA_ess_singleton_isolated: '1' }; // as bench-overhead's 1-rank MPI
  const r = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(work, 'callgrind.out')}`,
      join(dir, program),
      '-c',
      coll,
      '-b',
      String(bytes),
      '-e',
      String(bytes),
      '-n',
      String(ops),
      '-w',
      '10',
      '-i',
      '0',
    ],
    { encoding: 'utf8', env, maxBuffer: 1 << 24, timeout: 600_000 },
  );
  const m = /Collected : (\d+)/.exec(r.stderr ?? '');
  if (r.error || r.status !== 0 || !m)
    throw new Error(`${program} -c ${coll} under valgrind: ${r.error?.message ?? `exit ${r.status}`}\n${r.stderr}`);
  return Number(m[1]);
}

const perOp = (program: string, coll: string): number =>
  (instructions(program, coll, high) - instructions(program, coll, low)) / (high - low);

console.log(
  `# collbench instructions per op: plain loop vs collbench's own loop and backend (native loop, no Node), valgrind callgrind, 1 rank, ${bytes} B, out of place, float sum, (count at -n ${high} - count at -n ${low}) / ${high - low}`,
);
console.log(
  `${'backend'.padEnd(8)}${'collective'.padEnd(16)}${'plain'.padStart(8)}${'collbench'.padStart(11)}${'added'.padStart(8)}${'ratio'.padStart(8)}`,
);
const rows: { backend: Backend; coll: string; bytes: number; plain: number; collbench: number; added: number }[] = [];
for (const backend of backends) {
  for (const coll of colls) {
    const plain = perOp(`plain_${backend}_loop`, coll),
      collbench = perOp(`native_${backend}_loop`, coll);
    rows.push({ backend, coll, bytes, plain, collbench, added: collbench - plain });
    console.log(
      `${backend.padEnd(8)}${coll.padEnd(16)}${plain.toFixed(0).padStart(8)}${collbench.toFixed(0).padStart(11)}` +
        `${(collbench - plain >= 0 ? '+' : '') + (collbench - plain).toFixed(0)}`.padStart(8) +
        `${(collbench / plain).toFixed(3)}`.padStart(8),
    );
  }
}
if (argv.json)
  writeFileSync(argv.json, `${JSON.stringify({ kind: 'collbench-instructions', bytes, low, high, rows }, null, 2)}\n`);
