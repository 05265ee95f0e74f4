// MpiBackend: nccl-tests' eleven collectives mapped onto blocking MPI calls over host buffers
// (docs/nccl-tests-contract.md, "Formulas", in-place layouts included), avg and mulsum emulated around MPI_SUM, and the
// MPI control plane. Every MPI return code goes through CB_MPI (mpi_types.h) into a Status.
#include "backends/mpi/mpi_backend.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/mpi/mpi_types.h"
#include "core/backend_errors.h"
#include "core/op_checks.h"
#include "core/pattern.h"

namespace collbench {
namespace {

constexpr int kTag = 0x4342;  // "CB": point-to-point traffic of sendrecv and hypercube

// MPI counts and displacements are int (Open MPI 4.1 has no MPI_*_c big-count calls). The element-wise
// collectives (all_reduce, broadcast, reduce, sendrecv) split a larger count into pieces (forPieces below);
// the others refuse it here (and bench/backends/mpi.ts refuses it before the run, exit 2).
Status toInt(uint64_t v, const char* what, Coll c, int* out) {
  if (v > static_cast<uint64_t>(INT_MAX))
    return Status::Error("core", "CORE_COUNT_TOO_LARGE",
                         std::string(collName(c)) + ": " + what + " " + std::to_string(v) +
                             " exceeds INT_MAX, the largest count an MPI call takes",
                         CB_SITE("MpiBackend::enqueue"));
  *out = static_cast<int>(v);
  return Status::Ok();
}

// The largest piece of a split op: INT_MAX rounded down to 4096 elements, so every piece but the last starts
// page- and cache-line-aligned like the whole buffer.
constexpr uint64_t kMaxPiece = static_cast<uint64_t>(INT_MAX) & ~uint64_t{4095};

// Runs call(byteOffset, n) once with the whole count when it fits an int (the usual case: one MPI call, as
// before), else over ceil(count / kMaxPiece) nearly equal pieces of at most kMaxPiece elements, in order,
// stopping at the first error. Why pieces and not one call on a contiguous derived datatype: the reductions
// use user-defined MPI_Ops (half, bfloat16, f8, the saturating small-int sum fix) that dispatch on the
// predefined datatype they are given, MPI's predefined ops are defined on predefined datatypes only, and a
// count that is not a multiple of the block would need a second call anyway. Element-wise collectives are
// exactly the same operation when split, so the result and its check are unchanged; the timed op is then
// several library calls, one after the other.
template <class Call>
int forPieces(uint64_t count, uint64_t ts, Call&& call) {
  if (count <= static_cast<uint64_t>(INT_MAX)) return call(uint64_t{0}, static_cast<int>(count));
  const uint64_t pieces = (count + kMaxPiece - 1) / kMaxPiece;
  const uint64_t per = ((count + pieces - 1) / pieces + 4095) & ~uint64_t{4095};  // <= kMaxPiece
  for (uint64_t off = 0; off < count; off += per) {
    const int rc = call(off * ts, static_cast<int>(std::min(per, count - off)));
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// A buffer argument `bytes` further on; MPI_IN_PLACE stays MPI_IN_PLACE.
const void* piece(const void* p, uint64_t bytes) {
  return p == MPI_IN_PLACE ? p : static_cast<const char*>(p) + bytes;
}
void* piece(void* p, uint64_t bytes) { return p == MPI_IN_PLACE ? p : static_cast<char*>(p) + bytes; }

#define CB_MPI_AT(rc_expr, name)                                                      \
  do {                                                                                \
    const int cb_mpi_rc_ = (rc_expr);                                                 \
    if (cb_mpi_rc_ != MPI_SUCCESS) return ::collbench::mpiErrorStatus(cb_mpi_rc_, CB_SITE(name)); \
  } while (0)

char* bytesAt(void* p, uint64_t elems, uint64_t ts) { return static_cast<char*>(p) + elems * ts; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Life cycle

namespace {

// The MPI_Init watchdog, over all of MpiBackend::create (MPI_Init_thread and the collective set-up after it:
// MPI_Comm_dup, MPI_Comm_split_type, which wait for every rank). The JS thread is blocked there, so no JS timer can fire: alarm(2)
// raises SIGALRM in this process instead, and the handler (async-signal-safe: write and _exit only) prints the
// line prepared before arming and exits 4 (EXIT.TIMEOUT). mpirun then ends the job's other processes.
char gInitTimeoutLine[256];
size_t gInitTimeoutLen = 0;

extern "C" void onInitTimeout(int) {
  ssize_t ignored = write(2, gInitTimeoutLine, gInitTimeoutLen);
  (void)ignored;
  _exit(4);
}

// Arms the watchdog for `seconds` (0: none); the destructor disarms it and restores the previous handler.
class InitWatchdog {
 public:
  explicit InitWatchdog(int seconds) : armed_(seconds > 0) {
    if (!armed_) return;
    char host[64] = {0};
    if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
    const int n = std::snprintf(gInitTimeoutLine, sizeof gInitTimeoutLine,
                                "%s: Test timeout (%ds) in MPI_Init or the communicator set-up after it: the job's other processes or its launcher did "
                                "not answer (-T sets the limit, -T 0 disables it)\n", host, seconds);
    gInitTimeoutLen = n < 0 ? 0 : std::min(static_cast<size_t>(n), sizeof gInitTimeoutLine - 1);
    struct sigaction sa {};
    sa.sa_handler = onInitTimeout;
    sigemptyset(&sa.sa_mask);
    armed_ = sigaction(SIGALRM, &sa, &previous_) == 0;
    if (armed_) alarm(static_cast<unsigned>(seconds));
  }
  ~InitWatchdog() {
    if (!armed_) return;
    alarm(0);
    sigaction(SIGALRM, &previous_, nullptr);
  }
  InitWatchdog(const InitWatchdog&) = delete;
  InitWatchdog& operator=(const InitWatchdog&) = delete;

 private:
  bool armed_;
  struct sigaction previous_ {};
};

}  // namespace

Status MpiBackend::create(std::unique_ptr<MpiBackend>* out, int initTimeoutSec) {
  if (out == nullptr) return badSpec("MpiBackend::create needs an output pointer", "MpiBackend::create");
  int initialized = 0, finalized = 0;
  CB_MPI(MPI_Initialized(&initialized));
  CB_MPI(MPI_Finalized(&finalized));
  if (finalized)
    return Status::Error("mpi", "MPI_ALREADY_FINALIZED",
                         "MPI was finalized in this process and cannot be initialized again",
                         CB_SITE("MpiBackend::create"));
  std::unique_ptr<MpiBackend> b(new MpiBackend());
  int provided = MPI_THREAD_SINGLE;
  const InitWatchdog watchdog(initTimeoutSec);  // until create returns
  if (!initialized) {
    // MPI_THREAD_SERIALIZED, the lowest level this design needs: MPI is called from the JS thread (init,
    // synchronous combines, finalize) and from one executor thread (addon/executor.h: the mpi module's for
    // warmup/runHalf and the asynchronous waits, or the nccl module's when it borrows MPI as its control
    // plane; a run uses one module's), never concurrently: the synchronous calls are refused while the
    // executor has work, and finalize waits for it (the executor's mutex orders the threads: happens-before).
    // Not FUNNELED (the executor is not the main thread); not MULTIPLE, which this design does not need.
    // Measured on Open MPI 4.1.4 (docs/performance.md): SERIALIZED and MULTIPLE cost the same, because
    // Open MPI turns its internal locking on for every level above SINGLE (about 0.1 us per small op at 2
    // ranks, which a plain C loop at the same level pays too); only SINGLE avoids it, and two threads
    // calling MPI may not claim SINGLE.
    // The one concurrent call is abort() (MPI_Abort, the -T watchdog on the JS thread while the executor
    // may be stuck in a collective on a frozen peer). The standard does not allow it at SERIALIZED; Open
    // MPI 4.1's MPI_Abort (ompi_mpi_abort) touches no communication state: it reads the communicator's
    // group and asks the runtime (PMIx, on its own progress thread) to kill the job, then exits; no lock
    // is held by the worker at this level. MPICH's MPI_Abort likewise goes through PMI. Kept, as the only
    // way to end every rank of a hung job (test/cli/behaviour.test.ts, -T with a SIGSTOPped rank).
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      // MPI is not initialised: MPI_Error_class/string may not be called (Open MPI aborts the process).
      const char* name = mpiErrorClassName(rc);
      return Status::Error("mpi", name ? name : "MPI_ERR_CLASS_" + std::to_string(rc),
                           "MPI_Init_thread failed (error code " + std::to_string(rc) + ")", CB_SITE("MPI_Init_thread"));
    }
  } else {
    CB_MPI(MPI_Query_thread(&provided));
  }
  b->threadLevel_ = provided;
  // Before any check that can fail, so failures below come back as codes, not aborts.
  CB_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_SERIALIZED)
    return Status::Error("mpi", "MPI_THREAD_LEVEL",
                         std::string("MPI provides ") + threadLevelName(provided) +
                             "; collbench needs MPI_THREAD_SERIALIZED or higher because "
                             "collectives run on a worker thread",
                         CB_SITE("MPI_Init_thread"));
  CB_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &b->rank_));
  CB_MPI(MPI_Comm_size(MPI_COMM_WORLD, &b->size_));
  // Private communicators: our traffic never matches anyone else's, and control-plane calls
  // (barrier, combines) never interleave with data collectives on one communicator.
  CB_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b->comm_));
  CB_MPI(MPI_Comm_set_errhandler(b->comm_, MPI_ERRORS_RETURN));
  CB_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b->ctrl_));
  CB_MPI(MPI_Comm_set_errhandler(b->ctrl_, MPI_ERRORS_RETURN));

  MPI_Comm local = MPI_COMM_NULL;
  CB_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, b->rank_, MPI_INFO_NULL, &local));
  const int rcRank = MPI_Comm_rank(local, &b->localRank_);
  const int rcSize = rcRank == MPI_SUCCESS ? MPI_Comm_size(local, &b->localSize_) : rcRank;
  CB_MPI(MPI_Comm_free(&local));
  CB_MPI(rcSize);

  char name[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int len = 0;
  CB_MPI(MPI_Get_processor_name(name, &len));
  b->processorName_.assign(name, static_cast<size_t>(std::max(len, 0)));

  CB_TRY(initMpiTypes());
  CB_TRY(probeSmallIntSumSaturates(&b->smallIntSumSaturates_));
  *out = std::move(b);
  return Status::Ok();
}

