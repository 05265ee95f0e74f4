// The layering of bench/ (docs/architecture.md): imports flow one way, from a layer to the ones before it in
// LAYERS; folders of one feature layer never import each other; no value import closes a cycle. Read from the source
// text, so a new upward import, a feature reaching into another or a cycle fails here before anyone has to untangle it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const BENCH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench');

/** One folder per command (and the developer tools): each imports the layers below, never another of them. */
const FEATURES = ['commands', 'compare', 'locate', 'accept', 'workload', 'replay', 'tools'];

/** Lowest first: a module may import from the folders of its own layer and of the layers before it. */
const LAYERS: readonly (readonly string[])[] = [
  ['core', 'numbers'],
  ['collectives', 'config'],
  ['native', 'launch'],
  ['backends'],
  ['report'],
  ['engine'],
  FEATURES,
  ['cli', 'bin'],
];
/** Files at the top of bench/ (version.ts) belong to the lowest layer: anything may read them. */
const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : 'core');
const layerOf = (file: string): number => {
  const i = LAYERS.findIndex((folders) => folders.includes(folderOf(file)));
  assert.ok(i >= 0, `bench/${file}: its folder is not in LAYERS; add it there and to docs/architecture.md`);
  return i;
};
const layerNames = LAYERS.map((folders) => folders.join(' ')).join(' < ');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

// `import … from './x.js'`, `export … from './x.js'` and `await import('./x.js')`; `import type` is type-only.
const STATIC = /^\s*(import|export)\s+(type\s+)?(?:[^;]*?\sfrom\s+)?['"](\.[^'"]+)['"]/gm;
const DYNAMIC = /import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function edges(): Edge[] {
  const out: Edge[] = [];
  for (const path of sources(BENCH)) {
    const from = relative(BENCH, path);
    const text = readFileSync(path, 'utf8');
    const add = (spec: string, typeOnly: boolean): void => {
      const to = normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts');
      out.push({ from, to, typeOnly });
    };
    for (const m of text.matchAll(STATIC)) add(m[3]!, m[2] !== undefined);
    for (const m of text.matchAll(DYNAMIC)) add(m[1]!, false);
  }
  return out;
}

const show = (e: Edge): string => `${e.from} -> ${e.to}${e.typeOnly ? ' (type)' : ''}`;

function upward(all: readonly Edge[]): string[] {
  return all.filter((e) => layerOf(e.to) > layerOf(e.from)).map(show);
}

/** Imports from one feature folder into another (each feature is read and changed on its own). */
function acrossFeatures(all: readonly Edge[]): string[] {
  return all
    .filter(
      (e) =>
        FEATURES.includes(folderOf(e.from)) && FEATURES.includes(folderOf(e.to)) && folderOf(e.from) !== folderOf(e.to),
    )
    .map(show);
}

/** Value-import cycles, each as `a -> b -> a` (type-only imports are erased at run time and left out). */
function cycles(all: readonly Edge[]): string[] {
  const graph = new Map<string, string[]>();
  for (const e of all) if (!e.typeOnly) graph.set(e.from, [...(graph.get(e.from) ?? []), e.to]);
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (u: string): void => {
    state.set(u, 1);
    stack.push(u);
    for (const v of graph.get(u) ?? []) {
      if (state.get(v) === 1) found.push([...stack.slice(stack.indexOf(v)), v].join(' -> '));
      else if (!state.has(v)) visit(v);
    }
    stack.pop();
    state.set(u, 2);
  };
  for (const u of graph.keys()) if (!state.has(u)) visit(u);
  return found;
}

test('imports flow one way: no module imports from a layer above its own', () => {
  assert.deepEqual(upward(edges()), [], `imports that point up (layers, lowest first: ${layerNames})`);
});

test('features do not import each other', () => {
  assert.deepEqual(acrossFeatures(edges()), [], `imports between feature folders (${FEATURES.join(', ')})`);
});

test('no value-import cycle between modules', () => {
  assert.deepEqual(cycles(edges()), []);
});

test('the checks can fail: the parser sees static and dynamic imports; an upward edge and a cycle are reported', () => {
  const all = edges();
  assert.ok(
    all.some((e) => e.from === 'cli/main.ts' && e.to === 'commands/run.ts' && !e.typeOnly),
    'static import not seen',
  );
  assert.ok(
    all.some((e) => e.from === 'cli/main.ts' && e.to === 'commands/report.ts'),
    'dynamic import not seen',
  );
  assert.ok(
    all.some((e) => e.from === 'numbers/run-verdict.ts' && e.to === 'numbers/c-numbers.ts' && !e.typeOnly),
    'same-layer import not seen',
  );
  assert.deepEqual(upward([{ from: 'numbers/bandwidth.ts', to: 'report/format.ts', typeOnly: false }]), [
    'numbers/bandwidth.ts -> report/format.ts',
  ]);
  assert.deepEqual(upward([{ from: 'config/run-options.ts', to: 'collectives/index.ts', typeOnly: false }]), []);
  assert.deepEqual(acrossFeatures([{ from: 'locate/command.ts', to: 'compare/settings.ts', typeOnly: true }]), [
    'locate/command.ts -> compare/settings.ts (type)',
  ]);
  assert.deepEqual(
    acrossFeatures([
      { from: 'locate/command.ts', to: 'locate/runs.ts', typeOnly: false },
      { from: 'locate/runs.ts', to: 'engine/child-runs.ts', typeOnly: false },
    ]),
    [],
  );
  assert.deepEqual(
    cycles([
      { from: 'a.ts', to: 'b.ts', typeOnly: false },
      { from: 'b.ts', to: 'a.ts', typeOnly: false },
    ]),
    ['a.ts -> b.ts -> a.ts'],
  );
  assert.deepEqual(
    cycles([
      { from: 'a.ts', to: 'b.ts', typeOnly: false },
      { from: 'b.ts', to: 'a.ts', typeOnly: true },
    ]),
    [],
  );
});

test('only the CLI entry exits the process', () => {
  const exits = sources(BENCH)
    .map((p) => relative(BENCH, p))
    .filter(
      (f) =>
        !f.startsWith('bin/') && f !== 'cli/main.ts' && /process\.exit\(/.test(readFileSync(join(BENCH, f), 'utf8')),
    );
  assert.deepEqual(exits, []);
});
