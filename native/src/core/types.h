// Shared enums of the native layer: datatypes, reduction ops and collectives (from collectives.def) with their name
// tables. Datatype and op values equal NCCL's, so the NCCL backend passes them through; test/native/enum-ids.test.ts
// compares them with bench/core/types.ts in every built module.
#pragma once
#include <cstddef>
#include <cstdint>

namespace collbench {

// One enum value and its name as the TypeScript layer (and the command line) spells it. Each enum's
// table lists every value once, in value order (checked below), so a value added without a name, or a
// table out of order, fails to compile.
struct EnumName {
  const char* name;
  int value;
};

template <size_t N>
constexpr bool enumTableInOrder(const EnumName (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (table[i].value != static_cast<int>(i)) return false;
  return true;
}

enum class DType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  F8e4m3 = 10,
  F8e5m2 = 11,
};
constexpr int kDTypeCount = 12;
inline constexpr EnumName kDTypeNames[] = {
    {"int8", static_cast<int>(DType::Int8)},      {"uint8", static_cast<int>(DType::Uint8)},
    {"int32", static_cast<int>(DType::Int32)},    {"uint32", static_cast<int>(DType::Uint32)},
    {"int64", static_cast<int>(DType::Int64)},    {"uint64", static_cast<int>(DType::Uint64)},
    {"half", static_cast<int>(DType::Float16)},   {"float", static_cast<int>(DType::Float32)},
    {"double", static_cast<int>(DType::Float64)}, {"bfloat16", static_cast<int>(DType::Bfloat16)},
    {"f8e4m3", static_cast<int>(DType::F8e4m3)},  {"f8e5m2", static_cast<int>(DType::F8e5m2)},
};
static_assert(static_cast<int>(sizeof kDTypeNames / sizeof kDTypeNames[0]) == kDTypeCount &&
              enumTableInOrder(kDTypeNames));

enum class RedOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4, MulSum = 5 };
constexpr int kRedOpCount = 6;
inline constexpr EnumName kRedOpNames[] = {
    {"sum", static_cast<int>(RedOp::Sum)}, {"prod", static_cast<int>(RedOp::Prod)},
    {"max", static_cast<int>(RedOp::Max)}, {"min", static_cast<int>(RedOp::Min)},
    {"avg", static_cast<int>(RedOp::Avg)}, {"mulsum", static_cast<int>(RedOp::MulSum)},
};
static_assert(static_cast<int>(sizeof kRedOpNames / sizeof kRedOpNames[0]) == kRedOpCount &&
              enumTableInOrder(kRedOpNames));

// The collectives, their names and traits, all from collectives.def (one line per collective).
enum class Coll : int {
#define CB_COLL(Enum, ...) Enum,
#include "collectives.def"
#undef CB_COLL
};
inline constexpr EnumName kCollNames[] = {
#define CB_COLL(Enum, name, ...) {name, static_cast<int>(Coll::Enum)},
#include "collectives.def"
#undef CB_COLL
};
constexpr int kCollCount = static_cast<int>(sizeof kCollNames / sizeof kCollNames[0]);
static_assert(enumTableInOrder(kCollNames));

// Where an in-place op's pointers must sit (nccl-tests' layouts; core/op_checks.h checks them): send == recv; this
// rank's chunk of a count*nranks recv buffer (send == recv + rank*count); or of the send buffer (recv == send +
// rank*count).
enum class InPlace : int { Same, SendInRecv, RecvInSend };
struct CollTraits {
  InPlace inPlace;
  bool rooted;    // has a root rank (-r)
  bool reducing;  // takes a reduction op (-o)
};
inline constexpr CollTraits kCollTraits[] = {
#define CB_COLL(Enum, name, method, inPlace, rooted, reducing) {InPlace::inPlace, rooted, reducing},
#include "collectives.def"
#undef CB_COLL
};
constexpr bool collValid(Coll c) {
  return static_cast<int>(c) >= 0 && static_cast<int>(c) < kCollCount;
}
constexpr bool collReducing(Coll c) {
  return collValid(c) && kCollTraits[static_cast<int>(c)].reducing;
}
constexpr bool collRooted(Coll c) {
  return collValid(c) && kCollTraits[static_cast<int>(c)].rooted;
}

#if defined(__CUDACC__)
#define CB_HD __host__ __device__ inline
#else
#define CB_HD inline
#endif

CB_HD size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Int8:
    case DType::Uint8:
    case DType::F8e4m3:
    case DType::F8e5m2:
      return 1;
    case DType::Float16:
    case DType::Bfloat16:
      return 2;
    case DType::Int32:
    case DType::Uint32:
    case DType::Float32:
      return 4;
    default:
      return 8;
  }
}

CB_HD bool dtypeIsFloat(DType t) {
  return t == DType::Float16 || t == DType::Float32 || t == DType::Float64 || t == DType::Bfloat16 ||
         t == DType::F8e4m3 || t == DType::F8e5m2;
}

}  // namespace collbench