Status MpiBackend::freeComms() {
  Status first = Status::Ok();
  for (MPI_Comm* c : {&comm_, &ctrl_}) {
    if (*c == MPI_COMM_NULL) continue;
    const int rc = MPI_Comm_free(c);
    if (rc != MPI_SUCCESS && first.ok) first = mpiErrorStatus(rc, CB_SITE("MPI_Comm_free"));
    *c = MPI_COMM_NULL;
  }
  return first;
}

MpiBackend::~MpiBackend() {
  releaseBuffers();
  int initialized = 0, finalized = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) (void)freeComms();
}

Status MpiBackend::finalize() {
  if (finalized_) return Status::Ok();
  releaseBuffers();
  int initialized = 0, finalized = 0;
  CB_MPI(MPI_Initialized(&initialized));
  CB_MPI(MPI_Finalized(&finalized));
  finalized_ = true;  // even on error below: nothing here is safe to retry
  if (!initialized || finalized) return Status::Ok();
  Status s = freeComms();
  const Status t = freeMpiTypes();
  if (s.ok) s = t;
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS && s.ok) s = mpiErrorStatus(rc, CB_SITE("MPI_Finalize"));
  return s;
}

Status MpiBackend::abort(int code) {
  CB_TRY(alive("abort"));
  CB_MPI(MPI_Abort(MPI_COMM_WORLD, code));
  return Status::Ok();
}

