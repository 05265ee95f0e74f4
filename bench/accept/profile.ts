// Acceptance profiles (`collbench accept --profile FILE`): YAML or JSON read with the `yaml` package's safe parser
// (why: docs/accept.md, "Libraries"), checked against schema/collbench-profile.v1.schema.json and resolved into
// the checks the command runs. Every error is one line naming the file, the line and the key.
import { readFileSync } from 'node:fs';
import { isMap, LineCounter, parseDocument, type Document } from 'yaml';
import { UsageError } from '../core/errors.js';
import type { CollectiveName, DTypeName, OpName } from '../core/types.js';
import { formatSize, parseSize, sweepSizes } from '../config/sizes.js';
import { errorText, schemaErrors } from '../report/json-schemas.js';
import type { ErrorObject } from 'ajv/dist/2020.js';

export const PROFILE_KIND = 'collbench-profile';

export type Placement = 'out-of-place' | 'in-place';

export interface Attempts {
  pass: number;
  of: number;
}

/** One check of a profile with its defaults filled in. */
export interface ProfileCheck {
  /** Position in the profile (0-based) and how the verdict names it (unique in the profile). */
  index: number;
  id: string;
  collective: CollectiveName;
  minBytes: number;
  maxBytes: number;
  stepFactor: number;
  /** The sizes the run sweeps (minBytes × stepFactor^k ≤ maxBytes). */
  sizes: number[];
  iters: number;
  warmupIters: number;
  dtype: DTypeName;
  op: OpName;
  placement: Placement;
  attempts: Attempts;
  minBusBwGBps: number | null;
  maxTimeUs: number | null;
  maxCvPct: number | null;
  wrong: boolean;
  /** links: true: every run with --links (nccl backend); a link named slow fails the check (accept/links.ts). */
  links: boolean;
  /** Compared with --baseline when one is given. */
  baseline: boolean;
  /** Its own tolerance for the baseline comparison (null: --tolerance). */
  baselineTolerance: number | null;
}

export interface Profile {
  path: string;
  name: string;
  description: string;
  checks: ProfileCheck[];
}

export const RUN_DEFAULTS = {
  iters: 20,
  warmupIters: 5,
  stepFactor: 2,
  dtype: 'float' as DTypeName,
  op: 'sum' as OpName,
  placement: 'out-of-place' as Placement,
  attempts: { pass: 1, of: 1 },
};

type Path = (string | number)[];

/** Where a path (or its last key) is in the source: 1-based line. */
function lineOf(doc: Document, lines: LineCounter, path: Path, key?: string): number {
  for (let p = [...path]; ; p = p.slice(0, -1)) {
    const node = doc.getIn(p, true) as unknown;
    if (key !== undefined && p.length === path.length && isMap(node)) {
      const pair = node.items.find((i) => (i.key as { value?: unknown } | null)?.value === key);
      const range = (pair?.key as { range?: [number, number, number] } | null)?.range;
      if (range) return lines.linePos(range[0]).line;
    }
    const range = (node as { range?: [number, number, number] } | null)?.range;
    if (range) return lines.linePos(range[0]).line;
    if (p.length === 0) return 1;
  }
}

const pathOf = (pointer: string): Path =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s));

const keyText = (path: Path): string =>
  path.length === 0
    ? '(top level)'
    : path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${p}`)).join('');

/** The error that says most: an unknown key, else the deepest path, else the first. */
function pickError(errors: ErrorObject[]): ErrorObject {
  const unknown = errors.find((e) => e.keyword === 'unevaluatedProperties' || e.keyword === 'additionalProperties');
  if (unknown) return unknown;
  const depth = (e: ErrorObject): number => pathOf(e.instancePath).length + (e.keyword === 'required' ? 1 : 0);
  // anyOf/oneOf summaries say less than the branch errors under them
  const ranked = errors.filter((e) => !['anyOf', 'oneOf', 'allOf', 'if'].includes(e.keyword));
  return (ranked.length ? ranked : errors).reduce((best, e) => (depth(e) > depth(best) ? e : best));
}

export class ProfileError extends UsageError {}

/** Reads, validates and resolves a profile; throws a one-line ProfileError (`FILE:LINE: KEY: what`). */
export function loadProfile(path: string): Profile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ProfileError(
      `--profile: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  return parseProfile(text, path);
}

