// The small interface every backend (mpi, gloo, nccl) implements for the shared timed loop
// (timed_loop.cc): allocate, enqueue one collective, wait, barrier, combine numbers across ranks,
// fill and check buffers. Host-memory backends inherit the CPU fill/check of data_check.h.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
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
  int local = 0;            // which of this process's ranks issues it (see localRanks())
  int group = -1;           // a createGroups() group (root, peers and the op's rank count are its own); -1: world
};

// The ops one timed loop issues, in order: op k is `args` (one entry per local rank, args[i].local == i)
// with send and recv moved by shift(k) = rotateBytes·(k mod slots) (nccl-tests' buffer rotation).
// `maxShiftBytes` is the largest shift the loop will use: rotateBytes·(min(slots, ops issued) − 1).
struct OpSeries {
  const OpArgs* args = nullptr;
  int nLocal = 1;
  uint64_t maxShiftBytes = 0;
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

  // Ends this backend's use of its library (MPI_Finalize, Gloo's final barrier, NCCL's communicator
  // destruction) and releases its buffers; a second call does nothing. Afterwards only the destructor
  // may be called, and it runs no library teardown that finalize() has done.
  virtual Status finalize() { return Status::Ok(); }

  // Buffers hold `bytes` each; previously allocated buffers are released first.
  virtual Status allocate(uint64_t sendBytes, uint64_t recvBytes) = 0;
  virtual void* buffer(BufId which) = 0;

  virtual Status enqueue(const OpArgs& args) = 0;

  // ---- Process groups smaller than the world (collbench replay), as torch's new_group builds them: every rank calls
  // createGroups() with the same list, in the same order; group k then holds the global ranks groups[k], in that
  // order (group rank i is groups[k][i]), and OpArgs::group = k runs an op on it, on its ranks only. Replaces the
  // groups of an earlier call (freed first); finalize() frees them. Default: no groups (an empty list only).
  virtual Status createGroups(const std::vector<std::vector<int>>& groups) {
    if (groups.empty()) return Status::Ok();
    return unsupported("a process group smaller than the world");
  }

  // ---- Prepared ops: the timed loop's per-op path. prepareSeries() checks every op of the series
  // (every shift up to maxShiftBytes) and resolves its library arguments once, before the clock starts;
  // runPrepared(shiftBytes) then issues the op at that shift (on every local rank) and does nothing
  // else: no argument checks, no Status built. It returns false on failure and leaves the error in
  // preparedStatus(). Valid until the next prepareSeries() or allocate(). Default: enqueueAll() on
  // shifted copies of the args (every check per op), which backends replace with a resolved call.
  virtual Status prepareSeries(const OpSeries& series) {
    if (series.args == nullptr || series.nLocal < 1)
      return Status::Error("core", "CORE_BAD_SPEC", "an op series needs at least one op", CB_SITE("prepareSeries"));
    seriesBase_.assign(series.args, series.args + series.nLocal);
    seriesShifted_ = seriesBase_;
    return Status::Ok();
  }
  virtual bool runPrepared(uint64_t shiftBytes) {
    for (size_t i = 0; i < seriesBase_.size(); ++i) {
      seriesShifted_[i].send = static_cast<const char*>(seriesBase_[i].send) + shiftBytes;
      seriesShifted_[i].recv = static_cast<char*>(seriesBase_[i].recv) + shiftBytes;
    }
    return preparedOk(enqueueAll(seriesShifted_.data(), static_cast<int>(seriesShifted_.size())));
  }
  const Status& preparedStatus() const { return preparedStatus_; }
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
  virtual Status check(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs, CheckOutcome* out) = 0;

  // ---- Several ranks in one process (NCCL -t/-g). Local rank i is global rank rank() + i and has
  // its own buffers; host-memory backends drive one rank and keep these defaults.
  virtual int localRanks() const { return 1; }
  virtual void* localBuffer(int local, BufId which) { return local == 0 ? buffer(which) : nullptr; }
  // One op on every local rank (args[i].local == i), e.g. inside one NCCL group.
  virtual Status enqueueAll(const OpArgs* args, int n) {
    for (int i = 0; i < n; ++i) CB_TRY(enqueue(args[i]));
    return Status::Ok();
  }
  virtual Status localZero(int local, BufId which, uint64_t offsetBytes, uint64_t bytes) {
    return local == 0 ? zero(which, offsetBytes, bytes) : noLocal(local);
  }
  virtual Status localFill(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) {
    return local == 0 ? fill(dtype, op, seed, segs) : noLocal(local);
  }
  virtual Status localCheck(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                            CheckOutcome* out) {
    return local == 0 ? check(dtype, op, seed, segs, out) : noLocal(local);
  }

  // ---- Per-iteration device timing (-I). A backend whose ops run asynchronously on devices records
  // marks (CUDA events on every local stream); elapsed() is read after completion and is the max
  // over local ranks. Default: none, and the timed loop uses the host clock.
  virtual bool deviceTimer() const { return false; }
  virtual Status timerMarks(int count) {
    (void)count;
    return Status::Ok();
  }  // prepare marks 0..count-1
  virtual Status timerMark(int k) {
    (void)k;
    return Status::Ok();
  }
  virtual Status timerElapsed(int from, int to, double* seconds) {
    (void)from;
    (void)to;
    *seconds = 0;
    return Status::Ok();
  }

  // ---- Device arrivals (core/device_arrivals.h): where each local stream was when it reached a timer mark, on the
  // device's clock. arrivalReference(local) records a reference on that rank's (idle) stream and waits for it,
  // replacing the previous one; markSinceReference(local, k) is the device time from it to mark k, read after
  // completion. delayStream(local, micros): a device-side busy wait on that stream (the COLLBENCH_TEST_GPU_DELAY test
  // hook). Default: none (arrivals are host clock readings).
  virtual bool deviceArrivals() const { return false; }
  virtual Status arrivalReference(int local) {
    (void)local;
    return unsupported("device arrivals");
  }
  virtual Status markSinceReference(int local, int k, double* seconds) {
    (void)local;
    (void)k;
    *seconds = 0;
    return unsupported("device arrivals");
  }
  virtual Status delayStream(int local, double micros) {
    (void)local;
    (void)micros;
    return unsupported("a device delay");
  }

  // ---- Graph capture and replay (-G): ops enqueued between captureBegin and captureEnd are recorded,
  // not run; graphLaunch replays them. Default: not supported (the timed loop refuses -G).
  virtual bool graphs() const { return false; }
  virtual Status captureBegin() { return unsupported("graph capture"); }
  virtual Status captureEnd() { return unsupported("graph capture"); }
  virtual Status graphLaunch(int times) {
    (void)times;
    return unsupported("graph launch");
  }

 protected:
  // runPrepared()'s failure path: keeps a failed Status for preparedStatus().
  bool preparedOk(Status s) {
    if (s.ok) return true;
    preparedStatus_ = std::move(s);
    return false;
  }
  bool preparedFail(Status s) {
    preparedStatus_ = std::move(s);
    return false;
  }
  Status noLocal(int local) const {
    return Status::Error("core", "CORE_BAD_SPEC", "local rank " + std::to_string(local) + " does not exist",
                         CB_SITE("Backend::local"));
  }
  Status unsupported(const char* what) const {
    return Status::Error("core", "CORE_UNSUPPORTED", std::string(what) + " is not supported by this backend",
                         CB_SITE("Backend"));
  }

 private:
  std::vector<OpArgs> seriesBase_, seriesShifted_;  // the default runPrepared()'s series
  Status preparedStatus_;
};

}  // namespace collbench