Status MpiBackend::alive(const char* what) const {
  if (finalized_)
    return Status::Error("mpi", "MPI_ALREADY_FINALIZED",
                         std::string("MpiBackend::") + what + " called after finalize()",
                         CB_SITE(std::string("MpiBackend::") + what));
  return Status::Ok();
}

std::string MpiBackend::libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS || len <= 0) return "";
  std::string s(text, static_cast<size_t>(len));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string MpiBackend::libraryVersionShort() { return shortenLibraryVersion(libraryVersion()); }

std::string MpiBackend::shortenLibraryVersion(const std::string& full) {
  const std::string line = full.substr(0, full.find('\n'));
  // Open MPI: "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, ..."
  const std::string ompi = "Open MPI v";
  if (line.compare(0, ompi.size(), ompi) == 0) {
    const size_t end = line.find_first_of(", ", ompi.size());
    return "Open MPI " + line.substr(ompi.size(), end - ompi.size());
  }
  // MPICH: "MPICH Version:\t4.0.2\nMPICH Release date: ..."
  const std::string mpich = "MPICH Version:";
  if (line.compare(0, mpich.size(), mpich) == 0) {
    const size_t start = line.find_first_not_of(" \t", mpich.size());
    if (start != std::string::npos) {
      const size_t end = line.find_first_of(" \t", start);
      return "MPICH " + line.substr(start, end - start);
    }
  }
  return line.substr(0, line.find(','));
}

