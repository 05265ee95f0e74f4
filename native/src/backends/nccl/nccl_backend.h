// The NCCL backend: the Backend interface on dlopen'ed NCCL and CUDA streams; one process drives -t × -g GPUs in NCCL
// groups with nccl-tests' semantics, polled waits (-T: ncclCommAbort), events (-I) and graphs (-G). Control plane:
// MPI's under mpirun, NCCL collectives on a small device buffer (torchrun-style), or none.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/nccl/nccl_loader.h"
#include "backends/nccl/nccl_device_kernels.h"
#include "core/backend.h"

namespace collbench {

struct NcclOptions {
  std::string libPath;  // --nccl-lib ("" = COLLBENCH_NCCL_LIB, then the search)
  int procRank = 0;     // this process in the job
  int nprocs = 1;
  int nThreads = 1;     // -t
  int nGpus = 1;        // -g; local ranks = t x g, on consecutive devices
  int firstDevice = 0;  // CUDA ordinal of local rank 0 (local process rank x t x g, or NCCL_TESTS_DEVICE)
  bool shareDevices =
      false;                // local rank i on device (firstDevice + i) mod the device count: several ranks per
                            // GPU (NCCL_MULTI_RANK_GPU_ENABLE, or per-rank NCCL_HOSTID; bench/backends/nccl-devices.ts)
  std::string uniqueId;     // the world communicator's ncclUniqueId (128 bytes, made by process 0)
  int splitColor = -1;      // NCCL_TESTS_SPLIT colour of this process; -1 = one communicator
  bool streamNull = false;  // -y 1: the legacy default stream instead of created streams
  int ctaPolicy = -1;       // -x (-1 = unset)
  int localRegister = 0;    // -R 0/1/2
  int timeoutSec = 0;       // -T: longest wait for completion before aborting (0 = none)
  int deviceImpl = 0;       // -D: 0 = NCCL host calls, 1..4 = collbench's device-API kernels (nccl_device.cc)
  int deviceCtaCount = 16;  // -V: CTAs of those kernels
  Backend* control = nullptr;  // a lent process-level control plane (MPI), or null
};

// What a rank line and the memory cap need to know about one local rank's GPU.
struct NcclDevice {
  int worldRank = 0;
  int groupRank = 0;
  int ordinal = 0;
  int pciDomain = 0, pciBus = 0, pciDevice = 0;
  int ccMajor = 0, ccMinor = 0;
  uint64_t totalMemBytes = 0;
  std::string name;
};

// The CUDA devices this process sees (never fails: a failing query is described in `error`).
struct CudaDevices {
  int count = 0;
  int cudaError = 0;       // cudaGetDeviceCount's result
  std::string errorName;   // "cudaErrorInsufficientDriver"
  std::string errorText;   // "CUDA driver version is insufficient for CUDA runtime version"
  int driverVersion = 0;   // cudaDriverGetVersion (0 without a driver)
  int runtimeVersion = 0;  // cudaRuntimeGetVersion (the statically linked runtime)
};
CudaDevices queryCudaDevices();

// Status of a failed CUDA call: backend "cuda", code "CUDA_ERROR_<NAME>", the runtime's text.
Status cudaStatus(cudaError_t err, const std::string& call, const std::string& site = "");

class NcclBackend : public Backend {
 public:
  // Loads NCCL, checks the devices, creates streams and communicators. With no usable CUDA device it
  // still asks NCCL to create the communicator, so the error carries NCCL's own diagnosis
  // (ncclUnhandledCudaError + ncclGetLastError) next to the CUDA runtime's.
  static Status create(const NcclOptions& options, std::unique_ptr<NcclBackend>* out);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  // Frees buffers, graphs and events; destroys (or, after an abort, forgets) the communicators.
  Status finalize() override;
  // From any thread: the next wait aborts the communicators and fails (the -T watchdog's hook);
  // aborted() turns true once it has (ncclCommAbort is then done, by the thread that waited).
  void requestAbort() { abortRequested_.store(true); }
  bool aborted() const { return abortDone_.load(); }

