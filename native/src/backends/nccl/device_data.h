// Fill and check of one pattern segment over a strided index range, written once as CB_HD code: the CUDA kernels of
// nccl_kernels.cu run it with a grid stride and native/test/nccl_data_selftest.cc runs it on the host against
// core/data_check.h. Values come from core/pattern.h, the one source every backend shares.
#pragma once
#include <cstdint>

#include "core/element_ops.h"
#include "core/pattern.h"
#include "core/spec.h"
#include "core/types.h"

namespace collbench::devdata {

// One segment, ready for per-element work (the seed already mixed with the segment's stream).
struct SegmentArgs {
  uint64_t offset = 0;  // element offset in its buffer
  uint64_t count = 0;
  uint64_t indexBase = 0;  // pattern index of element 0
  uint64_t seed = 0;       // pattern::mixSeed(baseSeed, stream)
  uint64_t tolerance = 0;  // bit distance allowed (ReduceOutput only: pattern::tolerance)
  pattern::Shape shape{};  // makeShape(dtype, op, nranks)
  SegKind kind = SegKind::Zero;
  int rank = 0;  // contributing rank (ReduceInput)
};

inline SegmentArgs segmentArgs(DType dtype, RedOp op, int nranks, uint64_t baseSeed, const Segment& s) {
  SegmentArgs a;
  a.offset = s.offset;
  a.count = s.count;
  a.indexBase = s.indexBase;
  a.seed = pattern::mixSeed(baseSeed, s.stream);
  a.tolerance = s.kind == SegKind::ReduceOutput ? pattern::tolerance(dtype, op) : 0;
  a.shape = pattern::makeShape(dtype, op, nranks);
  a.kind = s.kind;
  a.rank = s.rank;
  return a;
}

template <size_t N>
struct Storage;
template <>
struct Storage<1> {
  using type = uint8_t;
};
template <>
struct Storage<2> {
  using type = uint16_t;
};
template <>
struct Storage<4> {
  using type = uint32_t;
};
template <>
struct Storage<8> {
  using type = uint64_t;
};

// dtypeSize() as a constant expression, for template arguments.
CB_HD constexpr size_t sizeOf(DType t) {
  return (t == DType::Int8 || t == DType::Uint8 || t == DType::F8e4m3 || t == DType::F8e5m2) ? 1
         : (t == DType::Float16 || t == DType::Bfloat16)                                     ? 2
         : (t == DType::Int32 || t == DType::Uint32 || t == DType::Float32)                  ? 4
                                                                                             : 8;
}

// The value element i of the segment holds (the kind is uniform per launch: no divergence).
template <DType DT>
CB_HD uint64_t expectedBits(const SegmentArgs& a, uint64_t i) {
  const uint64_t index = a.indexBase + i;
  switch (a.kind) {
    case SegKind::ReduceInput:
      return pattern::inputBitsT<DT>(a.shape, a.seed, index, a.rank);
    case SegKind::ReduceOutput:
      return pattern::outputBitsT<DT>(a.shape, a.seed, index);
    case SegKind::Copy:
      return pattern::copyBitsT<DT>(a.seed, index);
    default:
      return 0;
  }
}

// Writes elements begin, begin + stride, ... of the segment into `base` (its buffer).
template <DType DT>
CB_HD void fillRange(void* base, const SegmentArgs& a, uint64_t begin, uint64_t stride) {
  using T = typename Storage<sizeOf(DT)>::type;
  T* p = static_cast<T*>(base) + a.offset;
  for (uint64_t i = begin; i < a.count; i += stride) p[i] = T(expectedBits<DT>(a, i));
}

// Compares elements begin, begin + stride, ... with their expected values; adds the wrong ones to
// *wrong and lowers *firstOffset to the buffer offset of the first wrong one seen.
template <DType DT>
CB_HD void checkRange(const void* base, const SegmentArgs& a, uint64_t begin, uint64_t stride, uint64_t* wrong,
                      uint64_t* firstOffset) {
  using T = typename Storage<sizeOf(DT)>::type;
  const T* p = static_cast<const T*>(base) + a.offset;
  for (uint64_t i = begin; i < a.count; i += stride) {
    const uint64_t got = p[i];
    const uint64_t want = T(expectedBits<DT>(a, i));
    const bool bad = a.tolerance == 0 ? got != want : pattern::bitDistance(DT, got, want) > a.tolerance;
    if (bad) {
      ++*wrong;
      if (a.offset + i < *firstOffset) *firstOffset = a.offset + i;
    }
  }
}

}  // namespace collbench::devdata