// ---------------------------------------------------------------------------------------------
// Memory

Status MpiBackend::reduceInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace,
                               const void** out) {
  *out = input;
  if (a.op != RedOp::MulSum) return Status::Ok();
  const int scalar = pattern::mulSumScalar(rank_);  // 1 on even ranks, 2 on odd
  if (scalar == 1) return Status::Ok();  // x·1 = x exactly, for every dtype
  if (scaleInPlace) {
    scaleElements(a.dtype, input, const_cast<void*>(input), elems, scalar);
    return Status::Ok();
  }
  CB_TRY(ensureScratch(elems * dtypeSize(a.dtype)));
  scaleElements(a.dtype, input, scratch_.ptr, elems, scalar);
  *out = scratch_.ptr;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Collectives

Status MpiBackend::enqueue(const OpArgs& a) {
  CB_TRY(alive("enqueue"));
  CB_TRY(checkOpArgs(a, size_, "MpiBackend::enqueue"));
  switch (a.coll) {  // one member function per line of core/collectives.def
#define CB_COLL(Enum, name, method, ...) \
  case Coll::Enum: return method(a);
#include "core/collectives.def"
#undef CB_COLL
  }
  return badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), "MpiBackend::enqueue");
}

// ---------------------------------------------------------------------------------------------
// Prepared ops (the timed loop)

Status MpiBackend::plan(Planned::Call call, const void* send, void* recv, uint64_t count, MPI_Datatype type, MPI_Op op,
                        int root) {
  Planned& p = *planning_;
  p.call = call;
  p.sendInPlace = send == MPI_IN_PLACE;
  p.recvInPlace = recv == MPI_IN_PLACE;
  p.send = p.sendInPlace ? nullptr : static_cast<const char*>(send);
  p.recv = p.recvInPlace ? nullptr : static_cast<char*>(recv);
  p.count = count;
  p.ts = dtypeSize(plannedDtype_);
  p.type = type;
  p.op = op;
  p.root = root;
  return Status::Ok();
}

Status MpiBackend::prepareSeries(const OpSeries& series) {
  if (series.args == nullptr || series.nLocal != 1)
    return badSpec("MpiBackend drives one rank per process: a series needs exactly one op", "MpiBackend::prepareSeries");
  // enqueue()'s own checks, with every region widened by the largest shift; no MPI call, no data moved.
  Planned p;
  planning_ = &p;
  plannedDtype_ = series.args[0].dtype;
  regionShift_ = series.maxShiftBytes;
  const Status s = enqueue(series.args[0]);
  planning_ = nullptr;
  regionShift_ = 0;
  planned_ = Planned{};  // Generic until this series is known to be valid
  CB_TRY(s);
  plannedArgs_ = series.args[0];
  planned_ = p;
  bcastCopied_ = false;
  bcastCopyBytes_ = p.call == Planned::Call::BcastFromSend ? series.maxShiftBytes + p.count * p.ts : 0;
  return Status::Ok();
}

Status MpiBackend::allocate(uint64_t sendBytes, uint64_t recvBytes) {
  bcastCopied_ = false;
  return HostMemoryBackend::allocate(sendBytes, recvBytes);
}

Status MpiBackend::zero(BufId which, uint64_t offsetBytes, uint64_t bytes) {
  bcastCopied_ = false;
  return HostMemoryBackend::zero(which, offsetBytes, bytes);
}

Status MpiBackend::fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) {
  bcastCopied_ = false;
  return HostMemoryBackend::fill(dtype, op, seed, segs);
}

