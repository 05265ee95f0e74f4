// Every relative link in README.md, docs/*.md and reports/perf/*.md must reach an existing file, and every #anchor a
// heading of that file (GitHub's slugs), so a page moved or a heading renamed cannot leave a dead link behind.
// A small scanner, not a Markdown library: none is in node_modules, and these pages use only ATX headings, inline
// links and fenced code, which it handles (links inside code are not links); its own rules are tested below.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Link {
  line: number;
  target: string;
}
interface Page {
  headings: string[];
  links: Link[];
}

/** Lines outside fenced code blocks (``` or ~~~), numbered from 1: as written, and with inline code spans removed. */
function prose(text: string): [number, string, string][] {
  const out: [number, string, string][] = [];
  let fence: string | null = null;
  text.split('\n').forEach((raw, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(raw);
    if (m) {
      if (fence === null) fence = m[1]!;
      else if (m[1]!.startsWith(fence)) fence = null;
      return;
    }
    if (fence === null) out.push([i + 1, raw, raw.replace(/(`+)[\s\S]*?\1/g, '')]);
  });
  return out;
}

/** GitHub's anchor for a heading (github-slugger): the rendered text lower-cased, punctuation and symbols dropped,
 *  each space a hyphen. */
function slug(heading: string): string {
  const text = heading
    .replace(/`/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[*]/g, '')
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page: one per heading, repeats numbered -1, -2 … as GitHub numbers them. */
function anchors(headings: string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings) {
    const base = slug(h);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function scan(text: string): Page {
  const headings: string[] = [];
  const links: Link[] = [];
  for (const [line, raw, l] of prose(text)) {
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (h) headings.push(h[1]!);
    for (const m of l.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line, target: m[1]! });
    const def = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(l);
    if (def) links.push({ line, target: def[1]! });
  }
  return { headings, links };
}

interface Files {
  exists(path: string): boolean;
  read(path: string): string | null;
}

/** Broken relative links of one page, as `file:line: target (why)`. */
function brokenLinks(file: string, files: Files): string[] {
  const text = files.read(file);
  if (text === null) return [`${file}: cannot read`];
  const out: string[] = [];
  for (const { line, target } of scan(text).links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const dest = path === '' ? file : join(dirname(file), decodeURIComponent(path));
    const where = `${relative(ROOT, file)}:${line}: ${target}`;
    if (path !== '' && !files.exists(dest)) {
      out.push(`${where} (no such file)`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    const destText = dest.endsWith('.md') ? files.read(dest) : null;
    if (destText === null) out.push(`${where} (an anchor into what is not a Markdown file)`);
    else if (!anchors(scan(destText).headings).has(anchor)) out.push(`${where} (no heading #${anchor})`);
  }
  return out;
}

function pages(): string[] {
  const md = (dir: string): string[] =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(ROOT, dir, f));
  return [join(ROOT, 'README.md'), ...md('docs'), ...md('reports/perf')];
}

const disk: Files = {
  exists: existsSync,
  read: (p) => (existsSync(p) && statSync(p).isFile() ? readFileSync(p, 'utf8') : null),
};

test('every relative link in README.md, docs/ and reports/perf/ reaches a file, and every #anchor a heading', () => {
  const files = pages();
  assert.ok(files.length >= 10, `only ${files.length} pages found`);
  assert.deepEqual(
    files.flatMap((f) => brokenLinks(f, disk)),
    [],
  );
});

test('the README links every page of docs/', () => {
  const readme = scan(readFileSync(join(ROOT, 'README.md'), 'utf8')).links.map((l) => l.target.split('#')[0]);
  const missing = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !readme.includes(`docs/${f}`));
  assert.deepEqual(missing, []);
});

test('the scanner: GitHub slugs, repeated headings, code is not a link, broken files and anchors are found', () => {
  assert.equal(slug('Precision you can state: --target-rsd'), 'precision-you-can-state---target-rsd');
  assert.equal(slug('Layers of `bench/`'), 'layers-of-bench');
  assert.equal(slug('NCCL (GPU) backend'), 'nccl-gpu-backend');
  assert.equal(slug('Against chance and against IMB-MPI1'), 'against-chance-and-against-imb-mpi1');
  assert.equal(slug('snake_case — and µs'), 'snake_case--and-µs');
  assert.deepEqual([...anchors(['Notes', 'Notes', 'Notes'])], ['notes', 'notes-1', 'notes-2']);
  const a = join(ROOT, 'virtual', 'a.md');
  const b = join(ROOT, 'virtual', 'b.md');
  const pages: Record<string, string> = {
    [a]: [
      '# A',
      '',
      '## Two words',
      '',
      '## Code `in/a` heading',
      '',
      '[ok](#two-words) [ok](#code-ina-heading) [ok](b.md#b-heading) [ok](https://example.com/x.md#nowhere)',
      '`[not a link](missing.md)`',
      '```',
      '[also not](missing.md)',
      '```',
      '[bad anchor](#three-words) [bad file](c.md) [bad remote anchor](b.md#nowhere)',
      '[ref]: b.md#b-heading',
      '[badref]: d.md',
    ].join('\n'),
    [b]: '# B heading\n',
  };
  const virtual: Files = { exists: (p) => p in pages, read: (p) => pages[p] ?? null };
  assert.deepEqual(
    brokenLinks(a, virtual).map((l) => l.replace(/^[^:]*:\d+: /, '')),
    [
      '#three-words (no heading #three-words)',
      'c.md (no such file)',
      'b.md#nowhere (no heading #nowhere)',
      'd.md (no such file)',
    ],
  );
});
