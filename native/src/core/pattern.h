// Stateless data patterns: a hash of (seed, index, rank, nranks, op, dtype) gives each rank's input and the exact
// reduced output, bit for bit in any reduction order; host and CUDA code (nccl-tests' verifiable/ principles, our own
// construction). How each dtype class stays exact: docs/architecture.md, "How the data patterns stay exact".
#pragma once
#include <cstdint>

#include "element_ops.h"
#include "minifloat.h"
#include "types.h"

namespace collbench {
namespace pattern {

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
CB_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Seed of one data stream (reduction data, or the copy data of one source rank) of a row-half.
CB_HD uint64_t mixSeed(uint64_t baseSeed, uint64_t stream) {
  return mix64(mix64(baseSeed ^ 0x5EED5EED5EED5EEDull) + 0xD1B54A32D192ED03ull * (stream + 1));
}

// Everything about one element derives from its key (the splitmix64 sequence of the seed, indexed
// by element); per-rank and per-purpose draws come from lanes of the key.
CB_HD uint64_t elementKey(uint64_t seed, uint64_t index) {
  return mix64(seed + 0xD6E8FEB86659FD93ull * (index + 1));
}
enum : uint64_t { kLaneInput = 0, kLanePlan = 1 };
CB_HD uint64_t laneHash(uint64_t key, int rank, uint64_t purpose) {
  // rank -1 = per-element draws shared by all ranks.
  const uint64_t lane = (uint64_t(int64_t(rank) + 1) << 2) | purpose;
  return mix64(key + 0x9E3779B97F4A7C15ull * (lane + 1));
}

// nccl-tests' PreMulSum scalar: 1 on even ranks, 2 on odd ranks.
CB_HD int mulSumScalar(int rank) {
  return 1 + (rank & 1);
}

// Bit-distance allowed between result and expected (docs/nccl-tests-contract.md, "Checks"): 0 except float avg.
CB_HD uint64_t tolerance(DType t, RedOp op) {
  return (dtypeIsFloat(t) && op == RedOp::Avg) ? 2 : 0;
}

// |a - b| of the bit patterns read as unsigned integers of the element width (~ULPs, same sign).
CB_HD uint64_t bitDistance(DType t, uint64_t a, uint64_t b) {
  const uint64_t mask = dtypeMask(t);
  a &= mask;
  b &= mask;
  return a > b ? a - b : b - a;
}

// ---- helpers -------------------------------------------------------------------------------------

CB_HD int highBit(uint64_t v) {  // index of the highest set bit, v != 0
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(v));
#else
  return 63 - __builtin_clzll(v);
#endif
}
CB_HD int ceilLog2(uint64_t n) {
  return n <= 1 ? 0 : highBit(n - 1) + 1;
}
CB_HD int clampInt(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
// floor(h * n / 2^64): a draw in [0, n) from 64 random bits without a division (Lemire's range
// reduction); fills and checks run it per element, where a 64-bit modulo would dominate.
CB_HD uint64_t mulHi64(uint64_t h, uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(h, n);
#else
  __extension__ typedef unsigned __int128 U128;  // GCC/Clang; __extension__ keeps -pedantic quiet
  return uint64_t((U128(h) * n) >> 64);
#endif
}
// Draw in [lo, hi] from 64 random bits.
CB_HD int drawInt(uint64_t h, int lo, int hi) {
  return hi <= lo ? lo : lo + int(mulHi64(h, uint64_t(int64_t(hi) - lo + 1)));
}
CB_HD uint64_t rotl64(uint64_t v, int k) {
  return (v << k) | (v >> (64 - k));
}

struct FloatInfo {
  int p;     // significand bits incl. implicit
  int emin;  // smallest normal exponent
  int emax;  // largest normal exponent
};
CB_HD FloatInfo floatInfo(DType t) {
  const FloatFormat f = floatFormat(t);
  const int maxBiased = (1 << f.expBits) - (f.ieeeSpecials ? 2 : 1);
  return FloatInfo{f.mantBits + 1, 1 - f.bias, maxBiased - f.bias};
}

// Bits of the normal number (-1)^neg * (1 + frac / 2^m) * 2^e (caller keeps e in range).
CB_HD uint64_t composeBits(DType t, bool neg, int e, uint64_t frac) {
  const FloatFormat f = floatFormat(t);
  const uint64_t sign = uint64_t(neg ? 1 : 0) << (f.expBits + f.mantBits);
  return sign | (uint64_t(int64_t(e) + f.bias) << f.mantBits) | frac;
}

// Bits of k * 2^E for |k| < 2^p, exactly (0 gives +0, never -0).
CB_HD uint64_t intTimesPow2Bits(DType t, int64_t k, int E) {
  if (k == 0) return 0;
  const FloatFormat f = floatFormat(t);
  const uint64_t mag = k < 0 ? uint64_t(0) - uint64_t(k) : uint64_t(k);
  const int h = highBit(mag);
  return composeBits(t, k < 0, E + h, (mag ^ (uint64_t(1) << h)) << (f.mantBits - h));
}

// Random finite normal value: random sign and fraction, exponent from the middle of the range
// (never the top binade, so E4M3's NaN code and infinities are out of reach).
CB_HD uint64_t randomFloatBits(DType t, uint64_t h) {
  const FloatInfo fi = floatInfo(t);
  const FloatFormat f = floatFormat(t);
  const int lo = fi.emin + 1 > -16 ? fi.emin + 1 : -16;
  const int hi = fi.emax - 1 < 16 ? fi.emax - 1 : 16;
  // Bits 52..62 pick the exponent, 63 the sign, the low 52 the fraction: disjoint.
  const int e = lo + int((((h >> 52) & 0x7FF) * uint64_t(hi - lo + 1)) >> 11);
  const uint64_t frac = (h & ((uint64_t(1) << 52) - 1)) >> (52 - f.mantBits);
  return composeBits(t, (h >> 63) != 0, e, frac);
}

// Which ranks play which part in an element: positions pos(r) = (r - o) mod n, a rotation by a
// hashed offset (no division per rank, unlike an affine permutation).
struct RankPerm {
  uint64_t o, n;
  CB_HD uint64_t pos(int rank) const {
    const uint64_t r = uint64_t(rank);
    return r >= o ? r - o : r + n - o;
  }
};
// planHash: the element's per-element draw (its high bits pick scales, the rotation uses the rest).
CB_HD RankPerm rankPerm(uint64_t planHash, int nranks) {
  const uint64_t n = nranks > 0 ? uint64_t(nranks) : 1;
  return RankPerm{mulHi64(rotl64(planHash, 32), n), n};
}
CB_HD uint64_t planHash(uint64_t key) {
  return laneHash(key, -1, kLanePlan);
}

// ---- shape: what depends only on (dtype, op, nranks) -------------------------------------------

// Computed once per buffer (makeShape) so per-element work has no divisions; the plain functions
// below build it per call.
struct Shape {
  DType t;
  RedOp op;
  int n;
  // float sum / mulsum: budget B = 2^p - 1 bounds sum_r w_r |k_r|, hence every partial sum in any
  // order. Half of it is spread evenly (ranks at position < m draw |k| <= cu; a window when nranks
  // exceeds it), half geometrically: position j adds bg / 2^(j+2), so a few hashed ranks carry wide
  // significands like real data and the output keeps most of the precision for any nranks.
  int64_t cu, bg;
  uint64_t m;
  int eLo, eHi;  // band of the per-element exponent (sum: scale E, prod: e0, avg: Ea)
  int q;         // prod: bearers' exponents in [-q, q]
};

CB_HD Shape makeShape(DType t, RedOp op, int nranks) {
  Shape s{};
  s.t = t;
  s.op = op;
  s.n = nranks > 0 ? nranks : 1;
  if (!dtypeIsFloat(t)) return s;
  const FloatInfo fi = floatInfo(t);
  const uint64_t n = uint64_t(s.n);
  if (op == RedOp::Sum || op == RedOp::MulSum) {
    const int64_t budget = (int64_t(1) << fi.p) - 1;
    const int64_t bu = budget / 2;
    const bool mul = op == RedOp::MulSum;
    // Total weight of all ranks: mulsum scalars are 1 (even ranks) and 2 (odd ranks).
    const uint64_t wAll = mul ? n + n / 2 : n;
    const uint64_t wMax = (mul && n > 1) ? 2 : 1;
    if (wAll <= uint64_t(bu)) {
      s.m = n;
      s.cu = bu / int64_t(wAll);
    } else {
      s.m = uint64_t(bu) / wMax;  // window of contributors whose total weight fits
      s.cu = s.m > 0 ? bu / int64_t(s.m * wMax) : 0;
    }
    // Geometric caps bg/4, bg/8, ... sum to <= bg/2; times wMax <= 2 stays within bg.
    s.bg = budget - bu;
    // E in [emin, emax - p] keeps every k * 2^E (|k| < 2^p) normal and below the top binade;
    // within that, a band putting output magnitudes around 2^-8 .. 2^8 (like real data).
    s.eLo = clampInt(-8 - (fi.p - 1), fi.emin, fi.emax - fi.p);
    s.eHi = clampInt(8 - (fi.p - 1), fi.emin, fi.emax - fi.p);
  } else if (op == RedOp::Prod) {
    // Three bearers with |e_r| <= q: every subset product has exponent e0 (or 0) plus at most
    // +-3q, kept in [emin, emax - 1].
    s.q = clampInt((fi.emax - 1 - fi.emin) / 9, 1, 2);
    s.eLo = clampInt(-8, fi.emin + 3 * s.q, fi.emax - 1 - 3 * s.q);
    s.eHi = clampInt(8, fi.emin + 3 * s.q, fi.emax - 1 - 3 * s.q);
  } else if (op == RedOp::Avg) {
    // a + b < 2^(Ea+2) stays below the top binade; (a + b) / n >= 2^(Ea - log2 n) stays normal.
    s.eHi = clampInt(8, fi.emin, fi.emax - 2);
    s.eLo = clampInt(fi.emin + ceilLog2(n) + 1, -8, s.eHi);
  }
  return s;
}

// ---- per-element draws ---------------------------------------------------------------------------

// Float sum: rank's integer k_r (contribution k_r * 2^E).
CB_HD int64_t sumShare(const Shape& s, const RankPerm& perm, uint64_t key, int rank) {
  const uint64_t pos = perm.pos(rank);
  const int64_t cap = (pos < s.m ? s.cu : 0) + (pos < 60 ? (s.bg >> (pos + 2)) : 0);
  if (cap == 0) return 0;
  return int64_t(mulHi64(laneHash(key, rank, kLaneInput), uint64_t(2 * cap + 1))) - cap;
}

// Float prod: sign and exponent of rank's factor; the carrier (position 0) also has a random
// fraction, bearers (positions 1..3) a small exponent, everyone else is +-1.
CB_HD void prodFactor(const Shape& s, const RankPerm& perm, int e0, uint64_t key, int rank, bool* neg, int* e,
                      uint64_t* frac) {
  const uint64_t h = laneHash(key, rank, kLaneInput);
  const uint64_t pos = perm.pos(rank);
  *neg = (h >> 63) != 0;
  *frac = 0;
  *e = 0;
  if (pos == 0) {
    *e = e0;
    *frac = (h & ((uint64_t(1) << 52) - 1)) >> (52 - floatFormat(s.t).mantBits);
  } else if (pos <= 3) {
    *e = -s.q + int(((h & 0xFFFF) * uint64_t(2 * s.q + 1)) >> 16);
  }
}

// Float avg: significand A in [2^(p-2), 2^(p-1)) of a contributor, value A * 2^(Ea - (p-2)),
// i.e. [1,2) * 2^Ea with p - 1 significant bits.
CB_HD int64_t avgSignificand(DType t, uint64_t key, int rank) {
  const uint64_t half = uint64_t(1) << (floatInfo(t).p - 2);
  return int64_t(half + (laneHash(key, rank, kLaneInput) & (half - 1)));
}

// Integers: random bits of the width (odd for prod, so wrapped products never collapse to 0).
CB_HD uint64_t intInputBits(DType t, RedOp op, uint64_t key, int rank) {
  uint64_t h = laneHash(key, rank, kLaneInput);
  if (op == RedOp::Prod) h |= 1;
  return h & dtypeMask(t);
}

// ---- generator -----------------------------------------------------------------------------------
// The dtype is a template parameter so each instantiation folds its format constants (host fill
// loops and CUDA kernels instantiate per dtype); s.t must equal T. Runtime-dtype wrappers follow.

// Rank `rank`'s contribution (raw bits) at pattern index `index`; rank in [0, s.n).
template <DType T>
CB_HD uint64_t inputBitsT(const Shape& s, uint64_t seed, uint64_t index, int rank) {
  const uint64_t key = elementKey(seed, index);
  if (!dtypeIsFloat(T)) return intInputBits(T, s.op, key, rank);
  if (s.op == RedOp::Max || s.op == RedOp::Min) return randomFloatBits(T, laneHash(key, rank, kLaneInput));
  const uint64_t ph = planHash(key);
  const RankPerm perm = rankPerm(ph, s.n);
  const int e = drawInt(ph, s.eLo, s.eHi);
  if (s.op == RedOp::Prod) {
    bool neg;
    int er;
    uint64_t frac;
    prodFactor(s, perm, e, key, rank, &neg, &er, &frac);
    return composeBits(T, neg, er, frac);
  }
  if (s.op == RedOp::Avg) {
    if (perm.pos(rank) >= 2) return 0;
    return intTimesPow2Bits(T, avgSignificand(T, key, rank), e - (floatInfo(T).p - 2));
  }
  return intTimesPow2Bits(T, sumShare(s, perm, key, rank), e);  // Sum, MulSum
}

// The exact reduced value (raw bits) at pattern index `index`: O(nranks) per element.
template <DType T>
CB_HD uint64_t outputBitsT(const Shape& s, uint64_t seed, uint64_t index) {
  const RedOp op = s.op;
  const int n = s.n;
  const uint64_t key = elementKey(seed, index);
  if (!dtypeIsFloat(T)) {
    const RedOp fold = (op == RedOp::Avg || op == RedOp::MulSum) ? RedOp::Sum : op;
    uint64_t acc = 0;
    for (int r = 0; r < n; ++r) {
      uint64_t x = intInputBits(T, op, key, r);
      if (op == RedOp::MulSum) x = scaleBits(T, x, mulSumScalar(r));
      acc = r == 0 ? x : applyOp(T, fold, acc, x);
    }
    return op == RedOp::Avg ? divideBits(T, acc, n) : acc;
  }
  if (op == RedOp::Max || op == RedOp::Min) {
    uint64_t acc = 0;
    for (int r = 0; r < n; ++r) {
      const uint64_t x = randomFloatBits(T, laneHash(key, r, kLaneInput));
      acc = r == 0 ? x : applyOp(T, op, acc, x);
    }
    return acc;
  }
  const uint64_t ph = planHash(key);
  const RankPerm perm = rankPerm(ph, n);
  const int e = drawInt(ph, s.eLo, s.eHi);
  if (op == RedOp::Prod) {
    bool negAll = false, neg;
    int eAll = 0, er;
    uint64_t fracAll = 0, frac;
    for (int r = 0; r < n; ++r) {
      prodFactor(s, perm, e, key, r, &neg, &er, &frac);
      negAll = negAll != neg;
      eAll += er;
      fracAll |= frac;  // only the carrier has a fraction
    }
    return composeBits(T, negAll, eAll, fracAll);
  }
  if (op == RedOp::Avg) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r)
      if (perm.pos(r) < 2) sum += avgSignificand(T, key, r);
    // (a + b) = sum * 2^(Ea - (p-2)) exactly; RNE(sum / n) in double, times an exact power of two
    // (normal), then RNE into the type: that double rounding is innocuous for n < 2^20.
    const int shift = e - (floatInfo(T).p - 2);
    double q = double(sum) / double(n);
    q *= doubleOfBits(uint64_t(1023 + shift) << 52);
    return encodeFromDouble(T, q);
  }
  int64_t total = 0;  // Sum, MulSum: |total| < 2^p
  for (int r = 0; r < n; ++r) {
    const int64_t k = sumShare(s, perm, key, r);
    total += op == RedOp::MulSum ? k * mulSumScalar(r) : k;
  }
  return intTimesPow2Bits(T, total, e);
}

