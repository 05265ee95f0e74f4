// C printf number formatting, bit-exact with glibc, for the nccl-tests text table: %f/%e/%g with
// round-half-even on the exact binary value, two-digit exponents, nan/-nan/inf, width padding, and
// nccl-tests' adaptive cell formatter (getFloatStr in src/util.cu). JavaScript's toFixed/toPrecision
// round ties away from zero and switch to exponent notation at 1e21, so none of them are used here.

import { signBit } from '../numbers/c-numbers.js';

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** Finite |v| as mant·2^exp with integer mant (exact). */
function decompose(v: number): { mant: bigint; exp: number } {
  f64[0] = Math.abs(v);
  const bits = u64[0]!;
  const biased = Number((bits >> 52n) & 0x7ffn);
  const frac = bits & 0xfffffffffffffn;
  if (biased === 0) return { mant: frac, exp: -1074 }; // subnormal (or zero)
  return { mant: frac | (1n << 52n), exp: biased - 1075 };
}

/** round_half_even(|v| · 10^pow10) computed exactly (glibc printf rounding in the default mode). */
function scaledRound(v: number, pow10: number): bigint {
  const { mant, exp } = decompose(v);
  let num = mant;
  let den = 1n;
  if (exp >= 0) num <<= BigInt(exp);
  else den <<= BigInt(-exp);
  if (pow10 >= 0) num *= 10n ** BigInt(pow10);
  else den *= 10n ** BigInt(-pow10);
  const q = num / den;
  const twiceRem = (num - q * den) * 2n;
  if (twiceRem > den || (twiceRem === den && (q & 1n) === 1n)) return q + 1n;
  return q;
}

function nonFinite(v: number, upper: boolean): string {
  const s = Number.isNaN(v) ? 'nan' : 'inf';
  const out = (signBit(v) ? '-' : '') + s;
  return upper ? out.toUpperCase() : out;
}

/** Digits of %.<prec>f for |v| (no sign). */
function fixedBody(v: number, prec: number, alt: boolean): string {
  let digits = scaledRound(v, prec).toString();
  if (prec === 0) return alt ? digits + '.' : digits;
  if (digits.length <= prec) digits = '0'.repeat(prec + 1 - digits.length) + digits;
  return digits.slice(0, digits.length - prec) + '.' + digits.slice(digits.length - prec);
}

/** prec+1 significant digits of |v| and the decimal exponent, as %e rounds them. */
function expDigits(v: number, prec: number): { digits: string; exp10: number } {
  if (v === 0) return { digits: '0'.repeat(prec + 1), exp10: 0 };
  const lo = 10n ** BigInt(prec);
  const hi = lo * 10n;
  let e = Math.floor(Math.log10(Math.abs(v))); // estimate, corrected below
  let q = scaledRound(v, prec - e);
  if (q >= hi) {
    e += 1;
    q = scaledRound(v, prec - e);
  } else if (q < lo) {
    const q2 = scaledRound(v, prec - (e - 1));
    // One exponent lower may round up to 10^(prec+1): then the value is exactly 10^prec at e.
    if (q2 < hi) {
      e -= 1;
      q = q2;
    } else q = lo;
  }
  return { digits: q.toString(), exp10: e };
}

function expSuffix(exp10: number, upper: boolean): string {
  const a = Math.abs(exp10);
  return (upper ? 'E' : 'e') + (exp10 < 0 ? '-' : '+') + (a < 10 ? '0' : '') + String(a);
}

function expBody(v: number, prec: number, alt: boolean, upper: boolean): string {
  const { digits, exp10 } = expDigits(v, prec);
  const mant = digits.length > 1 || alt ? digits[0] + '.' + digits.slice(1) : digits;
  return mant + expSuffix(exp10, upper);
}

