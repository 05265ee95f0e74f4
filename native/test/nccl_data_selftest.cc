// Host self-test of the CUDA kernels' data loops (backends/nccl/device_data.h), run with a grid stride:
// for every dtype x op x nranks x segment kind the strided fill must write what hostFill writes, and the
// strided check of a buffer with planted errors must count and locate them as hostCheck does. No CUDA
// needed. Prints failures and "N passed, N failed"; exits 1 on any failure.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/nccl/device_data.h"
#include "core/data_check.h"

using namespace collbench;

namespace {

int gPassed = 0, gFailed = 0;

void expect(bool ok, const std::string& what) {
  if (ok) {
    ++gPassed;
    return;
  }
  if (gFailed++ < 40) std::printf("FAIL %s\n", what.c_str());
}

const DType kTypes[] = {DType::Int8,    DType::Uint8,   DType::Int32,   DType::Uint32,   DType::Int64,  DType::Uint64,
                        DType::Float16, DType::Float32, DType::Float64, DType::Bfloat16, DType::F8e4m3, DType::F8e5m2};
const RedOp kOps[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg, RedOp::MulSum};
const SegKind kKinds[] = {SegKind::ReduceInput, SegKind::ReduceOutput, SegKind::Copy, SegKind::Zero};

// Emulates a grid: `threads` workers, worker t handles elements t, t + threads, ...
template <DType DT>
void deviceFill(void* base, const devdata::SegmentArgs& a, uint64_t threads) {
  for (uint64_t t = 0; t < threads; ++t) devdata::fillRange<DT>(base, a, t, threads);
}
template <DType DT>
void deviceCheck(const void* base, const devdata::SegmentArgs& a, uint64_t threads, uint64_t* wrong, uint64_t* first) {
  *wrong = 0;
  *first = ~uint64_t(0);
  for (uint64_t t = 0; t < threads; ++t) {
    uint64_t w = 0, f = ~uint64_t(0);
    devdata::checkRange<DT>(base, a, t, threads, &w, &f);
    *wrong += w;  // the kernel's atomicAdd / atomicMin
    if (f < *first) *first = f;
  }
}

template <DType DT>
void runType(int nranks, RedOp op, SegKind kind) {
  const size_t ts = dtypeSize(DT);
  const uint64_t count = 1000, offset = 37;
  Segment s;
  s.buf = BufId::Recv;
  s.kind = kind;
  s.offset = offset;
  s.count = count;
  s.indexBase = 12345;
  s.stream = 3;
  s.rank = nranks - 1;
  const uint64_t seed = 0xC0FFEE;
  const std::string what = "dtype " + std::to_string(int(DT)) + " op " + std::to_string(int(op)) + " n " +
                           std::to_string(nranks) + " kind " + std::to_string(int(kind));

  std::vector<unsigned char> host((offset + count + 5) * ts, 0xA5), dev(host);
  std::vector<unsigned char> dummy(8);
  Status st = hostFill(dummy.data(), host.data(), DT, op, nranks, seed, {s});
  expect(st.ok, what + " hostFill: " + st.message());
  const devdata::SegmentArgs a = devdata::segmentArgs(DT, op, nranks, seed, s);
  deviceFill<DT>(dev.data(), a, 7);
  expect(host == dev, what + " strided fill differs from hostFill");

  // Plant errors at three offsets (bit flips of the low bit) and compare both checks.
  const uint64_t planted[] = {offset + 900, offset + 41, offset + 500};
  for (uint64_t p : planted) dev[p * ts] ^= 1;
  uint64_t wrong = 0, first = 0;
  deviceCheck<DT>(dev.data(), a, 13, &wrong, &first);
  CheckOutcome out;
  st = hostCheck(dev.data(), dummy.data(), DT, op, nranks, seed, {s}, &out);
  expect(st.ok, what + " hostCheck: " + st.message());
  expect(wrong == out.wrong, what + " wrong " + std::to_string(wrong) + " vs host " + std::to_string(out.wrong));
  if (out.wrong > 0)
    expect(out.haveFirst && first == out.firstIndex,
           what + " first " + std::to_string(first) + " vs host " + std::to_string(out.firstIndex));
  // A low-bit flip is 1 ulp: within tolerance only for float avg outputs; everything else must see 3.
  const bool tolerated = a.tolerance > 0;
  expect(tolerated ? wrong == 0 : wrong == 3, what + " planted errors seen: " + std::to_string(wrong));
  // A clean buffer: nothing wrong, nothing found.
  deviceFill<DT>(dev.data(), a, 5);
  deviceCheck<DT>(dev.data(), a, 3, &wrong, &first);
  expect(wrong == 0 && first == ~uint64_t(0), what + " clean buffer reported wrong");
}

void runAll(DType t, int nranks, RedOp op, SegKind kind) {
  switch (t) {
#define CB_CASE(DT)                \
  case DT:                         \
    runType<DT>(nranks, op, kind); \
    break;
    // clang-format off (a list of macro calls without semicolons, which clang-format reflows on every pass)
    CB_CASE(DType::Int8)
    CB_CASE(DType::Uint8)
    CB_CASE(DType::Int32)
    CB_CASE(DType::Uint32)
    CB_CASE(DType::Int64)
    CB_CASE(DType::Uint64)
    CB_CASE(DType::Float16)
    CB_CASE(DType::Float32)
    CB_CASE(DType::Float64)
    CB_CASE(DType::Bfloat16)
    CB_CASE(DType::F8e4m3)
    CB_CASE(DType::F8e5m2)
    // clang-format on
#undef CB_CASE
  }
}

}  // namespace

int main() {
  for (DType t : kTypes)
    for (RedOp op : kOps)
      for (int n : {1, 2, 3, 8, 64})
        for (SegKind k : kKinds) runAll(t, n, op, k);
  std::printf("nccl device data: %d passed, %d failed\n", gPassed, gFailed);
  return gFailed == 0 ? 0 : 1;
}