  const NcclLibrary& library() const { return *lib_; }
  const std::vector<NcclDevice>& devices() const { return devices_; }
  int groupRank() const { return devices_.empty() ? 0 : devices_[0].groupRank; }  // of local rank 0
  int groupSize() const { return groupSize_; }
  int procRank() const { return opt_.procRank; }
  int nprocs() const { return opt_.nprocs; }
  const char* controlPlaneName() const;
  // -M: free-memory drops during communicator init, buffer allocation, and since then (max over GPUs).
  Status memoryUsage(uint64_t* initBytes, uint64_t* userBytes, uint64_t* collBytes);

  int rank() const override { return opt_.procRank * localCount_; }  // world rank of local rank 0
  int nranks() const override { return opt_.nprocs * localCount_; }
  int localRanks() const override { return localCount_; }

  Status allocate(uint64_t sendBytes, uint64_t recvBytes) override;
  void* buffer(BufId which) override { return localBuffer(0, which); }
  void* localBuffer(int local, BufId which) override;

  Status enqueue(const OpArgs& args) override;
  Status enqueueAll(const OpArgs* args, int n) override;
  Status prepareSeries(const OpSeries& series) override;
  // One communicator per group by ncclCommSplit of the world communicator (every rank, every group, in order; a
  // non-member passes NCCL_SPLIT_NOCOLOR); one local rank per process, no -D, no NCCL_TESTS_SPLIT. A group's op runs
  // on its communicator by the generic path (enqueueAll).
  Status createGroups(const std::vector<std::vector<int>>& groups) override;
  bool runPrepared(uint64_t shiftBytes) override;
  Status groupStart() override;
  Status groupEnd() override;
  Status waitAll() override;
  Status barrier() override;
  Status allreduce(double* values, int n, Combine how) override;
  Status gather(const double* mine, int n, std::vector<double>* atRoot) override;
  Status gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) override;

