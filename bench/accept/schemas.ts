// The JSON Schemas of `collbench accept` (schema/collbench-profile.v1, -baseline.v1, -accept.v1): where they
// live and one compiled ajv validator each. The published files are the single definition: the loaders below
// and the tests validate against them, so a field cannot be added on one side only.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv2020 as Ajv2020Class, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

export type AcceptSchemaName = 'collbench-profile.v1' | 'collbench-baseline.v1' | 'collbench-accept.v1';

/** <package>/schema/NAME.schema.json (two levels above this file in bench/ and in dist/). */
export function acceptSchemaPath(name: AcceptSchemaName): string {
  return join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'schema', `${name}.schema.json`);
}

const validators = new Map<AcceptSchemaName, ValidateFunction>();

export function acceptValidator(name: AcceptSchemaName): ValidateFunction {
  let v = validators.get(name);
  if (!v) {
    const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020Class };
    const schema = JSON.parse(readFileSync(acceptSchemaPath(name), 'utf8')) as Record<string, unknown>;
    v = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true }).compile(schema);
    validators.set(name, v);
  }
  return v;
}

/** Validation errors as `/checks/0/minBusBwGBps: must be > 0` lines; [] when valid. */
export function schemaErrors(name: AcceptSchemaName, doc: unknown): ErrorObject[] {
  const validate = acceptValidator(name);
  return validate(doc) ? [] : [...(validate.errors ?? [])];
}

export function errorText(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  if ('additionalProperty' in p || 'unevaluatedProperty' in p) return 'unknown key';
  if (e.schemaPath.includes('/$defs/size/')) return 'must be a size in bytes: an integer, or 8, 64K, 1M, 2G';
  const extra = 'allowedValues' in p ? `: ${(p.allowedValues as unknown[]).map(String).join(', ')}`
    : 'allowedValue' in p ? ` ${JSON.stringify(p.allowedValue)}` : '';
  return `${e.message ?? 'invalid'}${extra}`;
}
