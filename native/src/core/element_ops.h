// Elementwise reduction arithmetic on raw element bits of any dtype, as a CPU reduction (an MPI
// user-defined op, Gloo's reduce functions) or a reference fold must do it: integers wrap, narrow
// floats round to nearest-even after every step. Host and CUDA device code (pattern.h folds with it).
#pragma once
#include <cstdint>
#include <cstring>

#include "minifloat.h"
#include "types.h"

namespace collbench {

CB_HD bool dtypeIsSigned(DType t) {
  return t == DType::Int8 || t == DType::Int32 || t == DType::Int64;
}

// Mask of the element width (all ones for 64-bit types).
CB_HD uint64_t dtypeMask(DType t) {
  const size_t n = dtypeSize(t);
  return n >= 8 ? ~uint64_t(0) : ((uint64_t(1) << (8 * n)) - 1);
}

// Integer bits as a signed value (sign-extended from the element width).
CB_HD int64_t signExtend(DType t, uint64_t bits) {
  switch (dtypeSize(t)) {
    case 1:
      return int64_t(int8_t(uint8_t(bits)));
    case 2:
      return int64_t(int16_t(uint16_t(bits)));
    case 4:
      return int64_t(int32_t(uint32_t(bits)));
    default:
      return int64_t(bits);
  }
}

// Element i of an array of dtype t, zero-extended into 64 bits.
CB_HD uint64_t loadBits(const void* base, DType t, uint64_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(base);
  switch (dtypeSize(t)) {
    case 1:
      return p[i];
    case 2: {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

CB_HD void storeBits(void* base, DType t, uint64_t i, uint64_t bits) {
  unsigned char* p = static_cast<unsigned char*>(base);
  switch (dtypeSize(t)) {
    case 1:
      p[i] = uint8_t(bits);
      break;
    case 2: {
      uint16_t v = uint16_t(bits);
      memcpy(p + 2 * i, &v, 2);
      break;
    }
    case 4: {
      uint32_t v = uint32_t(bits);
      memcpy(p + 4 * i, &v, 4);
      break;
    }
    default:
      memcpy(p + 8 * i, &bits, 8);
      break;
  }
}

// a (op) b. Avg and MulSum combine partial results by Sum (their extra step is divideBits /
// scaleBits). Integers: unsigned wrap-around (no signed-overflow UB), comparisons by signedness.
// float/double: native arithmetic; narrow floats: exact double arithmetic then one RNE rounding
// (double's 53 bits >= 2p+2 makes that double rounding innocuous for +, *: Figueroa 1995).
// Max/Min return an operand unchanged, a NaN operand propagating.
CB_HD uint64_t applyOp(DType t, RedOp op, uint64_t a, uint64_t b) {
  const uint64_t mask = dtypeMask(t);
  a &= mask;
  b &= mask;
  if (!dtypeIsFloat(t)) {
    switch (op) {
      case RedOp::Prod:
        return (a * b) & mask;
      case RedOp::Max:
        if (dtypeIsSigned(t)) return signExtend(t, a) >= signExtend(t, b) ? a : b;
        return a >= b ? a : b;
      case RedOp::Min:
        if (dtypeIsSigned(t)) return signExtend(t, a) <= signExtend(t, b) ? a : b;
        return a <= b ? a : b;
      default:
        return (a + b) & mask;
    }
  }
  if (t == DType::Float32) {
    const float x = floatOfBits(uint32_t(a)), y = floatOfBits(uint32_t(b));
    switch (op) {
      case RedOp::Prod:
        return bitsOfFloat(x * y);
      case RedOp::Max:
        return (x != x) ? a : (y != y) ? b : (x >= y ? a : b);
      case RedOp::Min:
        return (x != x) ? a : (y != y) ? b : (x <= y ? a : b);
      default:
        return bitsOfFloat(x + y);
    }
  }
  if (op == RedOp::Max || op == RedOp::Min) {
    if (t != DType::Float64) {
      // Narrow floats: order sign-magnitude bits as integers (no decode), +0 == -0 like a float
      // comparison, NaN propagating.
      const FloatFormat f = floatFormat(t);
      const int w = f.expBits + f.mantBits;
      const uint64_t magMask = (uint64_t(1) << w) - 1;
      const uint64_t nanFrom = f.ieeeSpecials ? ((uint64_t(1) << w) - (uint64_t(1) << f.mantBits) + 1)
                                              : magMask;  // magnitudes >= this are NaN
      if ((a & magMask) >= nanFrom) return a;
      if ((b & magMask) >= nanFrom) return b;
      const int64_t ka = (a >> w) ? -int64_t(a & magMask) : int64_t(a & magMask);
      const int64_t kb = (b >> w) ? -int64_t(b & magMask) : int64_t(b & magMask);
      return op == RedOp::Max ? (ka >= kb ? a : b) : (ka <= kb ? a : b);
    }
    const double x = doubleOfBits(a), y = doubleOfBits(b);
    if (op == RedOp::Max) return (x != x) ? a : (y != y) ? b : (x >= y ? a : b);
    return (x != x) ? a : (y != y) ? b : (x <= y ? a : b);
  }
  const double x = decodeToDouble(t, a), y = decodeToDouble(t, b);
  return encodeFromDouble(t, op == RedOp::Prod ? x * y : x + y);
}

// x * scalar in the type: the pre-multiply of PreMulSum ("mulsum"; nccl-tests uses 1 or 2).
CB_HD uint64_t scaleBits(DType t, uint64_t x, int scalar) {
  const uint64_t mask = dtypeMask(t);
  x &= mask;
  if (!dtypeIsFloat(t)) return (x * uint64_t(int64_t(scalar))) & mask;
  if (t == DType::Float32) return bitsOfFloat(floatOfBits(uint32_t(x)) * float(scalar));
  return encodeFromDouble(t, decodeToDouble(t, x) * double(scalar));
}

// The finishing step of Avg: x / n. Integers: C division (truncation toward zero) of the wrapped
// sum read with the type's signedness, as NCCL's SumPostDiv. Floats: the quotient rounded to
// nearest-even in the type (float: float division, n exact below 2^24; narrow types through double,
// whose double rounding is innocuous for n < 2^20 since a p-bit / integer quotient cannot fall that
// close to a midpoint without being one).
CB_HD uint64_t divideBits(DType t, uint64_t x, int n) {
  const uint64_t mask = dtypeMask(t);
  x &= mask;
  if (n <= 0) return x;  // not a rank count: leave the value alone rather than divide by zero
  if (!dtypeIsFloat(t)) {
    if (dtypeIsSigned(t)) return uint64_t(signExtend(t, x) / int64_t(n)) & mask;
    return x / uint64_t(n);
  }
  if (t == DType::Float32) return bitsOfFloat(floatOfBits(uint32_t(x)) / float(n));
  return encodeFromDouble(t, decodeToDouble(t, x) / double(n));
}

}  // namespace collbench
