// The axes of `collbench compare` (--env NAME=v1,v2, --mca NAME=v1,v2, --gloo-algo a,b) and their product plus the
// default (no setting) as baseline: what people do by hand with `mpirun -x NCCL_ALGO=Ring` vs `Tree`. Pure.
import { UsageError } from '../core/errors.js';

export type AxisKind = 'env' | 'mca' | 'gloo-algo';

/** One axis as given on the command line: a name and the values it takes, in order. */
export interface Axis {
  kind: AxisKind;
  name: string; // NCCL_ALGO; coll_tuned_allreduce_algorithm; 'gloo-algo'
  values: string[];
}

/** One value of one axis, as applied to one combination. */
export interface Setting {
  kind: AxisKind;
  name: string;
  value: string;
}

/** One combination: its settings and what they become for the child process. */
export interface Combination {
  id: string; // C0 (the default), C1, C2, …
  baseline: boolean; // the default: no setting at all
  settings: Setting[];
  label: string; // "NCCL_ALGO=Ring NCCL_PROTO=LL", "mca coll_tuned_allreduce_algorithm=4", "default"
  env: Record<string, string>; // variables set for the child (on top of the inherited environment)
  unset: string[]; // inherited variables removed (an axis' own variables, for the baseline)
  args: string[]; // arguments appended to the program's (--gloo-algo ring)
}

/** Open MPI reads any MCA parameter from OMPI_MCA_<name>; coll_tuned_* forcing needs dynamic rules on. */
export const MCA_ENV_PREFIX = 'OMPI_MCA_';
export const DYNAMIC_RULES = 'coll_tuned_use_dynamic_rules';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MCA_NAME = /^[A-Za-z0-9_]+$/;

/** More combinations than this is almost surely a typo (and days of runs). */
export const MAX_COMBINATIONS = 512;

/**
 * Splits `v1,v2,…` on unescaped commas: `\,` is a literal comma (NCCL_ALGO itself takes lists such as
 * `allreduce:tree,ring`), `\\` a backslash. Throws on an empty item.
 */
export function splitValues(flag: string, name: string, text: string): string[] {
  const values: string[] = [];
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && (text[i + 1] === ',' || text[i + 1] === '\\')) {
      cur += text[++i];
      continue;
    }
    if (c === ',') {
      values.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  values.push(cur);
  if (values.some((v) => v === '')) {
    throw UsageError.forFlag(
      flag,
      `${name}: empty value in '${text}' (values are separated by commas; write \\, for a comma inside a value)`,
    );
  }
  const dup = values.find((v, i) => values.indexOf(v) !== i);
  if (dup !== undefined) throw UsageError.forFlag(flag, `${name}: value '${dup}' given twice`);
  return values;
}

/** `--env NAME=v1,v2` or `--mca NAME=v1,v2` → an axis. */
export function parseAxis(kind: 'env' | 'mca', spec: string): Axis {
  const flag = `--${kind}`;
  const eq = spec.indexOf('=');
  if (eq < 0) throw UsageError.forFlag(flag, `expected NAME=value1,value2,…, got '${spec}'`);
  const name = spec.slice(0, eq);
  const pattern = kind === 'env' ? ENV_NAME : MCA_NAME;
  if (!pattern.test(name)) {
    throw UsageError.forFlag(
      flag,
      `'${name}' is not a valid ${kind === 'env' ? 'environment variable' : 'MCA parameter'} name`,
    );
  }
  if (kind === 'mca' && name.startsWith(MCA_ENV_PREFIX)) {
    throw UsageError.forFlag(flag, `give the MCA parameter name without ${MCA_ENV_PREFIX} (or use --env ${name}=…)`);
  }
  const values = splitValues(flag, name, spec.slice(eq + 1));
  if (kind === 'env') for (const v of values) checkNcclChoice(name, v);
  return { kind, name, values };
}

/** The names NCCL_ALGO and NCCL_PROTO take (NCCL 2.2x, src/graph/tuning.cc ncclAlgoStr/ncclProtoStr; case-insensitive). */
export const NCCL_CHOICES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  NCCL_ALGO: ['Tree', 'Ring', 'CollnetDirect', 'CollnetChain', 'NVLS', 'NVLSTree', 'PAT'],
  NCCL_PROTO: ['LL', 'LL128', 'Simple'],
});

/** Refuses a value of NCCL_ALGO / NCCL_PROTO that names no algorithm or protocol (NCCL itself would refuse it, in every
 *  run): `Ring`, `^LL128`, `Tree,Ring`, `allreduce:tree,ring;broadcast:ring` pass; `Rnig` does not. */