bool MpiBackend::runPrepared(uint64_t shiftBytes) {
  const Planned& p = planned_;
  const void* send = p.sendInPlace ? MPI_IN_PLACE : p.send + shiftBytes;
  void* recv = p.recvInPlace ? MPI_IN_PLACE : p.recv + shiftBytes;
  int rc = MPI_SUCCESS;
  const char* what = "";
  switch (p.call) {
    case Planned::Call::Generic: {
      OpArgs a = plannedArgs_;
      a.send = static_cast<const char*>(a.send) + shiftBytes;
      a.recv = static_cast<char*>(a.recv) + shiftBytes;
      return preparedOk(enqueue(a));
    }
    case Planned::Call::Allreduce:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Allreduce(piece(send, o), piece(recv, o), n, p.type, p.op, comm_);
      });
      what = "MPI_Allreduce";
      break;
    case Planned::Call::Allgather:
      rc = MPI_Allgather(send, p.intCount(), p.type, recv, p.intCount(), p.type, comm_);
      what = "MPI_Allgather";
      break;
    case Planned::Call::ReduceScatterBlock:
      rc = MPI_Reduce_scatter_block(send, recv, p.intCount(), p.type, p.op, comm_);
      what = "MPI_Reduce_scatter_block";
      break;
    case Planned::Call::BcastFromSend:
      if (!bcastCopied_) {  // the series' first op (untimed): every shift's region at once
        std::memmove(p.recv, p.send, bcastCopyBytes_);
        bcastCopied_ = true;
      }
      [[fallthrough]];
    case Planned::Call::Bcast:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) { return MPI_Bcast(piece(recv, o), n, p.type, p.root, comm_); });
      what = "MPI_Bcast";
      break;
    case Planned::Call::Reduce:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Reduce(piece(send, o), piece(recv, o), n, p.type, p.op, p.root, comm_);
      });
      what = "MPI_Reduce";
      break;
    case Planned::Call::Alltoall:
      rc = MPI_Alltoall(send, p.intCount(), p.type, recv, p.intCount(), p.type, comm_);
      what = "MPI_Alltoall";
      break;
    case Planned::Call::Alltoallv:
      rc = MPI_Alltoallv(send, plannedV_[0].data(), plannedV_[1].data(), p.type, recv, plannedV_[2].data(),
                         plannedV_[3].data(), p.type, comm_);
      what = "MPI_Alltoallv";
      break;
    case Planned::Call::Gather:
      rc = MPI_Gather(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.root, comm_);
      what = "MPI_Gather";
      break;
    case Planned::Call::Scatter:
      rc = MPI_Scatter(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.root, comm_);
      what = "MPI_Scatter";
      break;
    case Planned::Call::Sendrecv:
      // Pieces in order: MPI's non-overtaking rule matches each piece with the peer's piece of the same rank.
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Sendrecv(piece(send, o), n, p.type, p.next, kTag, piece(recv, o), n, p.type, p.prev, kTag, comm_,
                            MPI_STATUS_IGNORE);
      });
      what = "MPI_Sendrecv";
      break;
    case Planned::Call::SendrecvReplace:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Sendrecv_replace(piece(recv, o), n, p.type, p.next, kTag, p.prev, kTag, comm_, MPI_STATUS_IGNORE);
      });
      what = "MPI_Sendrecv_replace";
      break;
  }
  if (rc == MPI_SUCCESS) return true;
  return preparedFail(mpiErrorStatus(rc, CB_SITE(what)));
}

Status MpiBackend::allReduce(const OpArgs& a) {
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Allreduce"));
  if (planning_) {
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg) return Status::Ok();  // Generic
    return plan(Planned::Call::Allreduce, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, a.count, mpiDatatype(a.dtype),
                mpiReduceOp(a.dtype, a.op));
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, a.inPlace, &src));
  const void* from = a.inPlace ? MPI_IN_PLACE : src;
  CB_MPI_AT(forPieces(a.count, dtypeSize(a.dtype), [&](uint64_t o, int n) {
              return MPI_Allreduce(piece(from, o), piece(a.recv, o), n, mpiDatatype(a.dtype),
                                   mpiReduceOp(a.dtype, a.op), comm_);
            }), "MPI_Allreduce");
  if (a.op == RedOp::Avg) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::allGather(const OpArgs& a) {
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count * size_, "recv"));
  // In place, this rank's chunk already sits at recv + rank·count (nccl-tests' layout).
  CB_TRY(checkInPlace(a, rank_, "MPI_Allgather"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  if (planning_) return plan(Planned::Call::Allgather, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL);
  CB_MPI(MPI_Allgather(a.inPlace ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_));
  return Status::Ok();
}

Status MpiBackend::reduceScatter(const OpArgs& a) {
  const uint64_t ts = dtypeSize(a.dtype), total = a.count * size_;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, total, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  const MPI_Op op = mpiReduceOp(a.dtype, a.op);
  CB_TRY(checkInPlace(a, rank_, "MPI_Reduce_scatter_block"));
  if (planning_) {
    // Generic: avg, mulsum, and in place on ranks > 0 (the result moves to the slice afterwards).
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg || (a.inPlace && a.recv != a.send)) return Status::Ok();
    return plan(Planned::Call::ReduceScatterBlock, a.inPlace ? MPI_IN_PLACE : a.send,
                a.inPlace ? const_cast<void*>(a.send) : a.recv, n, t, op);
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, total, a.inPlace, &src));
  if (a.inPlace) {
    // nccl-tests' in-place layout: send = the full recv buffer, recv = its slice at rank·count.
    // MPI_IN_PLACE leaves the result at the start of the full buffer, so move it to the slice.
    void* full = const_cast<void*>(a.send);
    CB_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, full, n, t, op, comm_));
    if (a.recv != full) std::memmove(a.recv, full, a.count * ts);
  } else {
    CB_MPI(MPI_Reduce_scatter_block(src, a.recv, n, t, op, comm_));
  }
  if (a.op == RedOp::Avg) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::broadcast(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  if (isRoot) CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Bcast"));
  if (planning_) {
    // The root's send bytes go to its recv buffer first (BcastFromSend: once for the series, runPrepared()).
    return plan(isRoot && a.send != a.recv ? Planned::Call::BcastFromSend : Planned::Call::Bcast, a.send, a.recv,
                a.count, mpiDatatype(a.dtype), MPI_OP_NULL, a.root);
  }
  // ncclBroadcast sends from the root's send buffer; MPI_Bcast works in one buffer.
  if (isRoot && a.send != a.recv) std::memmove(a.recv, a.send, a.count * dtypeSize(a.dtype));
  CB_MPI_AT(forPieces(a.count, dtypeSize(a.dtype), [&](uint64_t o, int n) {
              return MPI_Bcast(piece(a.recv, o), n, mpiDatatype(a.dtype), a.root, comm_);
            }), "MPI_Bcast");
  return Status::Ok();
}

