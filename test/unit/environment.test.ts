// The table of environment variables (bench/core/environment.ts) is complete and true: every COLLBENCH_* variable that
// bench/, the native sources, the build, the scripts or the tests read is in it; TypeScript reads them only through it;
// each file it says reads a variable does name it; and docs/environment.md is the table as generated.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ENV, NATIVE_MACROS, VARIABLES, environmentMarkdown, environmentText } from '../../bench/core/environment.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NAME = /COLLBENCH_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])/g;

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(ROOT, path)).isDirectory() ? files(path, ext) : ext.test(name) ? [path] : [];
  });
}
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const known = new Set<string>(VARIABLES.map((v) => v.name));

/** Every name `pattern` finds in `paths`, with where. */
function used(paths: readonly string[], pattern: RegExp): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of paths)
    for (const m of read(p).matchAll(pattern)) out.set(m[1] ?? m[0], relative(ROOT, join(ROOT, p)));
  return out;
}

test('every COLLBENCH_* variable read anywhere is in the table', () => {
  const found = new Map([
    ...used(files('bench', /\.ts$/), NAME),
    ...used(files('native/src', /\.(cc|cu|h)$/), NAME),
    ...used(files('scripts', /\.(ts|sh)$/), NAME),
    ...used(['Makefile'], NAME),
    ...used(['native/CMakeLists.txt'], /\$ENV\{(COLLBENCH_\w+)\}/g),
    ...used(files('native/test', /\.(cc|c|h)$/), /getenv\("(COLLBENCH_\w+)"\)/g),
    ...used(files('test', /\.ts$/), /process\.env\.(COLLBENCH_\w+)/g),
  ]);
  const missing = [...found]
    .filter(([name]) => !known.has(name) && !NATIVE_MACROS.includes(name))
    .map(([n, f]) => `${n} (${f})`);
  assert.deepEqual(missing, [], 'add these to VARIABLES in bench/core/environment.ts, then run scripts/gen-env-doc.ts');
});

test('every NCCL_TESTS_* variable bench/ reads (as nccl-tests does) is in the table', () => {
  const reads = /env\.(NCCL_TESTS_\w+)|['"`](NCCL_TESTS_\w+)['"`]/g;
  const found = files('bench', /\.ts$/)
    .filter((p) => p !== join('bench', 'core', 'environment.ts'))
    .flatMap((p) => [...read(p).matchAll(reads)].map((m) => ({ name: (m[1] ?? m[2])!, p })));
  assert.ok(
    found.some((f) => f.name === 'NCCL_TESTS_MIN_BW'),
    'the pattern sees no read',
  );
  assert.deepEqual(
    found.filter((f) => !known.has(f.name)).map((f) => `${f.name} (${f.p})`),
    [],
  );
});

test('bench/ reads COLLBENCH_* variables only through the table (ENV.KEY), never by a literal name', () => {
  const reads = /\.COLLBENCH_|\[\s*['"`]COLLBENCH_|['"`]COLLBENCH_[A-Z0-9_]+['"`]|^\s*COLLBENCH_[A-Z0-9_]+\s*:/gm;
  const offenders = files('bench', /\.ts$/)
    .filter((p) => p !== join('bench', 'core', 'environment.ts'))
    .flatMap((p) => [...read(p).matchAll(reads)].map((m) => `${p}: ${m[0].trim()}`));
  assert.deepEqual(offenders, []);
});

test('each variable is documented and its readers name it', () => {
  for (const v of VARIABLES) {
    assert.ok(
      v.meaning.length > 10 && v.default !== '' && v.readBy.length > 0,
      `${v.name}: meaning, default and readers`,
    );
    for (const path of v.readBy) {
      assert.ok(existsSync(join(ROOT, path)), `${v.name}: ${path} does not exist`);
      const text = read(path);
      assert.ok(
        text.includes(v.name) || text.includes(`ENV.${v.key}`),
        `${v.name}: ${path} names neither it nor ENV.${v.key}`,
      );
    }
  }
  assert.equal(ENV.NCCL_LIB, 'COLLBENCH_NCCL_LIB');
  assert.equal(new Set(VARIABLES.map((v) => v.name)).size, VARIABLES.length, 'a variable listed twice');
});

test('docs/environment.md is generated from the table (node --import tsx scripts/gen-env-doc.ts)', () => {
  assert.equal(read('docs/environment.md'), environmentMarkdown());
});

test('collbench help env lists every variable', () => {
  const text = environmentText();
  for (const v of VARIABLES) assert.match(text, new RegExp(`^  ${v.name}$`, 'm'));
});
