// The Open MPI backend: the Backend interface (core/backend.h) on MPI collectives over host memory, with nccl-tests'
// semantics for all eleven collectives, and the MPI control plane the timed loop and the launcher use. One thread at a
// time (MPI_THREAD_SERIALIZED): ops on the executor, init/finalize/gathers on the JS thread; abort() excepted.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/mpi/mpi_types.h"
#include "core/host_backend.h"

namespace collbench {

class MpiBackend : public HostMemoryBackend {
 public:
  // MPI_Init_thread(MPI_THREAD_SERIALIZED) unless MPI is already initialized (why not MULTIPLE: see
  // mpi_backend.cc); needs at least MPI_THREAD_SERIALIZED because ops run on a worker thread. Sets
  // MPI_ERRORS_RETURN on MPI_COMM_WORLD and creates the datatype/op table.
  // initTimeoutSec > 0: MPI_Init_thread runs under alarm(2); if it has not returned by then (a rank of the job
  // missing, the launcher unreachable) the process prints one line and exits 4, as the -T watchdog does later.
  static Status create(std::unique_ptr<MpiBackend>* out, int initTimeoutSec = 0);
  ~MpiBackend() override;  // frees buffers and communicators; does NOT finalize MPI (call finalize())

  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  // Free everything MPI-owned and call MPI_Finalize (once; later calls return Ok).
  Status finalize() override;
  // MPI_Abort on MPI_COMM_WORLD: ends every rank of the job with `code`. Returns only on failure.
  Status abort(int code);
  bool finalized() const { return finalized_; }

  // MPI_Get_library_version, whole text (e.g. "Open MPI v4.1.4, package: Debian OpenMPI, ...").
  // Callable before init and after finalize.
  static std::string libraryVersion();
  // Short form: "Open MPI 4.1.4", "MPICH 4.0.2", else the first line up to its first comma.
  static std::string libraryVersionShort();
  static std::string shortenLibraryVersion(const std::string& full);  // pure, for tests

  int rank() const override { return rank_; }
  int nranks() const override { return size_; }
  int localRank() const { return localRank_; }  // rank among ranks sharing this node's memory
  int localSize() const { return localSize_; }
  int threadLevel() const { return threadLevel_; }  // provided MPI_THREAD_* level
  const std::string& processorName() const { return processorName_; }

  // True when this library's MPI_SUM saturates int8/uint8 instead of wrapping (Open MPI 4.1 op/avx,
  // open-mpi/ompi#8045), probed at create(). Worth a warning: int8/uint8 sum, avg and mulsum checks
  // then report wrong elements on long enough buffers (`--mca op ^avx` is the library-side fix).
  bool smallIntSumSaturates() const { return smallIntSumSaturates_; }
  // Opt in to collbench's own wrapping user op for int8/uint8 sums (NCCL semantics, but no longer
  // the library's op being measured); off by default.
  void setWrappingSmallIntSum(bool on) { useWrappingSmallIntSum(on); }
  bool wrappingSmallIntSum() const { return collbench::wrappingSmallIntSum(); }

