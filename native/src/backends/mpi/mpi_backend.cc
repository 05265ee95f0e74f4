// MpiBackend: bring-up, life cycle and the MPI control plane of the OpenMPI backend (its collectives are in
// mpi_collectives.cc, as the NCCL backend splits them). Every MPI return code goes through CB_MPI (mpi_types.h) into a
// Status.
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

// ---------------------------------------------------------------------------------------------
// Life cycle

namespace {

// The MPI_Init watchdog, over all of MpiBackend::create (MPI_Init_thread and the collective set-up after it:
// MPI_Comm_dup, MPI_Comm_split_type, which wait for every rank). The JS thread is blocked there, so no JS timer can
// fire: alarm(2) raises SIGALRM in this process instead, and the handler (async-signal-safe: write and _exit only)
// prints the line prepared before arming and exits 4 (EXIT.TIMEOUT). mpirun then ends the job's other processes.
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
                                "%s: Test timeout (%ds) in MPI_Init or the communicator set-up after it: the job's "
                                "other processes or its launcher did "
                                "not answer (-T sets the limit, -T 0 disables it)\n",
                                host, seconds);
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
                           "MPI_Init_thread failed (error code " + std::to_string(rc) + ")",
                           CB_SITE("MPI_Init_thread"));
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
  Status first = freeGroups();
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

std::string MpiBackend::libraryVersionShort() {
  return shortenLibraryVersion(libraryVersion());
}

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
  CB_MPI(MPI_Gatherv(mine.data(), len, MPI_CHAR, rank_ == 0 ? all.data() : nullptr, rank_ == 0 ? lens.data() : nullptr,
                     rank_ == 0 ? displs.data() : nullptr, MPI_CHAR, 0, ctrl_));
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) atRoot->emplace_back(all.data() + displs[r], static_cast<size_t>(lens[r]));
  return Status::Ok();
}

}  // namespace collbench
