// Bit-exact codec between double and the narrow floating-point formats NCCL reduces (half, bfloat16,
// OCP fp8 E4M3FN / E5M2), with round-to-nearest-even and subnormals, in integer bit arithmetic so the
// same code runs on the host and in CUDA kernels. Mirrors IEEE 754 binary16 and the OCP 8-bit FP spec.
#pragma once
#include <cstdint>
#include <cstring>

#include "types.h"

namespace collbench {

// Bit casts through memcpy (defined behaviour in C++17; nvcc supports memcpy in device code).
CB_HD uint64_t bitsOfDouble(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
CB_HD double doubleOfBits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
CB_HD uint32_t bitsOfFloat(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
CB_HD float floatOfBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Layout of a binary floating-point format. `ieeeSpecials` false means OCP E4M3FN: no infinities,
// the all-ones exponent holds normal numbers except S.1111.111, the only NaN.
struct FloatFormat {
  int expBits;
  int mantBits;  // stored fraction bits; significand precision p = mantBits + 1
  int bias;
  bool ieeeSpecials;
};

// Formats of the float dtypes (integers get {0,0,0,true}: callers check dtypeIsFloat first).
CB_HD FloatFormat floatFormat(DType t) {
  switch (t) {
    case DType::Float16:
      return FloatFormat{5, 10, 15, true};
    case DType::Bfloat16:
      return FloatFormat{8, 7, 127, true};
    case DType::F8e4m3:
      return FloatFormat{4, 3, 7, false};
    case DType::F8e5m2:
      return FloatFormat{5, 2, 15, true};
    case DType::Float32:
      return FloatFormat{8, 23, 127, true};
    case DType::Float64:
      return FloatFormat{11, 52, 1023, true};
    default:
      return FloatFormat{0, 0, 0, true};
  }
}

// v / 2^s rounded to nearest, ties to even (s >= 0; v < 2^63 so s >= 64 always rounds to 0).
CB_HD uint64_t shiftRightRne(uint64_t v, int s) {
  if (s <= 0) return v;
  if (s >= 64) return 0;
  uint64_t q = v >> s;
  uint64_t rem = v & ((uint64_t(1) << s) - 1);
  uint64_t half = uint64_t(1) << (s - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return q;
}

// Decode a narrow format (<= 16 bits) to double: always exact, since double's range and precision
// cover every such value. NaN decodes to a quiet NaN of the same sign.
CB_HD double decodeNarrow(FloatFormat f, uint64_t bits) {
  const int m = f.mantBits;
  const uint64_t sign = (bits >> (f.expBits + m)) & 1;
  const uint64_t maxExp = (uint64_t(1) << f.expBits) - 1;
  const uint64_t mantMask = (uint64_t(1) << m) - 1;
  const uint64_t ef = (bits >> m) & maxExp;
  const uint64_t mf = bits & mantMask;
  uint64_t out;
  if (ef == maxExp && (f.ieeeSpecials || mf == mantMask)) {
    out = (f.ieeeSpecials && mf == 0) ? 0x7FF0000000000000ull : 0x7FF8000000000000ull;
  } else if (ef == 0) {
    if (mf == 0) {
      out = 0;
    } else {
      // Subnormal mf * 2^(1 - bias - m): normalise around its highest set bit h.
      int h = 0;
      while ((mf >> (h + 1)) != 0) ++h;
      const int64_t e = int64_t(h) + 1 - f.bias - m;
      out = (uint64_t(e + 1023) << 52) | ((mf ^ (uint64_t(1) << h)) << (52 - h));
    }
  } else {
    const int64_t e = int64_t(ef) - f.bias;
    out = (uint64_t(e + 1023) << 52) | (mf << (52 - m));
  }
  return doubleOfBits(out | (sign << 63));
}

// Encode a double into a narrow format with one rounding (RNE), subnormals included.
// Overflow: IEEE-like formats give +-infinity (as a correctly rounded IEEE conversion does);
// E4M3FN has no infinity and we give NaN (S.1111.111), like CUDA's non-saturating conversion
// (__NV_NOSAT): a saturated 448 would hide an overflow from a data check, a NaN cannot.
CB_HD uint64_t encodeNarrow(FloatFormat f, double x) {
  const int m = f.mantBits;
  const uint64_t d = bitsOfDouble(x);
  const uint64_t signOut = (d >> 63) << (f.expBits + m);
  const uint64_t de = (d >> 52) & 0x7FF;
  const uint64_t dm = d & ((uint64_t(1) << 52) - 1);
  const uint64_t maxExp = (uint64_t(1) << f.expBits) - 1;
  const uint64_t nanCode =
      f.ieeeSpecials ? ((maxExp << m) | (uint64_t(1) << (m - 1))) : ((maxExp << m) | ((uint64_t(1) << m) - 1));
  const uint64_t overflowCode = f.ieeeSpecials ? (maxExp << m) : nanCode;
  if (de == 0x7FF) return signOut | (dm != 0 ? nanCode : overflowCode);
  // Zero, and double subnormals (< 2^-1022: far below half the smallest narrow subnormal).
  if (de == 0) return signOut;
  const int64_t e = int64_t(de) - 1023;
  const int64_t emin = 1 - f.bias;
  // Far above the largest finite value: skip the shifts below (which could not represent it).
  if (e > int64_t(maxExp) - f.bias + 1) return signOut | overflowCode;
  const uint64_t sig = dm | (uint64_t(1) << 52);
  uint64_t code;
  if (e >= emin) {
    // Normal: the rounded significand lies in [2^m, 2^(m+1)]; adding it to (e - emin) << m yields
    // biased exponent and fraction at once, a rounding carry moving into the exponent field.
    code = (uint64_t(e - emin) << m) + shiftRightRne(sig, 52 - m);
  } else {
    // Subnormal: quantum 2^(emin - m); a carry up to 2^m gives the smallest normal, as it should.
    const int64_t s = 52 - m + (emin - e);
    code = shiftRightRne(sig, s > 64 ? 64 : int(s));
  }
  const uint64_t firstBad = f.ieeeSpecials ? (maxExp << m) : nanCode;
  if (code >= firstBad) return signOut | overflowCode;
  return signOut | code;
}

// Value of an element given as raw bits, for any float dtype (float and double by native casts).
// Integer dtypes decode to their numeric value (int64/uint64 beyond 2^53 round), for display only.
CB_HD double decodeToDouble(DType t, uint64_t bits) {
  switch (t) {
    case DType::Float64:
      return doubleOfBits(bits);
    case DType::Float32:
      return double(floatOfBits(uint32_t(bits)));
    case DType::Float16:
    case DType::Bfloat16:
    case DType::F8e4m3:
    case DType::F8e5m2:
      return decodeNarrow(floatFormat(t), bits);
    case DType::Int8:
      return double(int8_t(uint8_t(bits)));
    case DType::Uint8:
      return double(uint8_t(bits));
    case DType::Int32:
      return double(int32_t(uint32_t(bits)));
    case DType::Uint32:
      return double(uint32_t(bits));
    case DType::Int64:
      return double(int64_t(bits));
    default:
      return double(bits);
  }
}

// Raw bits of the float dtype `t` nearest to x (RNE). Integer dtypes: not meaningful, returns 0.
CB_HD uint64_t encodeFromDouble(DType t, double x) {
  switch (t) {
    case DType::Float64:
      return bitsOfDouble(x);
    case DType::Float32:
      return bitsOfFloat(float(x));  // IEEE cast: RNE (__double2float_rn)
    case DType::Float16:
    case DType::Bfloat16:
    case DType::F8e4m3:
    case DType::F8e5m2:
      return encodeNarrow(floatFormat(t), x);
    default:
      return 0;
  }
}

// Whether raw bits of float dtype `t` are a NaN or an infinity.
CB_HD bool floatBitsIsFinite(DType t, uint64_t bits) {
  const FloatFormat f = floatFormat(t);
  const uint64_t maxExp = (uint64_t(1) << f.expBits) - 1;
  const uint64_t mantMask = (uint64_t(1) << f.mantBits) - 1;
  const uint64_t ef = (bits >> f.mantBits) & maxExp;
  if (ef != maxExp) return true;
  return !f.ieeeSpecials && (bits & mantMask) != mantMask;
}

}  // namespace collbench
