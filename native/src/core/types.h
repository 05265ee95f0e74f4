// Shared enums of the native layer: datatypes, reduction ops and collectives.
// Datatype and op values equal NCCL's ncclDataType_t / ncclRedOp_t so the NCCL backend can pass them
// through; the TypeScript mirror is bench/core/types.ts (keep the two in step).
#pragma once
#include <cstddef>
#include <cstdint>

namespace collbench {

enum class DType : int {
  Int8 = 0, Uint8 = 1, Int32 = 2, Uint32 = 3, Int64 = 4, Uint64 = 5,
  Float16 = 6, Float32 = 7, Float64 = 8, Bfloat16 = 9, F8e4m3 = 10, F8e5m2 = 11,
};
constexpr int kDTypeCount = 12;

enum class RedOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4, MulSum = 5 };
constexpr int kRedOpCount = 6;

// Order and names follow nccl-tests' binaries.
enum class Coll : int {
  AllReduce = 0, AllGather = 1, ReduceScatter = 2, Broadcast = 3, Reduce = 4, AllToAll = 5,
  AllToAllV = 6, Gather = 7, Scatter = 8, SendRecv = 9, HyperCube = 10,
};
constexpr int kCollCount = 11;

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