function checkNcclChoice(variable: string, value: string): void {
  const choices = NCCL_CHOICES[variable];
  if (!choices) return;
  for (const part of value.split(';')) {
    const list = part.includes(':') ? part.slice(part.indexOf(':') + 1) : part;
    for (const item of list.replace(/^\^/, '').split(',')) {
      if (!choices.some((c) => c.toLowerCase() === item.trim().toLowerCase())) {
        throw UsageError.forFlag(
          '--env',
          `${variable}: '${item}' in '${value}' is no ${variable === 'NCCL_ALGO' ? 'algorithm' : 'protocol'} ` +
            `NCCL knows; valid: ${choices.join(', ')} (a list, ^ to exclude, or coll:list;…)`,
        );
      }
    }
  }
}

/** `--gloo-algo ring,bcube` → an axis (values are checked by the program's own option parser). */
export function parseGlooAxis(spec: string): Axis {
  return { kind: 'gloo-algo', name: 'gloo-algo', values: splitValues('--gloo-algo', 'gloo-algo', spec) };
}

/** The environment variable an axis sets, if any. */
export function axisVariable(a: { kind: AxisKind; name: string }): string | null {
  if (a.kind === 'env') return a.name;
  if (a.kind === 'mca') return MCA_ENV_PREFIX + a.name;
  return null;
}

/** Refuses two axes on one variable (twice the same --env, or --env OMPI_MCA_x beside --mca x). */
export function checkAxes(axes: readonly Axis[]): void {
  if (axes.length === 0) {
    throw new UsageError(
      'compare: no settings to compare; give at least one --env NAME=v1,v2, --mca NAME=v1,v2 or --gloo-algo a,b',
    );
  }
  const seen = new Map<string, string>();
  for (const a of axes) {
    const key = axisVariable(a) ?? a.name;
    const shown = a.kind === 'env' ? `--env ${a.name}` : a.kind === 'mca' ? `--mca ${a.name}` : '--gloo-algo';
    const prev = seen.get(key);
    if (prev !== undefined)
      throw UsageError.forFlag(shown.split(' ')[0]!, `${shown} repeats ${prev}; give all values in one list`);
    seen.set(key, shown);
  }
  const total = axes.reduce((n, a) => n * a.values.length, 1);
  if (total > MAX_COMBINATIONS) {
    throw new UsageError(
      `compare: ${total} combinations is more than ${MAX_COMBINATIONS}; compare fewer values at a time`,
    );
  }
}

function settingLabel(s: Setting): string {
  if (s.kind === 'env') return `${s.name}=${s.value}`;
  if (s.kind === 'mca') return `mca ${s.name}=${s.value}`;
  return `gloo-algo=${s.value}`;
}

/**
 * The default (C0, no setting) followed by the cartesian product of the axes, first axis slowest
 * (C1 = first value of every axis). A coll_tuned_* MCA setting also sets coll_tuned_use_dynamic_rules=1
 * (without it Open MPI ignores the forced algorithm) unless that parameter is an axis itself. The
 * baseline unsets every variable an axis sets, so an inherited NCCL_ALGO cannot leak into "default".
 */
export function combinations(axes: readonly Axis[]): Combination[] {
  checkAxes(axes);
  const explicitRules = axes.some((a) => a.kind === 'mca' && a.name === DYNAMIC_RULES);
  const unsetForBaseline = new Set<string>();
  for (const a of axes) {
    const v = axisVariable(a);
    if (v) unsetForBaseline.add(v);
    if (a.kind === 'mca' && a.name.startsWith('coll_tuned_')) unsetForBaseline.add(MCA_ENV_PREFIX + DYNAMIC_RULES);
  }
  const out: Combination[] = [
    {
      id: 'C0',
      baseline: true,
      settings: [],
      label: 'default',
      env: {},
      unset: [...unsetForBaseline].sort(),
      args: [],
    },
  ];
  let product: Setting[][] = [[]];
  for (const a of axes) {
    product = product.flatMap((prefix) => a.values.map((value) => [...prefix, { kind: a.kind, name: a.name, value }]));
  }
  product.forEach((settings, i) => {
    const env: Record<string, string> = {};
    const args: string[] = [];
    for (const s of settings) {
      if (s.kind === 'gloo-algo') {
        args.push('--gloo-algo', s.value);
        continue;
      }
      env[axisVariable(s)!] = s.value;
      if (s.kind === 'mca' && s.name.startsWith('coll_tuned_') && !explicitRules)
        env[MCA_ENV_PREFIX + DYNAMIC_RULES] = '1';
    }
    out.push({
      id: `C${i + 1}`,
      baseline: false,
      settings,
      label: settings.map(settingLabel).join(' '),
      env,
      unset: [],
      args,
    });
  });
  return out;
}

/** The child's environment for a combination: the inherited one, minus `unset`, plus `env`. */
export function childEnv(
  base: NodeJS.ProcessEnv,
  c: Combination,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const k of c.unset) delete env[k];
  return { ...env, ...c.env, ...extra };
}
