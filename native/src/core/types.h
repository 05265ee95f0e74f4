// Shared enums of the native layer: datatypes, reduction ops and collectives, each with its table of
// names. Datatype and op values equal NCCL's ncclDataType_t / ncclRedOp_t so the NCCL backend can pass
// them through; the TypeScript mirror is bench/core/types.ts: every module's enumIds() hands the tables
// to JS, and test/native/enum-ids.test.ts fails when the two differ.
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
  Int8 = 0, Uint8 = 1, Int32 = 2, Uint32 = 3, Int64 = 4, Uint64 = 5,
  Float16 = 6, Float32 = 7, Float64 = 8, Bfloat16 = 9, F8e4m3 = 10, F8e5m2 = 11,
};
constexpr int kDTypeCount = 12;
inline constexpr EnumName kDTypeNames[] = {
    {"int8", static_cast<int>(DType::Int8)},       {"uint8", static_cast<int>(DType::Uint8)},
    {"int32", static_cast<int>(DType::Int32)},     {"uint32", static_cast<int>(DType::Uint32)},
    {"int64", static_cast<int>(DType::Int64)},     {"uint64", static_cast<int>(DType::Uint64)},
    {"half", static_cast<int>(DType::Float16)},    {"float", static_cast<int>(DType::Float32)},
    {"double", static_cast<int>(DType::Float64)},  {"bfloat16", static_cast<int>(DType::Bfloat16)},
    {"f8e4m3", static_cast<int>(DType::F8e4m3)},   {"f8e5m2", static_cast<int>(DType::F8e5m2)},
};
static_assert(static_cast<int>(sizeof kDTypeNames / sizeof kDTypeNames[0]) == kDTypeCount && enumTableInOrder(kDTypeNames));

enum class RedOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4, MulSum = 5 };
constexpr int kRedOpCount = 6;
inline constexpr EnumName kRedOpNames[] = {
    {"sum", static_cast<int>(RedOp::Sum)}, {"prod", static_cast<int>(RedOp::Prod)},
    {"max", static_cast<int>(RedOp::Max)}, {"min", static_cast<int>(RedOp::Min)},
    {"avg", static_cast<int>(RedOp::Avg)}, {"mulsum", static_cast<int>(RedOp::MulSum)},
};
static_assert(static_cast<int>(sizeof kRedOpNames / sizeof kRedOpNames[0]) == kRedOpCount && enumTableInOrder(kRedOpNames));

// Order and names follow nccl-tests' binaries (all_reduce_perf, ...).
enum class Coll : int {
  AllReduce = 0, AllGather = 1, ReduceScatter = 2, Broadcast = 3, Reduce = 4, AllToAll = 5,
  AllToAllV = 6, Gather = 7, Scatter = 8, SendRecv = 9, HyperCube = 10,
};
constexpr int kCollCount = 11;
inline constexpr EnumName kCollNames[] = {
    {"all_reduce", static_cast<int>(Coll::AllReduce)}, {"all_gather", static_cast<int>(Coll::AllGather)},
    {"reduce_scatter", static_cast<int>(Coll::ReduceScatter)}, {"broadcast", static_cast<int>(Coll::Broadcast)},
    {"reduce", static_cast<int>(Coll::Reduce)},         {"alltoall", static_cast<int>(Coll::AllToAll)},
    {"alltoallv", static_cast<int>(Coll::AllToAllV)},   {"gather", static_cast<int>(Coll::Gather)},
    {"scatter", static_cast<int>(Coll::Scatter)},       {"sendrecv", static_cast<int>(Coll::SendRecv)},
    {"hypercube", static_cast<int>(Coll::HyperCube)},
};
static_assert(static_cast<int>(sizeof kCollNames / sizeof kCollNames[0]) == kCollCount && enumTableInOrder(kCollNames));

#if defined(__CUDACC__)
#define CB_HD __host__ __device__ inline
#else
#define CB_HD inline
#endif

CB_HD size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Int8: case DType::Uint8: case DType::F8e4m3: case DType::F8e5m2: return 1;
    case DType::Float16: case DType::Bfloat16: return 2;
    case DType::Int32: case DType::Uint32: case DType::Float32: return 4;
    default: return 8;
  }
}

CB_HD bool dtypeIsFloat(DType t) {
  return t == DType::Float16 || t == DType::Float32 || t == DType::Float64 || t == DType::Bfloat16 ||
         t == DType::F8e4m3 || t == DType::F8e5m2;
}

}  // namespace collbench