Status MpiBackend::reduce(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Reduce"));
  // Only the root's in-place input is overwritten by the result; a non-root's must stay unchanged
  // (nccl-tests checks it), so its mulsum input is scaled into the scratch buffer.
  const bool rootInPlace = a.inPlace && isRoot;
  if (planning_) {
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg) return Status::Ok();  // Generic
    return plan(Planned::Call::Reduce, rootInPlace ? MPI_IN_PLACE : a.send, a.recv, a.count, mpiDatatype(a.dtype),
                mpiReduceOp(a.dtype, a.op), a.root);
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, rootInPlace, &src));
  const void* from = rootInPlace ? MPI_IN_PLACE : src;
  CB_MPI_AT(forPieces(a.count, dtypeSize(a.dtype), [&](uint64_t o, int n) {
              return MPI_Reduce(piece(from, o), piece(a.recv, o), n, mpiDatatype(a.dtype), mpiReduceOp(a.dtype, a.op),
                                a.root, comm_);
            }), "MPI_Reduce");
  if (a.op == RedOp::Avg && isRoot) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::allToAll(const OpArgs& a) {
  const uint64_t total = a.count * size_;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, total, "send"));
  CB_TRY(region(a, a.recv, total, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Alltoall"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  if (planning_) return plan(Planned::Call::Alltoall, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL);
  CB_MPI(MPI_Alltoall(a.inPlace ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_));
  return Status::Ok();
}

Status MpiBackend::allToAllV(const OpArgs& a) {
  const PeerCounts* p = a.peers;
  const size_t np = static_cast<size_t>(size_);
  if (p == nullptr || p->sendCounts.size() != np || p->sendDispls.size() != np ||
      p->recvCounts.size() != np || p->recvDispls.size() != np)
    return badSpec("alltoallv needs " + std::to_string(size_) +
                       " send/recv counts and displacements",
                   "MPI_Alltoallv");
  const std::vector<uint64_t>* src[4] = {&p->sendCounts, &p->sendDispls, &p->recvCounts, &p->recvDispls};
  static const char* const kWhat[4] = {"send count", "send displacement", "recv count",
                                       "recv displacement"};
  for (int k = 0; k < 4; ++k) {
    vCounts_[k].resize(np);
    for (size_t i = 0; i < np; ++i) CB_TRY(toInt((*src[k])[i], kWhat[k], a.coll, &vCounts_[k][i]));
  }
  uint64_t sendEnd = 0, recvEnd = 0;  // int-sized terms: no overflow in uint64
  for (size_t i = 0; i < np; ++i) {
    sendEnd = std::max(sendEnd, p->sendDispls[i] + p->sendCounts[i]);
    recvEnd = std::max(recvEnd, p->recvDispls[i] + p->recvCounts[i]);
  }
  CB_TRY(region(a, a.send, sendEnd, "send"));
  CB_TRY(region(a, a.recv, recvEnd, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Alltoallv"));
  const void* sendArg = a.send;
  if (planning_) {
    const bool sameLayout = vCounts_[0] == vCounts_[2] && vCounts_[1] == vCounts_[3];
    if (a.inPlace && !sameLayout) return Status::Ok();  // Generic: the send region is staged per op
    for (int k = 0; k < 4; ++k) plannedV_[k] = vCounts_[k];
    return plan(Planned::Call::Alltoallv, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, 0, mpiDatatype(a.dtype),
                MPI_OP_NULL);
  }
  if (a.inPlace) {
    // MPI_IN_PLACE alltoallv sends by the *recv* counts and displacements. That equals the requested
    // exchange only where this rank's send layout is its recv layout (a per-rank condition, so peers
    // never disagree); otherwise sizes mismatch (MPI_ERR_TRUNCATE; Open MPI 4.1 also corrupts its
    // heap). nccl-tests' generated matrix is asymmetric, so stage the send region in the scratch
    // buffer instead: a copy inside the timed op, but the exchange nccl-tests performs.
    if (vCounts_[0] == vCounts_[2] && vCounts_[1] == vCounts_[3]) {
      sendArg = MPI_IN_PLACE;
    } else {
      const uint64_t bytes = sendEnd * dtypeSize(a.dtype);
      CB_TRY(ensureScratch(bytes));
      if (bytes > 0) std::memcpy(scratch_.ptr, a.send, bytes);
      sendArg = scratch_.ptr;
    }
  }
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // Displacements are in elements: MPI counts them in extents of the datatype.
  CB_MPI(MPI_Alltoallv(sendArg, vCounts_[0].data(), vCounts_[1].data(), t, a.recv, vCounts_[2].data(),
                       vCounts_[3].data(), t, comm_));
  return Status::Ok();
}

Status MpiBackend::gatherColl(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count * size_, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Gather"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // In place, the root's own chunk already sits at recv + root·count.
  if (planning_)
    return plan(Planned::Call::Gather, a.inPlace && isRoot ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL, a.root);
  CB_MPI(MPI_Gather(a.inPlace && isRoot ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, a.root, comm_));
  return Status::Ok();
}

Status MpiBackend::scatter(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  if (isRoot) CB_TRY(region(a, a.send, a.count * size_, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Scatter"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // In place, the root's chunk is already at send + root·count = recv: MPI_IN_PLACE keeps it there.
  if (planning_)
    return plan(Planned::Call::Scatter, a.send, a.inPlace && isRoot ? MPI_IN_PLACE : a.recv, n, t, MPI_OP_NULL, a.root);
  CB_MPI(MPI_Scatter(a.send, n, t, a.inPlace && isRoot ? MPI_IN_PLACE : a.recv, n, t, a.root, comm_));
  return Status::Ok();
}

Status MpiBackend::sendRecv(const OpArgs& a) {
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
  const MPI_Datatype t = mpiDatatype(a.dtype);
  CB_TRY(checkInPlace(a, rank_, "MPI_Sendrecv_replace"));
  if (planning_) {
    CB_TRY(plan(a.inPlace ? Planned::Call::SendrecvReplace : Planned::Call::Sendrecv, a.send, a.recv, a.count, t,
                MPI_OP_NULL));
    planning_->next = next;
    planning_->prev = prev;
    return Status::Ok();
  }
  const uint64_t ts = dtypeSize(a.dtype);
  if (a.inPlace) {
    CB_MPI_AT(forPieces(a.count, ts, [&](uint64_t o, int n) {
                return MPI_Sendrecv_replace(piece(a.recv, o), n, t, next, kTag, prev, kTag, comm_, MPI_STATUS_IGNORE);
              }), "MPI_Sendrecv_replace");
  } else {
    CB_MPI_AT(forPieces(a.count, ts, [&](uint64_t o, int n) {
                return MPI_Sendrecv(piece(a.send, o), n, t, next, kTag, piece(a.recv, o), n, t, prev, kTag, comm_,
                                    MPI_STATUS_IGNORE);
              }), "MPI_Sendrecv");
  }
  return Status::Ok();
}

Status MpiBackend::hyperCube(const OpArgs& a) {
  if ((size_ & (size_ - 1)) != 0)
    return badSpec("hypercube needs a power-of-two rank count, not " + std::to_string(size_),
                   "MpiBackend::hyperCube");
  const uint64_t ts = dtypeSize(a.dtype), b = a.count;
  int unused = 0;
  CB_TRY(toInt(b * std::max(1, size_ / 2), "largest exchange (count*nranks/2)", a.coll, &unused));
  CB_TRY(region(a, a.send, b, "send"));
  CB_TRY(region(a, a.recv, b * size_, "recv"));
  char* recv = static_cast<char*>(a.recv);
  char* mine = bytesAt(recv, b * rank_, ts);
  CB_TRY(checkInPlace(a, rank_, "MpiBackend::hyperCube"));
  if (planning_) return Status::Ok();  // Generic: log2(nranks) rounds
  if (!a.inPlace) std::memmove(mine, a.send, b * ts);
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // nccl-tests' hypercube: after round `mask`, each rank holds the `2·mask` chunks of its subcube.
  for (int mask = 1; mask < size_; mask <<= 1) {
    const int peer = rank_ ^ mask;
    const uint64_t sendChunk = static_cast<uint64_t>(rank_ & ~(mask - 1));
    const uint64_t recvChunk = static_cast<uint64_t>(peer & ~(mask - 1));
    const int n = static_cast<int>(b * mask);
    CB_MPI(MPI_Sendrecv(bytesAt(recv, sendChunk * b, ts), n, t, peer, kTag, bytesAt(recv, recvChunk * b, ts), n,
                        t, peer, kTag, comm_, MPI_STATUS_IGNORE));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Control plane

Status MpiBackend::barrier() {
  CB_TRY(alive("barrier"));
  CB_MPI(MPI_Barrier(ctrl_));
  return Status::Ok();
}

Status MpiBackend::allreduce(double* values, int n, Combine how) {
  CB_TRY(alive("allreduce"));
  if (n <= 0) return Status::Ok();
  if (values == nullptr) return badSpec("allreduce of a null array", "MpiBackend::allreduce");
  switch (how) {
    case Combine::Rank0:
      CB_MPI(MPI_Bcast(values, n, MPI_DOUBLE, 0, ctrl_));
      return Status::Ok();
    case Combine::Mean:
      CB_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, ctrl_));
      for (int i = 0; i < n; ++i) values[i] /= size_;
      return Status::Ok();
    case Combine::Min:
      CB_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_MIN, ctrl_));
      return Status::Ok();
    case Combine::Max:
      CB_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_MAX, ctrl_));
      return Status::Ok();
    case Combine::Sum:
      CB_MPI(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, ctrl_));
      return Status::Ok();
  }
  return badSpec("unknown combine mode " + std::to_string(static_cast<int>(how)), "MpiBackend::allreduce");
}