// Non-reducing data (copy collectives): integers = random bits of the width; floats = random
// finite normal values (random sign and fraction, mid-range exponent).
template <DType T>
CB_HD uint64_t copyBitsT(uint64_t seed, uint64_t index) {
  const uint64_t h = laneHash(elementKey(seed, index), -1, kLaneInput);
  return dtypeIsFloat(T) ? randomFloatBits(T, h) : (h & dtypeMask(T));
}

#define CB_PATTERN_DISPATCH(t, EXPR)        \
  switch (t) {                              \
    case DType::Int8: {                     \
      constexpr DType T_ = DType::Int8;     \
      return EXPR;                          \
    }                                       \
    case DType::Uint8: {                    \
      constexpr DType T_ = DType::Uint8;    \
      return EXPR;                          \
    }                                       \
    case DType::Int32: {                    \
      constexpr DType T_ = DType::Int32;    \
      return EXPR;                          \
    }                                       \
    case DType::Uint32: {                   \
      constexpr DType T_ = DType::Uint32;   \
      return EXPR;                          \
    }                                       \
    case DType::Int64: {                    \
      constexpr DType T_ = DType::Int64;    \
      return EXPR;                          \
    }                                       \
    case DType::Uint64: {                   \
      constexpr DType T_ = DType::Uint64;   \
      return EXPR;                          \
    }                                       \
    case DType::Float16: {                  \
      constexpr DType T_ = DType::Float16;  \
      return EXPR;                          \
    }                                       \
    case DType::Float32: {                  \
      constexpr DType T_ = DType::Float32;  \
      return EXPR;                          \
    }                                       \
    case DType::Float64: {                  \
      constexpr DType T_ = DType::Float64;  \
      return EXPR;                          \
    }                                       \
    case DType::Bfloat16: {                 \
      constexpr DType T_ = DType::Bfloat16; \
      return EXPR;                          \
    }                                       \
    case DType::F8e4m3: {                   \
      constexpr DType T_ = DType::F8e4m3;   \
      return EXPR;                          \
    }                                       \
    case DType::F8e5m2: {                   \
      constexpr DType T_ = DType::F8e5m2;   \
      return EXPR;                          \
    }                                       \
  }                                         \
  return 0;

