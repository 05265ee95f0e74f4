// The small interface every backend (mpi, gloo, nccl) implements for the shared timed loop
// (timed_loop.cc): allocate, enqueue one collective, wait, barrier, combine numbers across ranks,
// fill and check buffers. Host-memory backends inherit the CPU fill/check of data_check.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec.h"
#include "status.h"

namespace collbench {

struct OpArgs {
  Coll coll;
  DType dtype;
  RedOp op;
  int root;
  const void* send;  // already offset for in-place layout, rotation and -u
  void* recv;
  uint64_t count;
  bool inPlace;
  const PeerCounts* peers;  // alltoallv only
};

struct CheckOutcome {
  uint64_t wrong = 0;
  bool haveFirst = false;
  uint64_t firstIndex = 0;
  std::string expected, got;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;

  // Buffers hold `bytes` each; previously allocated buffers are released first.
  virtual Status allocate(uint64_t sendBytes, uint64_t recvBytes) = 0;
  virtual void* buffer(BufId which) = 0;

  virtual Status enqueue(const OpArgs& args) = 0;
  virtual Status groupStart() { return Status::Ok(); }
  virtual Status groupEnd() { return Status::Ok(); }
  // Wait until every enqueued op has completed on this rank.
  virtual Status waitAll() = 0;
  virtual Status barrier() = 0;
  // Combine `n` doubles across all ranks in place (every rank receives the result).
  virtual Status allreduce(double* values, int n, Combine how) = 0;
  // Gather `n` doubles from every rank to rank 0, rank-major (others receive nothing).
  virtual Status gather(const double* mine, int n, std::vector<double>* atRoot) = 0;
  // Gather one string from every rank to rank 0.
  virtual Status gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) = 0;

  // Data: zero bytes, write pattern segments, compare with expected segments.
  virtual Status zero(BufId which, uint64_t offsetBytes, uint64_t bytes) = 0;
  virtual Status fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) = 0;
  virtual Status check(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                       CheckOutcome* out) = 0;
};

}  // namespace collbench
