// The published JSON Schemas (schema/*.schema.json) of every document collbench writes or reads, one compiled ajv
// validator each, and the one reader of such documents (read, parse, check against its schema). The published files
// are the single definition: the readers and the tests validate against them, so a field cannot be added on one side.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv2020 as Ajv2020Class, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

export type SchemaName =
  | 'collbench-report.v1'
  | 'collbench-report.v2'
  | 'collbench-locate.v2'
  | 'collbench-profile.v1'
  | 'collbench-baseline.v1'
  | 'collbench-accept.v1'
  | 'collbench-param-sizes.v1'
  | 'collbench-workload.v1'
  | 'collbench-replay.v1';

/** <package>/schema/NAME.schema.json (two levels above this file in bench/ and in dist/). */
export function schemaPath(name: SchemaName): string {
  return join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'schema', `${name}.schema.json`);
}

const validators = new Map<SchemaName, ValidateFunction>();

export function schemaValidator(name: SchemaName): ValidateFunction {
  let v = validators.get(name);
  if (!v) {
    // ajv is loaded on first use only: a benchmark run writes reports but never validates them.
    const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020Class };
    const schema = JSON.parse(readFileSync(schemaPath(name), 'utf8')) as Record<string, unknown>;
    v = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true }).compile(schema);
    validators.set(name, v);
  }
  return v;
}

/** Validation errors as `/checks/0/minBusBwGBps: must be > 0` lines; [] when valid. */
export function schemaErrors(name: SchemaName, doc: unknown): ErrorObject[] {
  const validate = schemaValidator(name);
  return validate(doc) ? [] : [...(validate.errors ?? [])];
}

export function errorText(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  if ('additionalProperty' in p || 'unevaluatedProperty' in p) return 'unknown key';
  if (e.schemaPath.includes('/$defs/size/')) return 'must be a size in bytes: an integer, or 8, 64K, 1M, 2G';
  const extra =
    'allowedValues' in p
      ? `: ${(p.allowedValues as unknown[]).map(String).join(', ')}`
      : 'allowedValue' in p
        ? ` ${JSON.stringify(p.allowedValue)}`
        : '';
  return `${e.message ?? 'invalid'}${extra}`;
}

/** Why a document file cannot be used: unreadable (`code`: the file system's), not JSON, not the kind of document the
 *  caller reads (`json`: what was parsed), or not matching its schema (ajv's errors). Callers word it for their users. */
export type DocumentProblem =
  | { stage: 'read'; message: string; code: string | undefined }
  | { stage: 'json'; message: string }
  | { stage: 'kind'; json: unknown }
  | { stage: 'schema'; json: unknown; errors: ErrorObject[] };

export type DocumentRead<T, P = DocumentProblem> = { doc: T; problem: null } | { doc: null; problem: P };

/**
 * The one reader of collbench's JSON documents (run reports, replays, baselines, parameter sizes): the file parsed and
 * checked against `schema`, or against what `schema(json)` picks from the parsed document (null: not a kind the caller
 * reads).
 */
export function readDocument<T>(
  path: string,
  schema: SchemaName,
): DocumentRead<T, Exclude<DocumentProblem, { stage: 'kind' }>>;
export function readDocument<T>(path: string, schema: (json: unknown) => SchemaName | null): DocumentRead<T>;
export function readDocument<T>(
  path: string,
  schema: SchemaName | ((json: unknown) => SchemaName | null),
): DocumentRead<T> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { doc: null, problem: { stage: 'read', message: err.message, code: err.code } };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { doc: null, problem: { stage: 'json', message: (e as Error).message } };
  }
  const name = typeof schema === 'string' ? schema : schema(json);
  if (name === null) return { doc: null, problem: { stage: 'kind', json } };
  const errors = schemaErrors(name, json);
  return errors.length ? { doc: null, problem: { stage: 'schema', json, errors } } : { doc: json as T, problem: null };
}