Status MpiBackend::gather(const double* mine, int n, std::vector<double>* atRoot) {
  CB_TRY(alive("gather"));
  if (atRoot == nullptr || n < 0 || (n > 0 && mine == nullptr))
    return badSpec("gather needs a value array and an output vector", "MpiBackend::gather");
  atRoot->clear();
  if (rank_ == 0) atRoot->resize(static_cast<size_t>(n) * size_);
  if (n == 0) return Status::Ok();
  CB_MPI(MPI_Gather(mine, n, MPI_DOUBLE, rank_ == 0 ? atRoot->data() : nullptr, n, MPI_DOUBLE, 0, ctrl_));
  return Status::Ok();
}

Status MpiBackend::gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) {
  CB_TRY(alive("gatherStrings"));
  if (atRoot == nullptr) return badSpec("gatherStrings needs an output vector", "MpiBackend::gatherStrings");
  atRoot->clear();
  int len = 0;
  CB_TRY(toInt(mine.size(), "string length", Coll::Gather, &len));
  std::vector<int> lens(rank_ == 0 ? size_ : 0), displs(rank_ == 0 ? size_ : 0);
  CB_MPI(MPI_Gather(&len, 1, MPI_INT, rank_ == 0 ? lens.data() : nullptr, 1, MPI_INT, 0, ctrl_));
  std::vector<char> all;
  if (rank_ == 0) {
    uint64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      CB_TRY(toInt(total, "gathered string bytes", Coll::Gather, &displs[r]));
      total += static_cast<uint64_t>(lens[r]);
    }
    all.resize(std::max<uint64_t>(total, 1));
  }
  CB_MPI(MPI_Gatherv(mine.data(), len, MPI_CHAR, rank_ == 0 ? all.data() : nullptr,
                     rank_ == 0 ? lens.data() : nullptr, rank_ == 0 ? displs.data() : nullptr, MPI_CHAR,
                     0, ctrl_));
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) atRoot->emplace_back(all.data() + displs[r], static_cast<size_t>(lens[r]));
  return Status::Ok();
}

}  // namespace collbench
