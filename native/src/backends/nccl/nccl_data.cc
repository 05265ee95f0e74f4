// NcclBackend's buffer contents (nccl_backend.h): zeroing, pattern fill and check on the device through
// nccl_kernels.cu (two numbers per segment come back), and the first wrong element named with its
// expected value regenerated on the host (core/pattern.h), as the host backends' check does.
#include "backends/nccl/nccl_backend.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/nccl/nccl_internal.h"
#include "backends/nccl/nccl_kernels.h"
#include "core/backend_errors.h"
#include "core/data_check.h"
#include "core/pattern.h"

namespace collbench {

// -------------------------------------------------------------------------------------------------
// Data

namespace {
Status segmentInBuffer(const Segment& s, uint64_t ts, uint64_t bufBytes, const char* what) {
  const uint64_t elems = bufBytes / ts;
  if (s.offset > elems || s.count > elems - s.offset)
    return badSpec(std::string(what) + " segment [" + std::to_string(s.offset) + ", +" + std::to_string(s.count) +
                       ") overruns the " + (s.buf == BufId::Send ? "send" : "recv") + " buffer of " +
                       std::to_string(elems) + " elements",
                   what);
  return Status::Ok();
}
}  // namespace

Status NcclBackend::localZero(int local, BufId which, uint64_t offsetBytes, uint64_t bytes) {
  CB_TRY(checkLocalIndex(local));
  Local& l = locals_[local];
  const DeviceBuffer& b = which == BufId::Send ? l.send : l.recv;
  if (offsetBytes > b.bytes || bytes > b.bytes - offsetBytes)
    return badSpec("zero of " + std::to_string(bytes) + " bytes at " + std::to_string(offsetBytes) + " overruns a " +
                       std::to_string(b.bytes) + "-byte buffer",
                   "NcclBackend::zero");
  if (bytes == 0) return Status::Ok();
  CB_TRY(setDevice(local));
  CB_CUDA(cudaMemsetAsync(static_cast<char*>(b.ptr) + offsetBytes, 0, bytes, l.stream), "cudaMemsetAsync");
  return Status::Ok();
}

Status NcclBackend::localFill(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) {
  CB_TRY(checkLocalIndex(local));
  Local& l = locals_[local];
  const uint64_t ts = dtypeSize(dtype);
  CB_TRY(setDevice(local));
  for (const Segment& s : segs) {
    const DeviceBuffer& b = s.buf == BufId::Send ? l.send : l.recv;
    CB_TRY(segmentInBuffer(s, ts, b.bytes, "fill"));
    const int n = s.nranks > 0 ? s.nranks : groupSize_;  // a process group's op: its ranks
    if (s.kind == SegKind::ReduceInput && (s.rank < 0 || s.rank >= n))
      return badSpec("fill segment of rank " + std::to_string(s.rank) + " outside 0.." + std::to_string(n - 1),
                     "NcclBackend::fill");
    const devdata::SegmentArgs a = devdata::segmentArgs(dtype, op, s.nranks > 0 ? s.nranks : groupSize_, seed, s);
    CB_CUDA(ncclkernels::launchFill(dtype, b.ptr, a, l.stream), "fill kernel launch");
  }
  return Status::Ok();
}

Status NcclBackend::ensureCheckSlots(Local& l, int slots) {
  if (l.checkSlots >= slots) return Status::Ok();
  if (l.checkDev != nullptr) cudaFree(l.checkDev);
  if (l.checkHost != nullptr) cudaFreeHost(l.checkHost);
  l.checkDev = nullptr;
  l.checkHost = nullptr;
  l.checkSlots = 0;
  const int n = std::max(slots, 64);
  CB_CUDA(cudaMalloc(reinterpret_cast<void**>(&l.checkDev), sizeof(unsigned long long) * 2 * n),
          "cudaMalloc (check results)");
  CB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&l.checkHost), sizeof(unsigned long long) * 2 * n),
          "cudaMallocHost (check results)");
  l.checkSlots = n;
  return Status::Ok();
}

Status NcclBackend::localCheck(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                               CheckOutcome* out) {
  if (out == nullptr) return badSpec("no CheckOutcome to write", "NcclBackend::check");
  *out = CheckOutcome{};
  CB_TRY(checkLocalIndex(local));
  Local& l = locals_[local];
  const uint64_t ts = dtypeSize(dtype);
  const int nseg = static_cast<int>(segs.size());
  if (nseg == 0) return Status::Ok();
  CB_TRY(setDevice(local));
  CB_TRY(ensureCheckSlots(l, nseg));
  CB_CUDA(ncclkernels::launchResetResults(l.checkDev, nseg, l.stream), "check reset kernel launch");
  for (int k = 0; k < nseg; ++k) {
    const Segment& s = segs[k];
    const DeviceBuffer& b = s.buf == BufId::Send ? l.send : l.recv;
    CB_TRY(segmentInBuffer(s, ts, b.bytes, "check"));
    const devdata::SegmentArgs a = devdata::segmentArgs(dtype, op, s.nranks > 0 ? s.nranks : groupSize_, seed, s);
    CB_CUDA(ncclkernels::launchCheck(dtype, b.ptr, a, l.checkDev + 2 * k, l.stream), "check kernel launch");
  }
  CB_CUDA(
      cudaMemcpyAsync(l.checkHost, l.checkDev, sizeof(unsigned long long) * 2 * nseg, cudaMemcpyDeviceToHost, l.stream),
      "cudaMemcpyAsync (check results)");
  CB_CUDA(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize (check)");
  int firstSeg = -1;
  uint64_t firstOffset = 0;
  for (int k = 0; k < nseg; ++k) {
    const uint64_t wrong = l.checkHost[2 * k], first = l.checkHost[2 * k + 1];
    if (wrong == 0) continue;
    out->wrong += wrong;
    if (firstSeg < 0 || first < firstOffset) {  // ties: the earliest segment (as hostCheck)
      firstSeg = k;
      firstOffset = first;
    }
  }
  if (firstSeg < 0) return Status::Ok();
  // Name the first wrong element: its bits from the device, its expected value regenerated here.
  const Segment& s = segs[firstSeg];
  const DeviceBuffer& b = s.buf == BufId::Send ? l.send : l.recv;
  uint64_t got = 0;
  CB_CUDA(cudaMemcpy(&got, static_cast<const char*>(b.ptr) + firstOffset * ts, ts, cudaMemcpyDeviceToHost),
          "cudaMemcpy (first wrong element)");
  const uint64_t pseed = pattern::mixSeed(seed, s.stream), index = s.indexBase + (firstOffset - s.offset);
  uint64_t want = 0;
  switch (s.kind) {
    case SegKind::ReduceInput:
      want = pattern::reduceInputBits(dtype, op, s.nranks > 0 ? s.nranks : groupSize_, pseed, index, s.rank);
      break;
    case SegKind::ReduceOutput:
      want = pattern::reduceOutputBits(dtype, op, s.nranks > 0 ? s.nranks : groupSize_, pseed, index);
      break;
    case SegKind::Copy:
      want = pattern::copyBits(dtype, pseed, index);
      break;
    default:
      break;
  }
  out->haveFirst = true;
  out->firstIndex = firstOffset;
  out->expected = formatElement(dtype, want);
  out->got = formatElement(dtype, got);
  return Status::Ok();
}

}  // namespace collbench