function gBody(v: number, prec: number, alt: boolean, upper: boolean): string {
  const p = prec === 0 ? 1 : prec;
  const x = v === 0 ? 0 : expDigits(v, p - 1).exp10;
  let s: string;
  let suffix = '';
  if (x < p && x >= -4) {
    s = fixedBody(v, p - 1 - x, alt);
  } else {
    const { digits, exp10 } = expDigits(v, p - 1);
    s = digits.length > 1 || alt ? digits[0] + '.' + digits.slice(1) : digits;
    suffix = expSuffix(exp10, upper);
  }
  if (!alt && s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s + suffix;
}

const signOf = (v: number, plus: boolean, space: boolean): string => (signBit(v) ? '-' : plus ? '+' : space ? ' ' : '');

/** C `%.<prec>f` (no width). */
export function cFixed(v: number, prec = 6): string {
  if (!Number.isFinite(v)) return nonFinite(v, false);
  return signOf(v, false, false) + fixedBody(v, prec, false);
}

/** C `%.<prec>e` (no width): mantissa rounded half-even, exponent sign and at least two digits. */
export function cExp(v: number, prec = 6): string {
  if (!Number.isFinite(v)) return nonFinite(v, false);
  return signOf(v, false, false) + expBody(v, prec, false, false);
}

/** C `%.<prec>g` (no width): `prec` significant digits, trailing zeros removed, exponent form when the
 *  exponent is < -4 or >= prec (e.g. cG(1048576) = "1.04858e+06"). */
export function cG(v: number, prec = 6): string {
  if (!Number.isFinite(v)) return nonFinite(v, false);
  return signOf(v, false, false) + gBody(v, prec, false, false);
}

/** C `%d`/`%li`: integer in decimal (truncates a fractional argument toward zero). */
export function cInt(v: number | bigint): string {
  if (typeof v === 'bigint') return v.toString();
  if (!Number.isFinite(v)) throw new RangeError(`cInt: not a finite number: ${v}`);
  return BigInt(Math.trunc(v)).toString();
}

/** C `%<w>s`: right-justify in at least `width` columns (never truncates). */
export const padLeft = (s: string, width: number): string => (s.length >= width ? s : ' '.repeat(width - s.length) + s);

/** C `%-<w>s`: left-justify in at least `width` columns (never truncates). */
export const padRight = (s: string, width: number): string =>
  s.length >= width ? s : s + ' '.repeat(width - s.length);

/**
 * nccl-tests getFloatStr(value, width, str): the first of `%W.2f`, `%W.1f`, `%W.0f` that fits in W
 * characters, else `%W.1e` (W >= 7) or `%W.0e`, which snprintf(str, W+1, …) cuts to W characters.
 * W = 7 for times (µs) and per-iteration cells, 6 for bandwidths (GB/s). Always exactly W chars.
 */
export function adaptiveFloat(value: number, width: number): string {
  for (const prec of [2, 1, 0]) {
    const s = padLeft(cFixed(value, prec), width);
    if (s.length <= width) return s;
  }
  return padLeft(cExp(value, width >= 7 ? 1 : 0), width).slice(0, width);
}

/** A time cell (`%7s` of getFloatStr(v, 7)). */
export const timeCell = (us: number): string => adaptiveFloat(us, 7);
/** A bandwidth cell (`%6s` of getFloatStr(v, 6)). */
export const bwCell = (gbps: number): string => adaptiveFloat(gbps, 6);

/**
 * A small C `sprintf` for transcribing nccl-tests' format strings verbatim. Supports flags `-+ #0`,
 * width and precision (numbers or `*`), length modifiers (ignored), and d i u x X o f F e E g G s c %.
 * Integer arguments may be number or bigint; %x/%o of a negative value wraps as 64-bit with `l`/`ll`/`z`,
 * else 32-bit, like C.
 */
export function cSprintf(fmt: string, ...args: unknown[]): string {
  let ai = 0;
  const next = (): unknown => {
    if (ai >= args.length) throw new RangeError(`cSprintf: too few arguments for "${fmt}"`);
    return args[ai++];
  };
  const re = /%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|z|j|t|L)?([diouxXfFeEgGsc%])/g;
  const out = fmt.replace(re, (_m, flags: string, w?: string, p?: string, len?: string, conv?: string) => {
    if (conv === '%') return '%';
    let left = flags.includes('-');
    const plus = flags.includes('+');
    const space = flags.includes(' ');
    const alt = flags.includes('#');
    let zero = flags.includes('0');
    let width = 0;
    if (w === '*') {
      width = Number(next());
      if (width < 0) {
        left = true;
        width = -width;
      }
    } else if (w !== undefined) width = Number(w);
    let prec: number | undefined;
    if (p !== undefined) {
      prec = p === '*' ? Number(next()) : p === '' ? 0 : Number(p);
      if (prec < 0) prec = undefined; // negative * precision = none (C)
    }
    const c = conv!;
    let sign = '';
    let body: string;
    if (c === 's' || c === 'c') {
      body = c === 'c' ? String.fromCharCode(Number(next())) : String(next());
      if (c === 's' && prec !== undefined) body = body.slice(0, prec);
      zero = false;
    } else if ('diuxXo'.includes(c)) {
      const a = next();
      let n = typeof a === 'bigint' ? a : BigInt(Math.trunc(Number(a)));
      const bits = len === 'l' || len === 'll' || len === 'z' || len === 'j' || len === 't' ? 64 : 32;
      if (c === 'd' || c === 'i') {
        if (n < 0n) {
          sign = '-';
          n = -n;
        } else sign = plus ? '+' : space ? ' ' : '';
        body = n.toString();
      } else {
        if (n < 0n) n = BigInt.asUintN(bits, n);
        body = n.toString(c === 'o' ? 8 : c === 'u' ? 10 : 16);
        if (c === 'X') body = body.toUpperCase();
        if (alt && c === 'o' && body[0] !== '0') body = '0' + body;
        if (alt && (c === 'x' || c === 'X') && n !== 0n) sign = c === 'x' ? '0x' : '0X';
      }
      if (prec !== undefined) {
        if (prec === 0 && body === '0') body = '';
        if (body.length < prec) body = '0'.repeat(prec - body.length) + body;
        zero = false; // precision overrides 0 flag (C)
      }
    } else {
      const v = Number(next());
      const upper = c === 'F' || c === 'E' || c === 'G';
      const pr = prec ?? 6;
      sign = signOf(v, plus, space);
      if (!Number.isFinite(v)) {
        body = Number.isNaN(v) ? 'nan' : 'inf';
        if (upper) body = body.toUpperCase();
        zero = false; // glibc pads inf/nan with spaces
      } else if (c === 'f' || c === 'F') body = fixedBody(v, pr, alt);
      else if (c === 'e' || c === 'E') body = expBody(v, pr, alt, upper);
      else body = gBody(v, pr, alt, upper);
    }
    const total = sign.length + body.length;
    if (total >= width) return sign + body;
    if (left) return sign + body + ' '.repeat(width - total);
    if (zero) return sign + '0'.repeat(width - total) + body;
    return ' '.repeat(width - total) + sign + body;
  });
  if (ai !== args.length) throw new RangeError(`cSprintf: ${args.length - ai} unused argument(s) for "${fmt}"`);
  return out;
}