  Status enqueue(const OpArgs& args) override;
  // One communicator per group, by MPI_Comm_split of the data communicator (every rank calls it once per group,
  // in order; a non-member passes MPI_UNDEFINED and gets MPI_COMM_NULL); ops on a group run on its communicator.
  Status createGroups(const std::vector<std::vector<int>>& groups) override;
  // The series' op resolved to its one MPI call (checked by the same code as enqueue(), every shift at
  // once); ops with work around the call (avg, mulsum, staging copies, hypercube) keep enqueue().
  Status prepareSeries(const OpSeries& series) override;
  bool runPrepared(uint64_t shiftBytes) override;
  Status waitAll() override { return Status::Ok(); }  // every MPI call here is blocking
  // Writes to the buffers: the root's copy for an out-of-place broadcast (bcastCopied_) is made again.
  Status allocate(uint64_t sendBytes, uint64_t recvBytes) override;
  Status zero(BufId which, uint64_t offsetBytes, uint64_t bytes) override;
  Status fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) override;
  Status barrier() override;
  Status allreduce(double* values, int n, Combine how) override;
  Status gather(const double* mine, int n, std::vector<double>* atRoot) override;
  Status gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) override;

 private:
  // A prepared op: the MPI call runPrepared() makes, with its arguments at shift 0 (MPI_IN_PLACE is
  // kept as a flag, never shifted). Generic: enqueue() on the shifted OpArgs.
  struct Planned {
    enum class Call : uint8_t {
      Generic,
      Allreduce,
      Allgather,
      ReduceScatterBlock,
      Bcast,
      BcastFromSend,
      Reduce,
      Alltoall,
      Alltoallv,
      Gather,
      Scatter,
      Sendrecv,
      SendrecvReplace,
    };
    Call call = Call::Generic;
    bool sendInPlace = false, recvInPlace = false;
    const char* send = nullptr;
    char* recv = nullptr;
    uint64_t count = 0, ts = 1;  // elements (split into <= INT_MAX pieces where the call allows), element size
    int root = 0, next = 0, prev = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    // The calls that are never split: enqueue() has checked that their count fits an int.
    int intCount() const { return static_cast<int>(count); }
    MPI_Op op = MPI_OP_NULL;
    MPI_Comm comm = MPI_COMM_NULL;  // the data communicator or the op's group's
  };
  // A createGroups() group as this rank sees it: its communicator (MPI_COMM_NULL: not a member), rank and size.
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = -1, size = 0;
  };

  MpiBackend() : HostMemoryBackend("MpiBackend") {}
  Status alive(const char* what) const;
  // While prepareSeries() runs an op through enqueue(), the collectives record their call in
  // *planning_ instead of making it (and make no data movement).
  Status plan(Planned::Call call, const void* send, void* recv, uint64_t count, MPI_Datatype type, MPI_Op op,
              int root = 0);
  // Returns the pointer MPI should reduce from for `op`: `input` itself, or for mulsum on odd ranks
  // `input` scaled by 2, in place when `scaleInPlace` (the region is overwritten by the result anyway)
  // or else into the scratch buffer.
  Status reduceInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace, const void** out);
  Status freeComms();
  Status freeGroups();
  // enqueue()'s body, on comm_, rank_ and size_ (the world's, or for a group's op the group's while it runs).
  Status enqueueOn(const OpArgs& a);

  // One per line of core/collectives.def (allReduce, allGather, ..., gatherColl, ..., hyperCube), called by enqueue().
#define CB_COLL(Enum, name, method, ...) Status method(const OpArgs& a);
#include "core/collectives.def"
#undef CB_COLL

  MPI_Comm comm_ = MPI_COMM_NULL;  // data: collectives only
  MPI_Comm ctrl_ = MPI_COMM_NULL;  // control plane: barrier, combines, gathers
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  std::vector<Group> groups_;  // createGroups()'
  int threadLevel_ = MPI_THREAD_SINGLE;
  std::string processorName_;
  bool finalized_ = false;
  bool smallIntSumSaturates_ = false;

  // send_, recv_ and scratch_ are HostMemoryBackend's. scratch_ (sized to the larger buffer once)
  // is the one case of a third buffer. mulsum: MPI cannot pre-multiply, so odd ranks scale their input
  // into it (out-of-place, and for a non-root reduce whose in-place input must stay unchanged).
  // In-place alltoallv with a send layout unlike the recv layout: the send region is staged here.
  std::vector<int> vCounts_[4];  // alltoallv: send counts, send displs, recv counts, recv displs

  Planned* planning_ = nullptr;          // non-null only inside prepareSeries()
  DType plannedDtype_ = DType::Float32;  // the series' datatype while planning_ is set
  Planned planned_;                      // the prepared series' call
  OpArgs plannedArgs_{};                 // its op at shift 0 (Generic)
  std::vector<int> plannedV_[4];         // Alltoallv: the counts of the prepared call
  // BcastFromSend: MPI_Bcast sends from the root's recv buffer, which it never changes, so the root copies its send
  // regions there once per series and after each write to the buffers (its first op: untimed), not once per op.
  bool bcastCopied_ = false;
  uint64_t bcastCopyBytes_ = 0;  // every region the series' shifts cover: maxShiftBytes + count·ts
};

}  // namespace collbench
