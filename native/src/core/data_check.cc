// Host-memory fill and check of pattern segments (data_check.h). The dtype and the segment kind
// are template parameters and the pattern Shape is built once per segment, so each element loop is
// a tight, switch-free loop over up to hundreds of MB (pattern.h's *BitsT<dtype> generators).
#include "data_check.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "element_ops.h"
#include "minifloat.h"
#include "pattern.h"

namespace collbench {
namespace {

template <size_t N>
struct StorageOf;
template <>
struct StorageOf<1> {
  using type = uint8_t;
};
template <>
struct StorageOf<2> {
  using type = uint16_t;
};
template <>
struct StorageOf<4> {
  using type = uint32_t;
};
template <>
struct StorageOf<8> {
  using type = uint64_t;
};

// dtypeSize() as a constant expression, for template arguments.
constexpr size_t sizeOf(DType t) {
  return (t == DType::Int8 || t == DType::Uint8 || t == DType::F8e4m3 || t == DType::F8e5m2) ? 1
         : (t == DType::Float16 || t == DType::Bfloat16)                                     ? 2
         : (t == DType::Int32 || t == DType::Uint32 || t == DType::Float32)                  ? 4
                                                                                             : 8;
}

// The value element i of a segment holds, per kind (kind fixed per instantiation).
template <DType DT, SegKind K>
inline uint64_t patternValue(const pattern::Shape& sh, uint64_t seed, int rank, uint64_t index) {
  if (K == SegKind::ReduceInput) return pattern::inputBitsT<DT>(sh, seed, index, rank);
  if (K == SegKind::ReduceOutput) return pattern::outputBitsT<DT>(sh, seed, index);
  if (K == SegKind::Copy) return pattern::copyBitsT<DT>(seed, index);
  return 0;
}

template <DType DT, SegKind K>
void fillLoop(unsigned char* base, RedOp op, int nranks, uint64_t seed, const Segment& s) {
  using T = typename StorageOf<sizeOf(DT)>::type;
  unsigned char* p = base + s.offset * sizeof(T);
  const pattern::Shape sh = pattern::makeShape(DT, op, nranks);  // per-buffer constants, hoisted
  for (uint64_t i = 0; i < s.count; ++i) {
    const T v = T(patternValue<DT, K>(sh, seed, s.rank, s.indexBase + i));
    memcpy(p + i * sizeof(T), &v, sizeof(T));  // a plain store once inlined; no alignment assumed
  }
}

// Returns the wrong count of the segment; *firstI = index within the segment of its first wrong.
template <DType DT, SegKind K>
uint64_t checkLoop(const unsigned char* base, RedOp op, int nranks, uint64_t seed, const Segment& s, uint64_t* firstI) {
  using T = typename StorageOf<sizeOf(DT)>::type;
  const unsigned char* p = base + s.offset * sizeof(T);
  // Only reduced values may be inexact (float avg); zeros, inputs and copies must be bit-exact.
  const uint64_t tol = K == SegKind::ReduceOutput ? pattern::tolerance(DT, op) : 0;
  const pattern::Shape sh = pattern::makeShape(DT, op, nranks);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < s.count; ++i) {
    T got;
    memcpy(&got, p + i * sizeof(T), sizeof(T));
    const T want = T(patternValue<DT, K>(sh, seed, s.rank, s.indexBase + i));
    const bool bad = tol == 0 ? got != want : pattern::bitDistance(DT, got, want) > tol;
    if (bad) {
      if (wrong == 0) *firstI = i;
      ++wrong;
    }
  }
  return wrong;
}

template <DType DT>
void fillSegment(unsigned char* base, RedOp op, int nranks, uint64_t seed, const Segment& s) {
  switch (s.kind) {
    case SegKind::ReduceInput:
      fillLoop<DT, SegKind::ReduceInput>(base, op, nranks, seed, s);
      break;
    case SegKind::ReduceOutput:
      fillLoop<DT, SegKind::ReduceOutput>(base, op, nranks, seed, s);
      break;
    case SegKind::Copy:
      fillLoop<DT, SegKind::Copy>(base, op, nranks, seed, s);
      break;
    default:
      memset(base + s.offset * sizeOf(DT), 0, s.count * sizeOf(DT));
      break;
  }
}

template <DType DT>
uint64_t checkSegment(const unsigned char* base, RedOp op, int nranks, uint64_t seed, const Segment& s,
                      uint64_t* firstI) {
  switch (s.kind) {
    case SegKind::ReduceInput:
      return checkLoop<DT, SegKind::ReduceInput>(base, op, nranks, seed, s, firstI);
    case SegKind::ReduceOutput:
      return checkLoop<DT, SegKind::ReduceOutput>(base, op, nranks, seed, s, firstI);
    case SegKind::Copy:
      return checkLoop<DT, SegKind::Copy>(base, op, nranks, seed, s, firstI);
    default:
      return checkLoop<DT, SegKind::Zero>(base, op, nranks, seed, s, firstI);
  }
}

// Expands CALL(DT) with the compile-time dtype matching the runtime one.
#define CB_DTYPE_DISPATCH(dtype, CALL) \
  switch (dtype) {                     \
    case DType::Int8:                  \
      CALL(DType::Int8);               \
      break;                           \
    case DType::Uint8:                 \
      CALL(DType::Uint8);              \
      break;                           \
    case DType::Int32:                 \
      CALL(DType::Int32);              \
      break;                           \
    case DType::Uint32:                \
      CALL(DType::Uint32);             \
      break;                           \
    case DType::Int64:                 \
      CALL(DType::Int64);              \
      break;                           \
    case DType::Uint64:                \
      CALL(DType::Uint64);             \
      break;                           \
    case DType::Float16:               \
      CALL(DType::Float16);            \
      break;                           \
    case DType::Float32:               \
      CALL(DType::Float32);            \
      break;                           \
    case DType::Float64:               \
      CALL(DType::Float64);            \
      break;                           \
    case DType::Bfloat16:              \
      CALL(DType::Bfloat16);           \
      break;                           \
    case DType::F8e4m3:                \
      CALL(DType::F8e4m3);             \
      break;                           \
    case DType::F8e5m2:                \
      CALL(DType::F8e5m2);             \
      break;                           \
  }

Status badSpec(const std::string& message, const char* call) {
  return Status::Error("core", "CORE_BAD_SPEC", message, CB_SITE(call));
}

// Arguments shared by fill and check; each segment must name an existing buffer and a valid kind.
Status validate(const void* sendBase, const void* recvBase, DType dtype, RedOp op, int nranks,
                const std::vector<Segment>& segs, const char* call) {
  if (int(dtype) < 0 || int(dtype) >= kDTypeCount) return badSpec("unknown dtype " + std::to_string(int(dtype)), call);
  if (int(op) < 0 || int(op) >= kRedOpCount) return badSpec("unknown reduction op " + std::to_string(int(op)), call);
  if (nranks < 1) return badSpec("nranks must be >= 1, got " + std::to_string(nranks), call);
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    const std::string where = "segment " + std::to_string(k) + ": ";
    if (s.buf != BufId::Send && s.buf != BufId::Recv)
      return badSpec(where + "unknown buffer id " + std::to_string(int(s.buf)), call);
    if (int(s.kind) < 0 || int(s.kind) > int(SegKind::Zero))
      return badSpec(where + "unknown segment kind " + std::to_string(int(s.kind)), call);
    const int n = s.nranks > 0 ? s.nranks : nranks;
    if (s.kind == SegKind::ReduceInput && (s.rank < 0 || s.rank >= n))
      return badSpec(where + "rank " + std::to_string(s.rank) + " outside 0.." + std::to_string(n - 1), call);
    if (s.count > 0 && (s.buf == BufId::Send ? sendBase : recvBase) == nullptr)
      return badSpec(where + (s.buf == BufId::Send ? "send" : "recv") + " buffer is null", call);
  }
  return Status::Ok();
}

}  // namespace

