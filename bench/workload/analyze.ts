// From the measured steps to the answer: per configuration the median step time over repeats, the bus bandwidth,
// how much communication the stand-in compute hid (with its interval, so noise is called noise), and the recommended
// configuration with its margin over each other one (numbers/stats.ts, as compare and accept).
import { getCollective } from '../collectives/index.js';
import { bootstrapPaired, bootstrapRatio, holm, mannWhitneyP, medianOf, SIGNIFICANCE_LEVEL } from '../numbers/stats.js';
import type { Configuration, WorkloadPlan } from './plan.js';

/** What one repeat of one configuration measured (rank 0). */
export interface RepeatSamples {
  /** Per-step times with no stand-in compute (µs, max over processes). */
  commUs: number[];
  /** The same with the compute gaps, when --compute-ms > 0. */
  stepUs: number[] | null;
  /** The busy time actually spent per step (µs, rank 0's process). */
  computeUs: number;
  wrong: number;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  perRepeat: number[];
}

export interface ConfigurationSummary {
  value: number;
  label: string;
  calls: number;
  bytesPerStep: number;
  /** Bytes weighted by each collective's bus factor (nccl-tests' busbw), per step. */
  busBytesPerStep: number;
  comm: Spread;
  step: Spread | null;
  computeUs: number | null;
  /** Bus bytes per step over the median communication time (GB/s). */
  busBwGBps: number;
  /** Share of the communication time hidden behind the compute: (comm + compute − step) / comm, in %. */
  overlapPct: number | null;
  /** overlapPct's interval and what it allows saying; null without compute. */
  overlap: Overlap | null;
  wrong: number;
}

/**
 * The overlap with a 95 % bootstrap interval over the repeats (each repeat's comm, step and compute resampled
 * together). `hidden`: the interval lies above 0, some communication was hidden; `none`: it lies below 0, the step
 * with compute took longer than communication and compute together (nothing hidden, something added: e.g. ranks'
 * compute not ending together); `noise`: it contains 0, the difference is within the spread of the repeats (as when
 * the communication is tiny against the compute). Only `hidden` is a figure worth printing.
 */
export interface Overlap {
  lo: number;
  hi: number;
  level: number;
  verdict: 'hidden' | 'none' | 'noise';
}

export interface Margin {
  value: number;
  label: string;
  /** median(other) / median(recommended) of the per-repeat medians, with a 95 % bootstrap interval. */
  ratio: number;
  lo: number | null;
  hi: number | null;
  /** One-sided Mann-Whitney p (the recommended one is faster), before the Holm correction. */
  p: number;
  significant: boolean;
}

export interface Recommendation {
  value: number;
  label: string;
  /** Which time decided: the step with compute when there is compute, else communication alone. */
  metric: 'step' | 'comm';
  margins: Margin[];
}

function spread(perRepeat: number[]): Spread {
  return { median: medianOf(perRepeat), min: Math.min(...perRepeat), max: Math.max(...perRepeat), perRepeat };
}

function busBytes(c: Configuration, nranks: number): number {
  return c.ops.reduce((a, o) => a + o.bytes * getCollective(o.collective).busBwFactor(nranks), 0);
}

interface RepeatTimes {
  comm: number;
  step: number;
  compute: number;
}

/** (comm + compute − step) / comm of the medians over the repeats, in %. */
function overlapOf(reps: readonly RepeatTimes[]): number {
  const comm = medianOf(reps.map((r) => r.comm));
  return ((comm + medianOf(reps.map((r) => r.compute)) - medianOf(reps.map((r) => r.step))) / comm) * 100;
}

export function overlapInterval(reps: readonly RepeatTimes[], seed = 1): Overlap | null {
  const ci = bootstrapPaired(reps, overlapOf, { seed });
  if (!ci || !Number.isFinite(ci.lo) || !Number.isFinite(ci.hi)) return null;
  const verdict = ci.lo > 0 && ci.estimate > 0 ? 'hidden' : ci.hi < 0 ? 'none' : 'noise';
  return { lo: ci.lo, hi: ci.hi, level: ci.level, verdict };
}

export function summarize(
  plan: WorkloadPlan,
  nranks: number,
  samples: readonly RepeatSamples[][],
): ConfigurationSummary[] {
  return plan.configurations.map((c, i) => {
    const reps = samples[i]!;
    const comm = spread(reps.map((r) => medianOf(r.commUs)));
    const withCompute = reps.every((r) => r.stepUs !== null);
    const step = withCompute ? spread(reps.map((r) => medianOf(r.stepUs!))) : null;
    const computeUs = withCompute ? medianOf(reps.map((r) => r.computeUs)) : null;
    const bus = busBytes(c, nranks);
    const times = withCompute
      ? reps.map((r) => ({ comm: medianOf(r.commUs), step: medianOf(r.stepUs!), compute: r.computeUs }))
      : [];
    return {
      value: c.value,
      label: c.label,
      calls: c.ops.length,
      bytesPerStep: c.ops.reduce((a, o) => a + o.bytes, 0),
      busBytesPerStep: bus,
      comm,
      step,
      computeUs,
      busBwGBps: bus / comm.median / 1e3,
      overlapPct: withCompute ? overlapOf(times) : null,
      overlap: withCompute ? overlapInterval(times, i + 1) : null,
      wrong: reps.reduce((a, r) => a + r.wrong, 0),
    };
  });
}

/** The configuration with the lowest median time, and how every other compares with it. */
export function recommend(summaries: readonly ConfigurationSummary[], seed = 1): Recommendation {
  const metric = summaries.every((s) => s.step !== null) ? 'step' : 'comm';
  const of = (s: ConfigurationSummary): Spread => (metric === 'step' ? s.step! : s.comm);
  const best = summaries.reduce((a, s) => (of(s).median < of(a).median ? s : a));
  const others = summaries.filter((s) => s !== best);
  const ps = others.map((s) => mannWhitneyP(of(best).perRepeat, of(s).perRepeat, 'less'));
  const rejected = holm(ps, SIGNIFICANCE_LEVEL);
  const margins = others.map((s, i): Margin => {
    const ci = bootstrapRatio(of(s).perRepeat, of(best).perRepeat, { seed: seed + i });
    return {
      value: s.value,
      label: s.label,
      ratio: of(s).median / of(best).median,
      lo: ci?.lo ?? null,
      hi: ci?.hi ?? null,
      p: ps[i]!,
      significant: rejected[i]! && ci !== null && ci.lo > 1,
    };
  });
  return { value: best.value, label: best.label, metric, margins };
}
