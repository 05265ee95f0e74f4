// The published JSON Schemas of the documents collbench reads and writes besides run reports (accept's profile,
// baseline and verdict; workload's parameter sizes and result; replay's result): where they live and one compiled ajv
// validator each.
// The published files are the single definition: the loaders and the tests validate against them, so a field cannot
// be added on one side only.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv2020 as Ajv2020Class, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

export type SchemaName =
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