  Status zero(BufId which, uint64_t offsetBytes, uint64_t bytes) override {
    return localZero(0, which, offsetBytes, bytes);
  }
  Status fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) override {
    return localFill(0, dtype, op, seed, segs);
  }
  Status check(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs, CheckOutcome* out) override {
    return localCheck(0, dtype, op, seed, segs, out);
  }
  Status localZero(int local, BufId which, uint64_t offsetBytes, uint64_t bytes) override;
  Status localFill(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) override;
  Status localCheck(int local, DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                    CheckOutcome* out) override;

  bool deviceTimer() const override { return true; }
  Status timerMarks(int count) override;
  Status timerMark(int k) override;
  Status timerElapsed(int from, int to, double* seconds) override;

  // Device arrivals (core/device_arrivals.h; nccl_arrivals.cc): a reference event per stream beside the -I marks.
  bool deviceArrivals() const override { return true; }
  Status arrivalReference(int local) override;
  Status markSinceReference(int local, int k, double* seconds) override;
  Status delayStream(int local, double micros) override;

  bool graphs() const override { return !opt_.streamNull; }
  Status captureBegin() override;
  Status captureEnd() override;
  Status graphLaunch(int times) override;

 private:
  struct DeviceBuffer {
    void* ptr = nullptr;
    uint64_t bytes = 0;
    bool ncclAllocated = false;
    void* regHandle = nullptr;         // -R 1
    ncclapi::Window window = nullptr;  // -R 2
  };
  // Everything one local rank owns.
  struct Local {
    int device = 0;
    cudaStream_t stream = nullptr;
    ncclapi::Comm world = nullptr;  // every rank of the job (control plane, and data without a split)
    ncclapi::Comm data = nullptr;   // the split group's communicator (== world without a split)
    DeviceBuffer send, recv;
    nccldevice::DevComm* devComm = nullptr;  // -D > 0 (nccl_device.cc)
    unsigned long long* checkDev = nullptr;  // 2 per segment: wrong count, first offset
    int checkSlots = 0;
    unsigned long long* checkHost = nullptr;  // pinned mirror
    void* ctrlDev = nullptr;                  // control-plane staging (NCCL control plane)
    void* ctrlHost = nullptr;
    uint64_t ctrlBytes = 0;
    std::vector<cudaEvent_t> marks;
    cudaEvent_t reference = nullptr;  // device arrivals: the mark of known host time (nccl_arrivals.cc)
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;
    size_t freeBeforeInit = 0, freeAfterInit = 0, freeBeforeAlloc = 0, freeAfterAlloc = 0;
  };

  explicit NcclBackend(const NcclOptions& options) : opt_(options) {}
  Status init();
  Status initComms();
  Status describeNoDevice(const CudaDevices& cuda);
  Status ncclStatus(ncclapi::Result r, const std::string& call, ncclapi::Comm comm, const std::string& site = "") const;
  Status setDevice(int local) const;
  Status checkOp(const OpArgs& a) const;
  Status issue(const OpArgs& a);
  Status issueHyperCube(const OpArgs* args, int n);
  // -D (nccl_device.cc): refusals at init, device communicators once the windows exist, the kernel launch per op,
  // teardown.
  Status checkDevApi();
  Status createDevComms();
  Status destroyDevComm(Local& l);
  Status issueDevice(const OpArgs& a);
  Status sendRecvGroup(const OpArgs& a, const char* call);
  Status freeBuffer(Local& l, DeviceBuffer& b);
  Status allocBuffer(Local& l, DeviceBuffer& b, uint64_t bytes);
  Status registerBuffers();
  Status ensureCheckSlots(Local& l, int slots);
  Status checkLocalIndex(int local) const;
  Status abortAll(const std::string& why, const std::string& code);
  void destroyGraphs();

  // Control plane over NCCL (no lent one, several processes).
  Status ensureCtrl(uint64_t bytes);
  Status ctrlAllreduce(double* values, int n, Combine how);
  Status ctrlAllgather(const void* mine, uint64_t bytes, std::vector<char>* all);
  // One control-plane call per local rank, inside an NCCL group when there are several; the first failure
  // (of a call, or of ncclGroupEnd) is returned, named `what`.
  Status ctrlGroup(const char* what, const std::function<ncclapi::Result(Local&)>& call);

  // prepareSeries()'s op for runPrepared(): one NCCL call (sendrecv: its send + recv group) with its arguments at
  // shift 0, on local rank 0; `direct` false: the generic path (Backend::runPrepared, enqueueAll).
  struct PreparedOp {
    bool direct = false;
    Coll coll = Coll::AllReduce;
    const char* call = nullptr;  // the library call (libraryCallName), or null for sendrecv's group
    const char* send = nullptr;
    char* recv = nullptr;
    uint64_t count = 0;
    ncclapi::DataType dt{};
    int op = 0, root = 0, sendPeer = 0, recvPeer = 0;
  };
  PreparedOp prepared_;

  NcclOptions opt_;
  const NcclLibrary* lib_ = nullptr;
  int localCount_ = 1;
  int groupSize_ = 1;
  // createGroups()': per group, local rank 0's communicator (null: not a member), its rank in it and its size.
  struct SubGroup {
    ncclapi::Comm comm = nullptr;
    int rank = -1, size = 0;
  };
  std::vector<SubGroup> subGroups_;
  Status destroySubGroups();
  std::vector<Local> locals_;
  const nccldevice::Variant* devApi_ = nullptr;  // -D: the kernels matching the loaded NCCL (nccl_device.cc)
  std::vector<NcclDevice> devices_;
  int groupDepth_ = 0;
  bool pendingBarrier_ = false;
  bool capturing_ = false;
  bool aborted_ = false;
  bool finalized_ = false;
  std::atomic<bool> abortRequested_{false};
  std::atomic<bool> abortDone_{false};
};

}  // namespace collbench
