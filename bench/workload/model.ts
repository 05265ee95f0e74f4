// The parameters of the model a workload stands for, in definition order (the order PyTorch's module.parameters()
// yields them): a synthetic decoder-only transformer sized from --params (and --layers), or a user's own list of
// per-parameter element counts (--param-sizes FILE). Every rank builds the same list, so nothing is exchanged.
import { UsageError } from '../core/errors.js';
import { errorText, readDocument } from '../report/json-schemas.js';

export interface Param {
  name: string;
  numel: number;
  /** The transformer block this parameter belongs to (FSDP wraps blocks into units); null outside the blocks. */
  layer: number | null;
}

export interface Model {
  params: Param[];
  /** How the list was made, in words (the output's header). */
  source: string;
  layers: number;
  totalParams: number;
}

/** Vocabulary of the synthetic model's embedding (a Llama-style 32 k tokenizer). */
export const SYNTHETIC_VOCAB = 32000;

/** Layers a synthetic model of `params` parameters gets when --layers is not given: cbrt(params) / 60, which gives
 *  the depth of common decoders (1e9: 17, 7e9: 32, 70e9: 69), at least 1. */
export function defaultLayers(params: number): number {
  return Math.max(1, Math.round(Math.cbrt(params) / 60));
}

/**
 * A decoder-only transformer of about `params` parameters: embedding (vocab × h), then per layer a norm (h), fused
 * QKV (h × 3h), attention output (h × h), a norm (h), MLP up (h × 4h) and down (4h × h) — 12h² + 2h per layer — and
 * a final norm (h); the output head is tied to the embedding. h solves 12·L·h² + (2L + vocab + 1)·h = params,
 * rounded to a multiple of 8 (at least 8), so the total is close to, not exactly, `params`.
 */
export function syntheticModel(params: number, layers = defaultLayers(params), vocab = SYNTHETIC_VOCAB): Model {
  if (!(params > 0) || !Number.isFinite(params))
    throw UsageError.forFlag('--params', `must be a positive number of parameters, got ${params}`);
  if (!Number.isInteger(layers) || layers < 1)
    throw UsageError.forFlag('--layers', `must be a whole number >= 1, got ${layers}`);
  const b = 2 * layers + vocab + 1;
  const h = Math.max(8, Math.round((-b + Math.sqrt(b * b + 48 * layers * params)) / (24 * layers) / 8) * 8);
  const list: Param[] = [{ name: 'embed.weight', numel: vocab * h, layer: null }];
  for (let l = 0; l < layers; l++) {
    const at = (name: string, numel: number): Param => ({ name: `layers.${l}.${name}`, numel, layer: l });
    list.push(
      at('norm1.weight', h),
      at('attn.qkv.weight', 3 * h * h),
      at('attn.out.weight', h * h),
      at('norm2.weight', h),
      at('mlp.up.weight', 4 * h * h),
      at('mlp.down.weight', 4 * h * h),
    );
  }
  list.push({ name: 'norm.weight', numel: h, layer: null });
  const total = list.reduce((a, p) => a + p.numel, 0);
  return {
    params: list,
    layers,
    totalParams: total,
    source: `synthetic decoder: ${layers} layers, hidden ${h}, vocab ${vocab}, ${total.toExponential(3)} parameters`,
  };
}

/** The block a parameter name places it in: the first dotted number (`layers.3.`, `h.3.`, `blocks.3.`), or null. */
export function layerOfName(name: string): number | null {
  const m = /(?:^|\.)(\d+)(?:\.|$)/.exec(name);
  return m ? Number(m[1]) : null;
}

/** One entry of a --param-sizes file, as schema/collbench-param-sizes.v1.schema.json allows it. */
export type ParamEntry = number | { name?: string; numel?: number; shape?: number[]; layer?: number | null };

/** A model from a --param-sizes document already checked against its schema (a list of entries, or {params: [...]}). */
export function modelFromEntries(entries: readonly ParamEntry[], source: string): Model {
  const params = entries.map((e, i): Param => {
    if (typeof e === 'number') return { name: `param.${i}`, numel: e, layer: null };
    const numel = e.numel ?? (e.shape ?? []).reduce((a, d) => a * d, 1);
    const name = e.name ?? `param.${i}`;
    return { name, numel, layer: e.layer !== undefined ? e.layer : layerOfName(name) };
  });
  const bad = params.findIndex((p) => !(p.numel > 0) || !Number.isSafeInteger(p.numel));
  if (bad >= 0)
    throw UsageError.forFlag(
      '--param-sizes',
      `${source}: entry ${bad} (${params[bad]!.name}) has no positive whole element count`,
    );
  const layers = new Set(params.map((p) => p.layer).filter((l) => l !== null)).size;
  const total = params.reduce((a, p) => a + p.numel, 0);
  return {
    params,
    layers,
    totalParams: total,
    source: `${source}: ${params.length} parameters, ${layers} blocks, ${total.toExponential(3)} in all`,
  };
}

/** The model of --params N [--layers L], or of --param-sizes FILE (checked against its schema; one-line UsageError). */
export function loadModel(params: number | null, layers: number | null, paramSizes: string | null): Model {
  if (params !== null) return syntheticModel(params, layers ?? undefined);
  const file = paramSizes!;
  const { doc, problem } = readDocument<ParamEntry[] | { params: ParamEntry[] }>(file, 'collbench-param-sizes.v1');
  if (problem?.stage === 'read' || problem?.stage === 'json') {
    throw UsageError.forFlag('--param-sizes', `${file}: ${problem.message}`);
  }
  if (problem) {
    const errors = problem.errors;
    // The deepest error says most (`/3/numel: must be >= 1` rather than `/3: must be integer` of the other branch).
    const e =
      errors.filter((x) => x.keyword !== 'oneOf').sort((x, y) => y.instancePath.length - x.instancePath.length)[0] ??
      errors[0]!;
    throw UsageError.forFlag(
      '--param-sizes',
      `${file}: ${e.instancePath || '/'}: ${errorText(e)} (schema/collbench-param-sizes.v1.schema.json)`,
    );
  }
  const entries = Array.isArray(doc) ? doc : doc!.params;
  return modelFromEntries(entries, file);
}
