// C number semantics the nccl-tests contract depends on, below every layer that needs them: the x86 NaN
// with its sign bit set (0/0, printed "-nan"), the sign bit of any double, and C atof (how nccl-tests
// reads NCCL_TESTS_MIN_BW).

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** A NaN with the sign bit set: what x86-64 arithmetic (e.g. 0/0) yields and glibc prints as "-nan". */
export const NEG_NAN: number = (() => {
  u64[0] = 0xfff8000000000000n;
  return f64[0]!;
})();

/** Sign bit of a double, NaN and -0 included (glibc prints the sign of a NaN). */
export function signBit(v: number): boolean {
  f64[0] = v;
  return u64[0]! >> 63n === 1n;
}

/**
 * C atof (strtod prefix): leading whitespace, then the longest decimal / hex / inf / nan prefix;
 * anything unparsable is 0 (so NCCL_TESTS_MIN_BW=abc checks against 0 and always passes, as in C).
 */
export function cAtof(s: string): number {
  const t = s.replace(/^[ \t\n\v\f\r]+/, '');
  let m = /^([+-]?)(inf(inity)?|nan(\([0-9A-Za-z_]*\))?)/i.exec(t);
  if (m) {
    const v = m[2]!.toLowerCase().startsWith('inf') ? Infinity : NaN;
    return m[1] === '-' ? -v : v;
  }
  m = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?/.exec(t);
  if (m && (m[2] || m[3])) {
    const frac = m[3] ?? '';
    const mant = parseInt((m[2] || '0') + frac || '0', 16);
    const v = mant * 2 ** (Number(m[4] ?? 0) - 4 * frac.length);
    return m[1] === '-' ? -v : v;
  }
  m = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(t);
  return m ? Number(m[0]) : 0;
}
