// HostMemoryBackend: what the CPU backends (MpiBackend, GlooBackend) share: page-aligned, zero-filled send/recv
// buffers and an on-demand scratch buffer, with bounds-checked allocate/buffer/zero/fill/check (data_check.h).
// Subclasses implement the collectives and the control plane of core/backend.h.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"

namespace collbench {

class HostMemoryBackend : public Backend {
 public:
  ~HostMemoryBackend() override = default;
  HostMemoryBackend(const HostMemoryBackend&) = delete;
  HostMemoryBackend& operator=(const HostMemoryBackend&) = delete;

  // Frees send, recv and scratch, then allocates send and recv (scratch comes on first use).
  Status allocate(uint64_t sendBytes, uint64_t recvBytes) override;
  void* buffer(BufId which) override;

  Status zero(BufId which, uint64_t offsetBytes, uint64_t bytes) override;
  Status fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) override;
  Status check(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs, CheckOutcome* out) override;

 protected:
  // Page-aligned, zero-filled (hence touched) host memory; never a null pointer once allocated.
  struct HostBuffer {
    void* ptr = nullptr;
    uint64_t bytes = 0;
    ~HostBuffer() { release(); }
    void release();
    bool allocate(uint64_t n);
    bool contains(const void* p, uint64_t n) const;
  };

  // `name` is the subclass as error sites name it: "MpiBackend", "GlooBackend".
  explicit HostMemoryBackend(std::string name) : name_(std::move(name)) {}

  void releaseBuffers();
  // Makes scratch_ at least `bytes` long; a new scratch buffer gets max(bytes, scratchReserve()). Inline: ops
  // in the timed loop call it on every op, and it almost always finds the buffer large enough.
  Status ensureScratch(uint64_t bytes) {
    if (scratch_.ptr != nullptr && scratch_.bytes >= bytes) return Status::Ok();
    return growScratch(bytes);
  }
  // How much scratch to reserve at once so the timed loop never reallocates: by default the larger
  // of send and recv.
  virtual uint64_t scratchReserve() const;
  Status growScratch(uint64_t bytes);
  // CORE_BAD_SPEC unless [p, p + elems·size) lies inside send_ or recv_ (empty regions pass).
  // While a series is being prepared, the region is [p, p + regionShift_ + elems·size): every shift
  // of a rotated op at once (regions are contiguous and move with the shift, so both ends inside one
  // buffer means every shifted region is).
  Status region(const OpArgs& a, const void* p, uint64_t elems, const char* role) const;
  uint64_t regionShift_ = 0;

  HostBuffer send_, recv_;
  // The third buffer (mulsum's scaled input, staging copies): see each subclass for its uses.
  // Allocated on first use, freed with the other buffers.
  HostBuffer scratch_;

 private:
  Status segmentsInBounds(DType dtype, const std::vector<Segment>& segs, const char* what) const;

  std::string name_;
};

}  // namespace collbench