std::string formatElement(DType dtype, uint64_t bits) {
  const size_t bytes = dtypeSize(dtype);
  bits &= dtypeMask(dtype);
  char buf[96];
  const int hexDigits = int(2 * bytes);
  if (dtypeIsFloat(dtype)) {
    // Enough significant digits to tell neighbouring values apart (max_digits10 of each format).
    int digits = 17;
    switch (dtype) {
      case DType::Float16:
        digits = 5;
        break;
      case DType::Bfloat16:
        digits = 4;
        break;
      case DType::Float32:
        digits = 9;
        break;
      case DType::F8e4m3:
      case DType::F8e5m2:
        digits = 3;
        break;
      default:
        break;
    }
    std::snprintf(buf, sizeof buf, "%.*g (0x%0*" PRIx64 ")", digits, decodeToDouble(dtype, bits), hexDigits, bits);
  } else if (dtypeIsSigned(dtype)) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " (0x%0*" PRIx64 ")", signExtend(dtype, bits), hexDigits, bits);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " (0x%0*" PRIx64 ")", bits, hexDigits, bits);
  }
  return buf;
}

Status hostFill(void* sendBase, void* recvBase, DType dtype, RedOp op, int nranks, uint64_t baseSeed,
                const std::vector<Segment>& segs) {
  CB_TRY(validate(sendBase, recvBase, dtype, op, nranks, segs, "hostFill"));
  for (const Segment& s : segs) {
    if (s.count == 0) continue;
    unsigned char* base = static_cast<unsigned char*>(s.buf == BufId::Send ? sendBase : recvBase);
    const uint64_t seed = pattern::mixSeed(baseSeed, s.stream);
#define CB_FILL(DT) fillSegment<DT>(base, op, s.nranks > 0 ? s.nranks : nranks, seed, s)
    CB_DTYPE_DISPATCH(dtype, CB_FILL)
#undef CB_FILL
  }
  return Status::Ok();
}

