// Acceptance baselines: what `--save-baseline` writes (per check and size, the per-iteration samples of every run)
// and what `--baseline` reads back, validated against schema/collbench-baseline.v1.schema.json and matched with the
// profile and the world before anything is compared. A mismatch is one line naming what differs (exit 2).
import { UsageError } from '../core/errors.js';
import { formatSize } from '../config/sizes.js';
import type { Profile, ProfileCheck } from './profile.js';
import { errorText, readDocument } from '../report/json-schemas.js';

export const BASELINE_KIND = 'collbench-accept-baseline';
export const BASELINE_SCHEMA_VERSION = 1;

export interface BaselineCheck {
  id: string;
  collective: string;
  dtype: string;
  op: string;
  placement: 'out-of-place' | 'in-place';
  runs: number;
  sizes: { sizeBytes: number; samplesUs: number[] }[];
}

export interface BaselineDocument {
  kind: typeof BASELINE_KIND;
  schemaVersion: typeof BASELINE_SCHEMA_VERSION;
  createdAt: string;
  profile: { name: string; path: string };
  world: { nranks: number; backend: string };
  host: string;
  checks: BaselineCheck[];
}

export interface LoadedBaseline {
  path: string;
  doc: BaselineDocument;
}

const headerOf = (json: unknown): { kind?: unknown; schemaVersion?: unknown } =>
  typeof json === 'object' && json !== null ? json : {};

/** Reads and validates a baseline file; one-line UsageError otherwise. */
export function loadBaseline(path: string): LoadedBaseline {
  const { doc, problem } = readDocument<BaselineDocument>(path, (json) => {
    const o = headerOf(json);
    return o.kind === BASELINE_KIND && o.schemaVersion === BASELINE_SCHEMA_VERSION ? 'collbench-baseline.v1' : null;
  });
  if (doc) return { path, doc };
  if (problem.stage === 'read' || problem.stage === 'json') {
    const code = problem.stage === 'read' ? problem.code : undefined;
    throw UsageError.forFlag('--baseline', `cannot read ${path}: ${code ?? problem.message}`);
  }
  if (problem.stage === 'schema') {
    const first = problem.errors[0]!;
    throw UsageError.forFlag(
      '--baseline',
      `${path} does not match its schema: ${first.instancePath || '/'}: ${errorText(first)}`,
    );
  }
  const o = headerOf(problem.json);
  if (o.kind !== BASELINE_KIND) {
    throw UsageError.forFlag(
      '--baseline',
      `${path} is not a collbench accept baseline (kind ${JSON.stringify(o.kind ?? null)}, expected "${BASELINE_KIND}")`,
    );
  }
  throw UsageError.forFlag(
    '--baseline',
    `${path} has baseline schema version ${JSON.stringify(o.schemaVersion ?? null)}; this collbench reads version ${BASELINE_SCHEMA_VERSION} (save a new baseline)`,
  );
}

const sizeList = (sizes: readonly number[]): string =>
  sizes.length <= 4
    ? sizes.map(formatSize).join(', ')
    : `${formatSize(sizes[0]!)}..${formatSize(sizes[sizes.length - 1]!)} (${sizes.length} sizes)`;

/** The profile's compared checks must be the baseline's, with the same collective, datatype, op, placement and sizes. */
export function matchBaseline(b: LoadedBaseline, profile: Profile): Map<string, BaselineCheck> {
  const fail = (what: string): never => {
    throw UsageError.forFlag('--baseline', `${b.path}: ${what}`);
  };
  const compared = profile.checks.filter((c) => c.baseline);
  const byId = new Map(b.doc.checks.map((c) => [c.id, c]));
  const wanted = new Set(compared.map((c) => c.id));
  for (const c of compared) {
    const bc = byId.get(c.id);
    if (!bc) fail(`has no check '${c.id}' (it has ${b.doc.checks.map((x) => `'${x.id}'`).join(', ') || 'none'})`);
    for (const key of ['collective', 'dtype', 'op', 'placement'] as const) {
      if (bc![key] !== c[key]) fail(`check '${c.id}': ${key} ${bc![key]} in the baseline, ${c[key]} in the profile`);
    }
    const sizes = bc!.sizes.map((s) => s.sizeBytes);
    if (sizes.join() !== c.sizes.join()) {
      fail(`check '${c.id}': sizes ${sizeList(sizes)} in the baseline, ${sizeList(c.sizes)} in the profile`);
    }
  }
  const extra = b.doc.checks.find((c) => !wanted.has(c.id));
  if (extra) fail(`has check '${extra.id}', which profile ${profile.name} does not compare`);
  return new Map(compared.map((c) => [c.id, byId.get(c.id)!]));
}

/** The world a run had must be the baseline's: same rank count and backend. */
export function matchWorld(b: LoadedBaseline, world: { nranks: number; backend: string }): void {
  if (world.nranks !== b.doc.world.nranks) {
    throw UsageError.forFlag(
      '--baseline',
      `${b.path} was taken on ${b.doc.world.nranks} ranks; this run has ${world.nranks}`,
    );
  }
  const name = (s: string): string => s.split(' ')[0]!;
  if (name(world.backend) !== name(b.doc.world.backend)) {
    throw UsageError.forFlag(
      '--baseline',
      `${b.path} was taken with backend ${b.doc.world.backend}; this run uses ${world.backend}`,
    );
  }
}

export function baselineCheck(c: ProfileCheck, runs: number, samples: Map<number, number[]>): BaselineCheck {
  return {
    id: c.id,
    collective: c.collective,
    dtype: c.dtype,
    op: c.op,
    placement: c.placement,
    runs,
    sizes: c.sizes.map((s) => ({ sizeBytes: s, samplesUs: samples.get(s) ?? [] })),
  };
}