CB_HD uint64_t inputBits(const Shape& s, uint64_t seed, uint64_t index,
                         int rank){CB_PATTERN_DISPATCH(s.t, inputBitsT<T_>(s, seed, index, rank))} CB_HD uint64_t
    outputBits(const Shape& s, uint64_t seed, uint64_t index){CB_PATTERN_DISPATCH(s.t, outputBitsT<T_>(s, seed, index))}

// Rank `rank`'s contribution (raw bits) at pattern index `index` of a reduction over nranks ranks.
CB_HD uint64_t reduceInputBits(DType t, RedOp op, int nranks, uint64_t seed, uint64_t index, int rank) {
  return inputBits(makeShape(t, op, nranks), seed, index, rank);
}

// The exact reduced value (raw bits) at pattern index `index`: O(nranks) per element.
CB_HD uint64_t reduceOutputBits(DType t, RedOp op, int nranks, uint64_t seed, uint64_t index) {
  return outputBits(makeShape(t, op, nranks), seed, index);
}

// Non-reducing data of a stream seed (see copyBitsT).
CB_HD uint64_t copyBits(DType t, uint64_t seed, uint64_t index) {
  CB_PATTERN_DISPATCH(t, copyBitsT<T_>(seed, index))
}
#undef CB_PATTERN_DISPATCH

// Float avg as a pre-multiplying backend computes it (NCCL: each input times s = RNE(1/n) in the
// type, then summed): with only two non-zero inputs that too is order-independent, so this is its
// bit-exact result. Within tolerance() of reduceOutputBits except where 1/n is subnormal in the
// type (E4M3 beyond 64 ranks), whose scalar is then off by up to a factor 2. Floats only.
CB_HD uint64_t avgPremulOutputBits(DType t, int nranks, uint64_t seed, uint64_t index) {
  const int n = nranks > 0 ? nranks : 1;
  const uint64_t s = encodeFromDouble(t, 1.0 / double(n));
  uint64_t acc = 0;  // +0
  for (int r = 0; r < n; ++r) {
    const uint64_t x = reduceInputBits(t, RedOp::Avg, n, seed, index, r);
    if (x != 0) acc = applyOp(t, RedOp::Sum, acc, applyOp(t, RedOp::Prod, x, s));
  }
  return acc;
}

}  // namespace pattern
}  // namespace collbench