Status hostCheck(const void* recvBase, const void* sendBase, DType dtype, RedOp op, int nranks, uint64_t baseSeed,
                 const std::vector<Segment>& segs, CheckOutcome* out) {
  if (out == nullptr) return badSpec("no CheckOutcome to write", "hostCheck");
  *out = CheckOutcome{};
  CB_TRY(validate(sendBase, recvBase, dtype, op, nranks, segs, "hostCheck"));
  const Segment* firstSeg = nullptr;
  for (const Segment& s : segs) {
    if (s.count == 0) continue;
    const unsigned char* base = static_cast<const unsigned char*>(s.buf == BufId::Send ? sendBase : recvBase);
    const uint64_t seed = pattern::mixSeed(baseSeed, s.stream);
    uint64_t firstI = 0, wrong = 0;
#define CB_CHECK(DT) wrong = checkSegment<DT>(base, op, s.nranks > 0 ? s.nranks : nranks, seed, s, &firstI)
    CB_DTYPE_DISPATCH(dtype, CB_CHECK)
#undef CB_CHECK
    if (wrong == 0) continue;
    out->wrong += wrong;
    if (!out->haveFirst || s.offset + firstI < out->firstIndex) {
      out->haveFirst = true;
      out->firstIndex = s.offset + firstI;
      firstSeg = &s;
    }
  }
  if (out->haveFirst) {
    // Regenerate the one expected value for the report (cheap next to the scan).
    const Segment& s = *firstSeg;
    const uint64_t i = out->firstIndex - s.offset;
    const uint64_t seed = pattern::mixSeed(baseSeed, s.stream);
    const uint64_t index = s.indexBase + i;
    uint64_t want = 0;
    switch (s.kind) {
      case SegKind::ReduceInput:
        want = pattern::reduceInputBits(dtype, op, s.nranks > 0 ? s.nranks : nranks, seed, index, s.rank);
        break;
      case SegKind::ReduceOutput:
        want = pattern::reduceOutputBits(dtype, op, s.nranks > 0 ? s.nranks : nranks, seed, index);
        break;
      case SegKind::Copy:
        want = pattern::copyBits(dtype, seed, index);
        break;
      default:
        want = 0;
        break;
    }
    const void* base = s.buf == BufId::Send ? sendBase : recvBase;
    out->expected = formatElement(dtype, want);
    out->got = formatElement(dtype, loadBits(base, dtype, out->firstIndex));
  }
  return Status::Ok();
}

}  // namespace collbench
