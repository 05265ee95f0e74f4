// HostMemoryBackend (host_backend.h): host buffers and the bounds-checked data half of the Backend
// interface, shared by the MPI and Gloo backends.
#include "core/host_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/backend_errors.h"
#include "core/data_check.h"

namespace collbench {
namespace {
constexpr uint64_t kPage = 4096;
}  // namespace

// ---------------------------------------------------------------------------------------------
// Host buffers

void HostMemoryBackend::HostBuffer::release() {
  std::free(ptr);
  ptr = nullptr;
  bytes = 0;
}

bool HostMemoryBackend::HostBuffer::allocate(uint64_t n) {
  release();
  // Never a null pointer, even for 0 bytes: ops with count 0 still pass real addresses.
  const uint64_t size = std::max<uint64_t>(kPage, (n + kPage - 1) / kPage * kPage);
  if (size < n) return false;  // overflow
  void* p = nullptr;
  if (posix_memalign(&p, kPage, static_cast<size_t>(size)) != 0 || p == nullptr) return false;
  std::memset(p, 0, static_cast<size_t>(size));  // zero and fault every page in before timing
  ptr = p;
  bytes = n;
  return true;
}

bool HostMemoryBackend::HostBuffer::contains(const void* p, uint64_t n) const {
  if (ptr == nullptr) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr), a = reinterpret_cast<uintptr_t>(p);
  return a >= lo && a - lo <= bytes && n <= bytes - (a - lo);
}

// ---------------------------------------------------------------------------------------------
// Memory

void HostMemoryBackend::releaseBuffers() {
  send_.release();
  recv_.release();
  scratch_.release();
}

Status HostMemoryBackend::allocate(uint64_t sendBytes, uint64_t recvBytes) {
  releaseBuffers();
  if (!send_.allocate(sendBytes) || !recv_.allocate(recvBytes)) {
    send_.release();
    recv_.release();
    return Status::Error("core", "CORE_OUT_OF_MEMORY",
                         "cannot allocate " + std::to_string(sendBytes) + " + " + std::to_string(recvBytes) +
                             " bytes of page-aligned host memory",
                         CB_SITE("posix_memalign"));
  }
  return Status::Ok();
}

void* HostMemoryBackend::buffer(BufId which) {
  return which == BufId::Send ? send_.ptr : recv_.ptr;
}

uint64_t HostMemoryBackend::scratchReserve() const {
  return std::max(send_.bytes, recv_.bytes);
}

Status HostMemoryBackend::growScratch(uint64_t bytes) {
  const uint64_t want = std::max(bytes, scratchReserve());
  if (!scratch_.allocate(want))
    return Status::Error("core", "CORE_OUT_OF_MEMORY",
                         "cannot allocate a " + std::to_string(want) + "-byte scratch buffer",
                         CB_SITE("posix_memalign"));
  return Status::Ok();
}

Status HostMemoryBackend::region(const OpArgs& a, const void* p, uint64_t elems, const char* role) const {
  const uint64_t bytes = elems * dtypeSize(a.dtype);
  if (bytes == 0) return Status::Ok();
  const uint64_t span = bytes + regionShift_;
  if (span >= bytes && (send_.contains(p, span) || recv_.contains(p, span))) return Status::Ok();
  return badSpec(std::string(collName(a.coll)) + ": " + role + " region of " + std::to_string(bytes) + " bytes" +
                     (regionShift_ > 0 ? " rotated by up to " + std::to_string(regionShift_) + " bytes" : "") +
                     " lies outside the allocated buffers",
                 name_ + "::enqueue");
}

// ---------------------------------------------------------------------------------------------
// Data

Status HostMemoryBackend::zero(BufId which, uint64_t offsetBytes, uint64_t bytes) {
  const HostBuffer& b = which == BufId::Send ? send_ : recv_;
  if (offsetBytes > b.bytes || bytes > b.bytes - offsetBytes)
    return badSpec("zero of " + std::to_string(bytes) + " bytes at " + std::to_string(offsetBytes) + " overruns a " +
                       std::to_string(b.bytes) + "-byte buffer",
                   name_ + "::zero");
  if (bytes > 0) std::memset(static_cast<char*>(b.ptr) + offsetBytes, 0, bytes);
  return Status::Ok();
}

Status HostMemoryBackend::segmentsInBounds(DType dtype, const std::vector<Segment>& segs, const char* what) const {
  const uint64_t ts = dtypeSize(dtype);
  for (const Segment& s : segs) {
    const HostBuffer& b = s.buf == BufId::Send ? send_ : recv_;
    const uint64_t elems = b.bytes / ts;
    if (s.offset > elems || s.count > elems - s.offset)
      return badSpec(std::string(what) + " segment [" + std::to_string(s.offset) + ", +" + std::to_string(s.count) +
                         ") overruns the " + (s.buf == BufId::Send ? "send" : "recv") + " buffer of " +
                         std::to_string(elems) + " elements",
                     name_ + "::fill");
  }
  return Status::Ok();
}

Status HostMemoryBackend::fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) {
  CB_TRY(segmentsInBounds(dtype, segs, "fill"));
  return hostFill(send_.ptr, recv_.ptr, dtype, op, nranks(), seed, segs);
}

Status HostMemoryBackend::check(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                                CheckOutcome* out) {
  CB_TRY(segmentsInBounds(dtype, segs, "check"));
  return hostCheck(recv_.ptr, send_.ptr, dtype, op, nranks(), seed, segs, out);
}

}  // namespace collbench