export function parseProfile(text: string, path: string): Profile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
  const fail = (line: number, key: string, what: string): never => {
    throw new ProfileError(`${path}:${line}: ${key}: ${what}`);
  };
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = lines.linePos(e.pos[0]).line;
    fail(line, 'syntax', e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, ''));
  }
  const data = doc.toJS({ maxAliasCount: 100 }) as unknown;
  const errors = schemaErrors('collbench-profile.v1', data);
  if (errors.length > 0) {
    const e = pickError(errors);
    const path0 = pathOf(e.instancePath);
    const p = e.params as Record<string, unknown>;
    const key = (p.unevaluatedProperty ?? p.additionalProperty ?? p.missingProperty) as string | undefined;
    // a missing one of several (anyOf of required): name them all, on the object's line
    const alternatives =
      e.keyword === 'required' && /\/anyOf\/\d+\/required$/.test(e.schemaPath)
        ? errors
            .filter(
              (x) =>
                x.keyword === 'required' &&
                x.instancePath === e.instancePath &&
                /\/anyOf\/\d+\/required$/.test(x.schemaPath),
            )
            .map((x) => String((x.params as { missingProperty: string }).missingProperty))
        : [];
    if (alternatives.length > 1)
      fail(lineOf(doc, lines, path0), keyText(path0), `needs at least one of ${alternatives.join(', ')}`);
    const named = key !== undefined ? [...path0, key] : path0;
    fail(lineOf(doc, lines, path0, p.missingProperty === undefined ? key : undefined), keyText(named), errorText(e));
  }
  return resolveProfile(data as RawProfile, path, (at, key, what) =>
    fail(lineOf(doc, lines, at, key), keyText([...at, key]), what),
  );
}

interface RawRun {
  iters?: number;
  warmupIters?: number;
  stepFactor?: number;
  dtype?: DTypeName;
  op?: OpName;
  placement?: Placement;
  attempts?: Attempts;
}
interface RawCheck extends RawRun {
  name?: string;
  collective: CollectiveName;
  minBytes: number | string;
  maxBytes: number | string;
  minBusBwGBps?: number;
  maxTimeUs?: number;
  maxCvPct?: number;
  wrong?: 0;
  links?: boolean;
  baseline?: boolean;
  baselineTolerance?: number;
}
interface RawProfile {
  kind: string;
  version: 1;
  name: string;
  description?: string;
  defaults?: RawRun;
  checks: RawCheck[];
}

function resolveProfile(raw: RawProfile, path: string, fail: (at: Path, key: string, what: string) => never): Profile {
  const d = { ...RUN_DEFAULTS, ...raw.defaults };
  if (d.attempts.pass > d.attempts.of)
    fail(['defaults', 'attempts'], 'pass', `${d.attempts.pass} passes of ${d.attempts.of} attempts cannot happen`);
  const ids = new Map<string, number>();
  const checks = raw.checks.map((c, index): ProfileCheck => {
    const at: Path = ['checks', index];
    const size = (key: 'minBytes' | 'maxBytes'): number => {
      try {
        return parseSize(String(c[key]), key);
      } catch (e) {
        return fail(at, key, (e as Error).message.replace(/^\w+: /, ''));
      }
    };
    const minBytes = size('minBytes'),
      maxBytes = size('maxBytes');
    if (minBytes > maxBytes) fail(at, 'maxBytes', `${formatSize(maxBytes)} is below minBytes ${formatSize(minBytes)}`);
    if (minBytes === 0 && maxBytes > 0)
      fail(at, 'minBytes', 'a sweep from 0 bytes never grows; start at 1 byte or more');
    const r = { ...d, ...c };
    if (r.attempts.pass > r.attempts.of)
      fail(at, 'attempts', `${r.attempts.pass} passes of ${r.attempts.of} attempts cannot happen`);
    const id = c.name ?? `${c.collective} ${formatSize(minBytes)}-${formatSize(maxBytes)}`;
    if (ids.has(id))
      fail(
        at,
        c.name !== undefined ? 'name' : 'collective',
        `check '${id}' is already check ${ids.get(id)! + 1}; give one a name`,
      );
    ids.set(id, index);
    return {
      index,
      id,
      collective: c.collective,
      minBytes,
      maxBytes,
      stepFactor: r.stepFactor,
      sizes: sweepSizes(minBytes, maxBytes, r.stepFactor, 0),
      iters: r.iters,
      warmupIters: r.warmupIters,
      dtype: r.dtype,
      op: r.op,
      placement: r.placement,
      attempts: { ...r.attempts },
      minBusBwGBps: c.minBusBwGBps ?? null,
      maxTimeUs: c.maxTimeUs ?? null,
      maxCvPct: c.maxCvPct ?? null,
      wrong: c.wrong === 0,
      links: c.links === true,
      baseline: c.baseline ?? true,
      baselineTolerance: c.baselineTolerance ?? null,
    };
  });
  return { path, name: raw.name, description: raw.description ?? '', checks };
}
