// Byte sizes: the `-b/-e/-i` size syntax, the size sweep and the warm-up sizes.
// Mirrors nccl-tests' parsesize() (sscanf "%lf %1s", K/M/G binary units) and the two size loops
// of TimeTest() in src/common.cu (sweep: ×f or +i; warm-up: always ×2), minus their sharp edges.

import { UsageError } from '../core/errors.js';

export const KIB = 1024;
export const MIB = 1024 * KIB;
export const GIB = 1024 * MIB;

const UNIT_BYTES: Record<string, number> = { k: KIB, m: MIB, g: GIB };

/**
 * A size: optional sign, a strtod-style number (decimal with optional fraction/exponent, or a 0x
 * hex integer — strtod reads both, so nccl-tests does too), optional whitespace, then optional unit
 * K/M/G in either case, optionally followed by `B`, `iB` (so `128KB`, `1GB`, `1GiB` work).
 * nccl-tests only looks at the first character after the number, so it also takes `8Kxyz` as 8K
 * and `8 garbage` as 8G; we refuse anything after the unit other than B/iB. A bare `B` (`8B`) or
 * any other unit (`1T`) is an error, as in nccl-tests.
 */
const SIZE_RE =
  /^\s*([+-]?)(?:0[xX]([0-9a-fA-F]+)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))\s*(?:([kKmMgG])(?:[iI]?[bB])?)?\s*$/;

const SIZE_SYNTAX = 'a number with an optional K, M or G suffix (1024-based), e.g. 8, 128K, 1.5G, 1GB';

/**
 * Parses a size option value to whole bytes, truncating fractions (`1.5K` → 1536, `0.3` → 0) like
 * nccl-tests' `(size_t)` cast. `flag` names the option in the error (`-b`).
 */
export function parseSize(text: string, flag: string): number {
  const m = SIZE_RE.exec(text);
  if (!m) throw UsageError.forFlag(flag, `invalid size '${text}': expected ${SIZE_SYNTAX}`);
  const [, sign, hex, dec, unit] = m;
  const magnitude = hex !== undefined ? parseInt(hex, 16) : Number(dec);
  const raw = (sign === '-' ? -magnitude : magnitude) * (unit ? UNIT_BYTES[unit.toLowerCase()] : 1);
  // nccl-tests refuses a negative result (parsesize returns < 0); -0 is fine.
  if (raw < 0) throw UsageError.forFlag(flag, `size must not be negative, got '${text}'`);
  const bytes = Math.trunc(raw);
  if (!Number.isSafeInteger(bytes)) {
    throw UsageError.forFlag(flag, `size '${text}' is too large (limit 2^53 - 1 bytes)`);
  }
  return bytes === 0 ? 0 : bytes; // fold -0
}

/** Short form of a byte count for help text and messages: 33554432 → `32M`, 1000 → `1000`. */
export function formatSize(bytes: number): string {
  if (bytes > 0) {
    if (bytes % GIB === 0) return `${bytes / GIB}G`;
    if (bytes % MIB === 0) return `${bytes / MIB}M`;
    if (bytes % KIB === 0) return `${bytes / KIB}K`;
  }
  return String(bytes);
}

/** The next size of a sweep (nccl-tests: `size = (f > 1) ? size*f : size+i`). */
function nextSize(size: number, factor: number, step: number): number {
  return factor > 1 ? size * factor : size + step;
}

/**
 * Number of sizes in the sweep min..max (inclusive) without building it; `Infinity` when the sweep
 * never reaches past max (size 0 with a factor, or step 0 without one) while min < max.
 * A one-size sweep (min = max) has one size whatever the step: nccl-tests would loop forever on
 * it with a zero step, we simply stop after the only size.
 */
export function countSweepSizes(min: number, max: number, factor: number, step: number): number {
  if (min > max) return 0;
  if (min === max) return 1;
  if (factor > 1) {
    if (min === 0) return Infinity;
    let n = 0;
    for (let size = min; size <= max; size *= factor) n++; // ≤ 53 turns
    return n;
  }
  if (step <= 0) return Infinity;
  return Math.floor((max - min) / step) + 1;
}

/**
 * Sizes of the benchmark sweep, inclusive of max when it lies on the sweep: `factor > 1`
 * multiplies, otherwise `step` is added (nccl-tests uses -i only when -f ≤ 1).
 * Examples: (8, 128M, 2, ·) → 8, 16, …, 134217728 (25 sizes); (1M, 4M, 1, 1M) → 1M, 2M, 3M, 4M.
 * Throws RangeError when the sweep could not terminate (resolveOptions refuses such options first).
 */
export function sweepSizes(min: number, max: number, factor: number, step: number): number[] {
  const count = countSweepSizes(min, max, factor, step);
  if (!Number.isFinite(count)) {
    throw new RangeError(`size sweep ${min}..${max} does not advance (factor ${factor}, step ${step})`);
  }
  const sizes: number[] = [];
  for (let size = min; sizes.length < count; size = nextSize(size, factor, step)) sizes.push(size);
  return sizes;
}

/**
 * Warm-up sizes: min, 2·min, 4·min, … ≤ max, whatever -f/-i say (nccl-tests TimeTest step 3).
 * nccl-tests loops forever for min = 0 (0 × 2 = 0); we warm up size 0 once and then continue the
 * doubling from 1 byte (0, 1, 2, 4, … ≤ max) so every size class up to max is still warmed.
 * Empty when min > max.
 */
export function warmupSizes(min: number, max: number): number[] {
  const sizes: number[] = [];
  if (min > max) return sizes;
  let size = min;
  if (size === 0) {
    sizes.push(0);
    size = 1;
  }
  for (; size <= max; size *= 2) sizes.push(size);
  return sizes;
}
