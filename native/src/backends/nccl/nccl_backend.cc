// NcclBackend (nccl_backend.h): nccl-tests' eleven collectives on NCCL (nccl-tests.md §4: in-place
// layouts, PreMulSum per call, grouped send/recv fallbacks), device fill/check through
// nccl_kernels.cu, completion by polling, events, graphs and the control planes. Every NCCL result
// and CUDA error becomes a Status naming the call, the error and NCCL's last-error text.
#include "backends/nccl/nccl_backend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "backends/nccl/nccl_kernels.h"
#include "core/backend_errors.h"
#include "core/data_check.h"
#include "core/minifloat.h"
#include "core/pattern.h"

namespace collbench {
namespace {

using ncclapi::Result;

// Propagate a failed NCCL call / CUDA call as a Status naming it (InProgress: a non-blocking
// communicator still working, which the waits poll for).
#define CB_NCCL(expr, name, comm)                                                      \
  do {                                                                                 \
    const ::collbench::ncclapi::Result cb_r_ = (expr);                                 \
    if (cb_r_ != ::collbench::ncclapi::Success && cb_r_ != ::collbench::ncclapi::InProgress) \
      return ncclStatus(cb_r_, name, comm, CB_SITE(name));                             \
  } while (0)
#define CB_CUDA(expr, name)                                 \
  do {                                                      \
    const cudaError_t cb_e_ = (expr);                       \
    if (cb_e_ != cudaSuccess) return cudaStatus(cb_e_, name, CB_SITE(name)); \
  } while (0)

ncclapi::DataType ncclType(DType t) { return static_cast<ncclapi::DataType>(static_cast<int>(t)); }

bool isReducing(Coll c) { return c == Coll::AllReduce || c == Coll::Reduce || c == Coll::ReduceScatter; }

char* at(void* p, uint64_t elems, uint64_t ts) { return static_cast<char*>(p) + elems * ts; }
const char* at(const void* p, uint64_t elems, uint64_t ts) { return static_cast<const char*>(p) + elems * ts; }

// nccl-tests' PreMulSum scalar (1 on even ranks, 2 on odd) as raw bits of the dtype.
uint64_t mulSumScalarBits(DType t, int groupRank) {
  const int s = pattern::mulSumScalar(groupRank);
  return dtypeIsFloat(t) ? encodeFromDouble(t, static_cast<double>(s)) : static_cast<uint64_t>(s);
}

// "cudaErrorInsufficientDriver" -> "CUDA_ERROR_INSUFFICIENT_DRIVER".
std::string cudaCode(cudaError_t e) {
  std::string name = cudaGetErrorName(e);
  const std::string prefix = "cudaError";
  if (name.compare(0, prefix.size(), prefix) == 0) name = name.substr(prefix.size());
  std::string out = "CUDA_ERROR";
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c >= 'A' && c <= 'Z') out += '_';
    out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  return out;
}

size_t freeMemory() {
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return freeBytes;
}

}  // namespace

// -------------------------------------------------------------------------------------------------
// Errors and devices

Status cudaStatus(cudaError_t err, const std::string& call, const std::string& site) {
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  return Status::Error("cuda", cudaCode(err), call + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")",
                       site.empty() ? CB_SITE(call) : site);
}

CudaDevices queryCudaDevices() {
  CudaDevices d;
  int count = 0;  // left unwritten when the call fails (platform.md)
  const cudaError_t e = cudaGetDeviceCount(&count);
  d.cudaError = static_cast<int>(e);
  if (e != cudaSuccess) {
    d.errorName = cudaGetErrorName(e);
    d.errorText = cudaGetErrorString(e);
    cudaGetLastError();
  } else {
    d.count = count;
  }
  if (cudaDriverGetVersion(&d.driverVersion) != cudaSuccess) d.driverVersion = 0;
  if (cudaRuntimeGetVersion(&d.runtimeVersion) != cudaSuccess) d.runtimeVersion = 0;
  cudaGetLastError();
  return d;
}

Status NcclBackend::ncclStatus(Result r, const std::string& call, ncclapi::Comm comm, const std::string& site) const {
  std::string msg = call + " failed: " + ncclapi::resultName(r);
  if (lib_ != nullptr) {
    const char* text = lib_->api.GetErrorString(r);
    if (text != nullptr && *text != '\0') msg += std::string(" (") + text + ")";
    const char* last = lib_->api.GetLastError != nullptr ? lib_->api.GetLastError(comm) : nullptr;
    if (last != nullptr && *last != '\0') msg += std::string(": ") + last;
  }
  return Status::Error("nccl", ncclapi::resultCode(r), msg, site.empty() ? CB_SITE(call) : site);
}

const char* NcclBackend::controlPlaneName() const {
  if (opt_.control != nullptr) return "lent (mpi)";
  return opt_.nprocs == 1 ? "single process" : "nccl";
}

Status NcclBackend::setDevice(int local) const {
  CB_CUDA(cudaSetDevice(locals_[local].device), "cudaSetDevice");
  return Status::Ok();
}

Status NcclBackend::checkLocalIndex(int local) const {
  if (local < 0 || local >= localCount_ || static_cast<size_t>(local) >= locals_.size())
    return badSpec("local rank " + std::to_string(local) + " does not exist (" + std::to_string(localCount_) +
                       " local ranks)",
                   "NcclBackend");
  return Status::Ok();
}

// -------------------------------------------------------------------------------------------------
// Life cycle

Status NcclBackend::create(const NcclOptions& options, std::unique_ptr<NcclBackend>* out) {
  if (out == nullptr) return badSpec("NcclBackend::create needs an output pointer", "NcclBackend::create");
  const NcclOptions& o = options;
  if (o.nThreads < 1 || o.nGpus < 1 || o.nprocs < 1 || o.procRank < 0 || o.procRank >= o.nprocs ||
      o.firstDevice < 0)
    return badSpec("invalid process layout: rank " + std::to_string(o.procRank) + " of " +
                       std::to_string(o.nprocs) + ", -t " + std::to_string(o.nThreads) + " -g " +
                       std::to_string(o.nGpus) + ", first device " + std::to_string(o.firstDevice),
                   "NcclBackend::create");
  if (o.uniqueId.size() != static_cast<size_t>(ncclapi::kUniqueIdBytes))
    return badSpec("the NCCL unique id must have " + std::to_string(ncclapi::kUniqueIdBytes) + " bytes, got " +
                       std::to_string(o.uniqueId.size()),
                   "NcclBackend::create");
  std::unique_ptr<NcclBackend> b(new NcclBackend(options));
  b->localCount_ = o.nThreads * o.nGpus;
  Status s = b->init();
  if (!s.ok) {
    (void)b->finalize();
    return s;
  }
  *out = std::move(b);
  return Status::Ok();
}

Status NcclBackend::describeNoDevice(const CudaDevices& cuda) {
  std::string msg = "no CUDA device: ";
  msg += cuda.cudaError != 0 ? cuda.errorText + " (cudaGetDeviceCount: " + cuda.errorName + ")"
                             : std::string("cudaGetDeviceCount found 0 devices");
  // Ask NCCL as well, on a private one-rank communicator (it never waits for peers), so the error
  // carries NCCL's own diagnosis next to the runtime's.
  const ncclapi::Api& api = lib_->api;
  ncclapi::UniqueId id{};
  Result r = api.GetUniqueId(&id);
  std::string code = "CUDA_NO_DEVICE", backend = "cuda", call = "ncclGetUniqueId";
  if (r == ncclapi::Success) {
    ncclapi::Comm c = nullptr;
    call = "ncclCommInitRank";
    r = api.CommInitRank(&c, 1, id, 0);
    if (r == ncclapi::Success && c != nullptr) api.CommDestroy(c);
  }
  if (r != ncclapi::Success) {
    const Status n = ncclStatus(r, call, nullptr);
    msg += "; " + n.message;
    code = n.code;
    backend = "nccl";
  }
  msg += "; NCCL " + lib_->versionString() + " from " + lib_->path;
  return Status::Error(backend, code, msg, CB_SITE("NcclBackend::create"));
}

Status NcclBackend::init() {
  CB_TRY(loadNccl(opt_.libPath, &lib_));
  const CudaDevices cuda = queryCudaDevices();
  if (cuda.count <= 0) return describeNoDevice(cuda);
  const int needed = opt_.firstDevice + localCount_;
  if (needed > cuda.count)
    return Status::Error("cuda", "CUDA_TOO_FEW_DEVICES",
                         "Invalid number of GPUs: " + std::to_string(needed) + " requested but only " +
                             std::to_string(cuda.count) + " were found (this process uses devices " +
                             std::to_string(opt_.firstDevice) + ".." + std::to_string(needed - 1) +
                             ": local process rank x -t x -g, or NCCL_TESTS_DEVICE)",
                         CB_SITE("NcclBackend::create"));
  locals_.resize(localCount_);
  devices_.resize(localCount_);
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    NcclDevice& d = devices_[i];
    l.device = d.ordinal = opt_.firstDevice + i;
    d.worldRank = rank() + i;
    CB_TRY(setDevice(i));
    CB_CUDA(cudaFree(nullptr), "cudaFree(0) (context creation)");
    cudaDeviceProp prop{};
    CB_CUDA(cudaGetDeviceProperties(&prop, l.device), "cudaGetDeviceProperties");
    d.name = prop.name;
    d.totalMemBytes = prop.totalGlobalMem;
    d.ccMajor = prop.major;
    d.ccMinor = prop.minor;
    d.pciDomain = prop.pciDomainID;
    d.pciBus = prop.pciBusID;
    d.pciDevice = prop.pciDeviceID;
    if (!opt_.streamNull) CB_CUDA(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    l.freeBeforeInit = freeMemory();
  }
  CB_TRY(initComms());
  for (int i = 0; i < localCount_; ++i) {
    CB_TRY(setDevice(i));
    locals_[i].freeAfterInit = freeMemory();
  }
  return Status::Ok();
}

Status NcclBackend::initComms() {
  const ncclapi::Api& api = lib_->api;
  ncclapi::UniqueId id{};
  std::memcpy(id.internal, opt_.uniqueId.data(), sizeof id.internal);
  ncclapi::Config cfg = ncclapi::defaultConfig();
  if (opt_.ctaPolicy >= 0) {
    if (api.CommInitRankConfig == nullptr || !lib_->atLeast(2, 27, 0))
      return Status::Error("nccl", "NCCL_TOO_OLD", "-x (CTA policy) needs NCCL 2.27 or newer; this is NCCL " +
                                                       lib_->versionString(),
                           CB_SITE("ncclCommInitRankConfig"));
    cfg.CTAPolicy = opt_.ctaPolicy;
  }
  const bool grouped = localCount_ > 1;  // one thread initialising several ranks must group them
  Status first = Status::Ok();
  if (grouped) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  for (int i = 0; i < localCount_ && first.ok; ++i) {
    Status s = setDevice(i);
    if (!s.ok) {
      first = s;
      break;
    }
    Local& l = locals_[i];
    const Result r = api.CommInitRankConfig != nullptr
                         ? api.CommInitRankConfig(&l.world, nranks(), id, rank() + i, &cfg)
                         : api.CommInitRank(&l.world, nranks(), id, rank() + i);
    if (r != ncclapi::Success && r != ncclapi::InProgress)
      first = ncclStatus(r, api.CommInitRankConfig ? "ncclCommInitRankConfig" : "ncclCommInitRank", l.world);
  }
  if (grouped) {
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclGroupEnd (communicator init)", nullptr);
  }
  CB_TRY(first);

  if (opt_.splitColor >= 0) {
    if (api.CommSplit == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD", "NCCL_TESTS_SPLIT needs ncclCommSplit (NCCL 2.18 or newer); "
                                                   "this is NCCL " + lib_->versionString(),
                           CB_SITE("ncclCommSplit"));
    if (grouped) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
    for (int i = 0; i < localCount_ && first.ok; ++i) {
      const Result r = api.CommSplit(locals_[i].world, opt_.splitColor, rank() + i, &locals_[i].data, nullptr);
      if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "ncclCommSplit", locals_[i].world);
    }
    if (grouped) {
      const Result r = api.GroupEnd();
      if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclGroupEnd (communicator split)", nullptr);
    }
    CB_TRY(first);
  } else {
    for (Local& l : locals_) l.data = l.world;
  }

  for (int i = 0; i < localCount_; ++i) {
    int r = 0, n = 0;
    CB_NCCL(api.CommUserRank(locals_[i].data, &r), "ncclCommUserRank", locals_[i].data);
    CB_NCCL(api.CommCount(locals_[i].data, &n), "ncclCommCount", locals_[i].data);
    devices_[i].groupRank = r;
    if (i == 0) groupSize_ = n;
    // Split keys are world ranks, so a process's ranks stay consecutive in its group.
    if (n != groupSize_ || r != devices_[0].groupRank + i)
      return badSpec("the split communicator does not keep this process's ranks together", "ncclCommSplit");
  }
  return Status::Ok();
}

void NcclBackend::destroyGraphs() {
  for (Local& l : locals_) {
    if (l.graphExec != nullptr) cudaGraphExecDestroy(l.graphExec);
    if (l.graph != nullptr) cudaGraphDestroy(l.graph);
    l.graphExec = nullptr;
    l.graph = nullptr;
  }
}

Status NcclBackend::finalize() {
  if (finalized_) return Status::Ok();
  finalized_ = true;
  Status first = Status::Ok();
  auto keep = [&first](const Status& s) {
    if (!s.ok && first.ok) first = s;
  };
  if (capturing_) {
    for (Local& l : locals_) {
      cudaGraph_t g = nullptr;
      if (l.stream != nullptr && cudaStreamEndCapture(l.stream, &g) == cudaSuccess && g != nullptr) cudaGraphDestroy(g);
    }
    capturing_ = false;
    cudaGetLastError();
  }
  destroyGraphs();
  for (int i = 0; i < static_cast<int>(locals_.size()); ++i) {
    Local& l = locals_[i];
    cudaSetDevice(l.device);
    if (!aborted_) cudaStreamSynchronize(l.stream);
    for (cudaEvent_t e : l.marks) cudaEventDestroy(e);
    l.marks.clear();
    keep(freeBuffer(l, l.send));
    keep(freeBuffer(l, l.recv));
    if (l.checkDev != nullptr) cudaFree(l.checkDev);
    if (l.checkHost != nullptr) cudaFreeHost(l.checkHost);
    if (l.ctrlDev != nullptr) cudaFree(l.ctrlDev);
    if (l.ctrlHost != nullptr) cudaFreeHost(l.ctrlHost);
    l.checkDev = nullptr;
    l.checkHost = nullptr;
    l.ctrlDev = l.ctrlHost = nullptr;
  }
  if (lib_ != nullptr && !aborted_) {
    for (Local& l : locals_) {
      if (l.data != nullptr && l.data != l.world) {
        const Result r = lib_->api.CommDestroy(l.data);
        if (r != ncclapi::Success) keep(ncclStatus(r, "ncclCommDestroy", nullptr));
      }
      if (l.world != nullptr) {
        const Result r = lib_->api.CommDestroy(l.world);
        if (r != ncclapi::Success) keep(ncclStatus(r, "ncclCommDestroy", nullptr));
      }
      l.data = l.world = nullptr;
    }
  }
  for (Local& l : locals_) {
    if (l.stream != nullptr) cudaStreamDestroy(l.stream);
    l.stream = nullptr;
  }
  cudaGetLastError();
  return first;
}

NcclBackend::~NcclBackend() { (void)finalize(); }

Status NcclBackend::abortAll(const std::string& why, const std::string& code) {
  if (lib_ != nullptr && !aborted_) {
    for (Local& l : locals_) {
      if (l.data != nullptr && l.data != l.world) lib_->api.CommAbort(l.data);
      if (l.world != nullptr) lib_->api.CommAbort(l.world);
      l.data = l.world = nullptr;
    }
  }
  aborted_ = true;
  abortDone_.store(true);
  return Status::Error("nccl", code, why + "; every communicator of this process was aborted (ncclCommAbort)",
                       CB_SITE("ncclCommAbort"));
}

Status NcclBackend::memoryUsage(uint64_t* initBytes, uint64_t* userBytes, uint64_t* collBytes) {
  *initBytes = *userBytes = *collBytes = 0;
  auto drop = [](size_t before, size_t after) -> uint64_t { return before > after ? before - after : 0; };
  for (int i = 0; i < localCount_; ++i) {
    CB_TRY(setDevice(i));
    const Local& l = locals_[i];
    const size_t now = freeMemory();
    *initBytes = std::max(*initBytes, drop(l.freeBeforeInit, l.freeAfterInit));
    *userBytes = std::max(*userBytes, drop(l.freeBeforeAlloc, l.freeAfterAlloc));
    *collBytes = std::max(*collBytes, drop(l.freeAfterAlloc == 0 ? l.freeAfterInit : l.freeAfterAlloc, now));
  }
  return Status::Ok();
}

// -------------------------------------------------------------------------------------------------
// Memory

Status NcclBackend::freeBuffer(Local& l, DeviceBuffer& b) {
  Status first = Status::Ok();
  if (lib_ != nullptr && l.data != nullptr) {
    if (b.window != nullptr && lib_->api.CommWindowDeregister != nullptr) {
      const Result r = lib_->api.CommWindowDeregister(l.data, b.window);
      if (r != ncclapi::Success) first = ncclStatus(r, "ncclCommWindowDeregister", l.data);
    }
    if (b.regHandle != nullptr && lib_->api.CommDeregister != nullptr) {
      const Result r = lib_->api.CommDeregister(l.data, b.regHandle);
      if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclCommDeregister", l.data);
    }
  }
  b.window = nullptr;
  b.regHandle = nullptr;
  if (b.ptr != nullptr) {
    if (b.ncclAllocated && lib_ != nullptr && lib_->api.MemFree != nullptr) {
      lib_->api.MemFree(b.ptr);
    } else {
      cudaFree(b.ptr);
    }
  }
  b.ptr = nullptr;
  b.bytes = 0;
  b.ncclAllocated = false;
  return first;
}

Status NcclBackend::allocBuffer(Local& l, DeviceBuffer& b, uint64_t bytes) {
  // Never a null pointer, even for 0 bytes: ops with count 0 still pass real addresses.
  const uint64_t size = std::max<uint64_t>(bytes, 4096);
  if (lib_->api.MemAlloc != nullptr) {
    // nccl-tests allocates with ncclMemAlloc on NCCL >= 2.19 (registration-friendly memory).
    const Result r = lib_->api.MemAlloc(&b.ptr, size);
    if (r != ncclapi::Success) {
      b.ptr = nullptr;
      return Status::Error("core", "CORE_OUT_OF_MEMORY",
                           "cannot allocate " + std::to_string(size) + " bytes on CUDA device " +
                               std::to_string(l.device) + ": " + ncclStatus(r, "ncclMemAlloc", nullptr).message,
                           CB_SITE("ncclMemAlloc"));
    }
    b.ncclAllocated = true;
  } else {
    const cudaError_t e = cudaMalloc(&b.ptr, size);
    if (e != cudaSuccess) {
      cudaGetLastError();
      b.ptr = nullptr;
      return Status::Error("core", "CORE_OUT_OF_MEMORY",
                           "cannot allocate " + std::to_string(size) + " bytes on CUDA device " +
                               std::to_string(l.device) + ": " + cudaGetErrorString(e),
                           CB_SITE("cudaMalloc"));
    }
  }
  b.bytes = bytes;
  CB_CUDA(cudaMemset(b.ptr, 0, size), "cudaMemset");  // zero and touch before timing
  return Status::Ok();
}

Status NcclBackend::registerBuffers() {
  const ncclapi::Api& api = lib_->api;
  if (opt_.localRegister == 1) {
    if (api.CommRegister == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD", "-R 1 needs ncclCommRegister (NCCL 2.19 or newer)",
                           CB_SITE("ncclCommRegister"));
    for (Local& l : locals_)
      for (DeviceBuffer* b : {&l.send, &l.recv})
        CB_NCCL(api.CommRegister(l.data, b->ptr, std::max<uint64_t>(b->bytes, 4096), &b->regHandle),
                "ncclCommRegister", l.data);
  } else if (opt_.localRegister == 2) {
    if (api.CommWindowRegister == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD", "-R 2 needs ncclCommWindowRegister (NCCL 2.27 or newer)",
                           CB_SITE("ncclCommWindowRegister"));
    // Window registration is collective: every rank, in the same order, grouped per thread.
    for (int which = 0; which < 2; ++which) {
      if (localCount_ > 1) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
      Status first = Status::Ok();
      for (Local& l : locals_) {
        DeviceBuffer& b = which == 0 ? l.send : l.recv;
        const Result r = api.CommWindowRegister(l.data, b.ptr, std::max<uint64_t>(b.bytes, 4096), &b.window,
                                                ncclapi::kWinCollSymmetric);
        if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
          first = ncclStatus(r, "ncclCommWindowRegister", l.data);
      }
      if (localCount_ > 1) {
        const Result r = api.GroupEnd();
        if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclGroupEnd (window registration)", nullptr);
      }
      CB_TRY(first);
    }
  }
  return Status::Ok();
}

Status NcclBackend::allocate(uint64_t sendBytes, uint64_t recvBytes) {
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    CB_TRY(setDevice(i));
    CB_TRY(freeBuffer(l, l.send));
    CB_TRY(freeBuffer(l, l.recv));
    if (l.freeBeforeAlloc == 0) l.freeBeforeAlloc = freeMemory();
    CB_TRY(allocBuffer(l, l.send, sendBytes));
    CB_TRY(allocBuffer(l, l.recv, recvBytes));
  }
  CB_TRY(registerBuffers());
  for (int i = 0; i < localCount_; ++i) {
    CB_TRY(setDevice(i));
    // cudaMemset ran on the legacy stream, which our non-blocking streams do not wait for.
    CB_CUDA(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after allocation)");
    locals_[i].freeAfterAlloc = freeMemory();
  }
  return Status::Ok();
}

void* NcclBackend::localBuffer(int local, BufId which) {
  if (local < 0 || local >= static_cast<int>(locals_.size())) return nullptr;
  return which == BufId::Send ? locals_[local].send.ptr : locals_[local].recv.ptr;
}

// -------------------------------------------------------------------------------------------------
// Collectives

Status NcclBackend::enqueue(const OpArgs& args) {
  if (localCount_ != 1)
    return badSpec("this process drives " + std::to_string(localCount_) + " ranks: enqueue them together",
                   "NcclBackend::enqueue");
  return enqueueAll(&args, 1);
}

Status NcclBackend::enqueueAll(const OpArgs* args, int n) {
  if (n != localCount_)
    return badSpec("got ops for " + std::to_string(n) + " of " + std::to_string(localCount_) + " local ranks",
                   "NcclBackend::enqueueAll");
  for (int i = 0; i < n; ++i)
    if (args[i].local != i) return badSpec("ops must come in local-rank order", "NcclBackend::enqueueAll");
  if (args[0].coll == Coll::HyperCube) return issueHyperCube(args, n);
  if (n == 1) return issue(args[0]);
  // nccl-tests: a thread driving several GPUs issues their ops inside one group.
  CB_NCCL(lib_->api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < n && first.ok; ++i) first = issue(args[i]);
  const Result r = lib_->api.GroupEnd();
  if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclGroupEnd", nullptr);
  return first;
}

Status NcclBackend::sendRecvGroup(const OpArgs& a, const char* call) {
  const ncclapi::Api& api = lib_->api;
  const Local& l = locals_[a.local];
  const ncclapi::DataType dt = ncclType(a.dtype);
  const uint64_t ts = dtypeSize(a.dtype), c = a.count;
  const int n = groupSize_, me = devices_[a.local].groupRank;
  CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  auto send = [&](const void* p, uint64_t count, int peer) {
    const Result r = api.Send(p, count, dt, peer, l.data, l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclSend", l.data);
  };
  auto recv = [&](void* p, uint64_t count, int peer) {
    const Result r = api.Recv(p, count, dt, peer, l.data, l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclRecv", l.data);
  };
  switch (a.coll) {
    case Coll::AllToAll:  // every peer, self included (nccl-tests before ncclAlltoAll)
      for (int p = 0; p < n; ++p) {
        send(at(a.send, c * p, ts), c, p);
        recv(at(a.recv, c * p, ts), c, p);
      }
      break;
    case Coll::AllToAllV: {
      const PeerCounts& pc = *a.peers;
      for (int p = 0; p < n; ++p) {
        if (pc.sendCounts[p] > 0) send(at(a.send, pc.sendDispls[p], ts), pc.sendCounts[p], p);
        if (pc.recvCounts[p] > 0) recv(at(a.recv, pc.recvDispls[p], ts), pc.recvCounts[p], p);
      }
      break;
    }
    case Coll::Gather:  // everyone sends to the root, the root receives n chunks
      send(a.send, c, a.root);
      if (me == a.root)
        for (int p = 0; p < n; ++p) recv(at(a.recv, c * p, ts), c, p);
      break;
    case Coll::Scatter:  // the root sends n chunks, everyone receives one
      if (me == a.root)
        for (int p = 0; p < n; ++p) send(at(a.send, c * p, ts), c, p);
      recv(a.recv, c, a.root);
      break;
    case Coll::SendRecv:  // ring shift: to rank+1, from rank-1
      send(a.send, c, (me + 1) % n);
      recv(a.recv, c, (me - 1 + n) % n);
      break;
    default:
      first = badSpec(std::string(collName(a.coll)) + " is not a send/recv collective", call);
  }
  const Result r = api.GroupEnd();
  if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, call, l.data);
  return first;
}

Status NcclBackend::issue(const OpArgs& a) {
  CB_TRY(checkLocalIndex(a.local));
  const ncclapi::Api& api = lib_->api;
  const Local& l = locals_[a.local];
  if (l.data == nullptr)
    return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("NcclBackend::issue"));
  const ncclapi::DataType dt = ncclType(a.dtype);
  const int n = groupSize_, me = devices_[a.local].groupRank;
  if ((a.coll == Coll::AllToAllV) &&
      (a.peers == nullptr || a.peers->sendCounts.size() != static_cast<size_t>(n) ||
       a.peers->sendDispls.size() != static_cast<size_t>(n) || a.peers->recvCounts.size() != static_cast<size_t>(n) ||
       a.peers->recvDispls.size() != static_cast<size_t>(n)))
    return badSpec("alltoallv needs " + std::to_string(n) + " send/recv counts and displacements", "ncclSend");

  int op = static_cast<int>(a.op);
  bool premul = false;
  if (isReducing(a.coll) && a.op == RedOp::MulSum) {
    // nccl-tests: a PreMulSum op with a host-immediate scalar, created and destroyed around each call.
    if (api.RedOpCreatePreMulSum == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD", "mulsum needs ncclRedOpCreatePreMulSum (NCCL 2.11 or newer)",
                           CB_SITE("ncclRedOpCreatePreMulSum"));
    uint64_t scalar = mulSumScalarBits(a.dtype, me);
    CB_NCCL(api.RedOpCreatePreMulSum(&op, &scalar, dt, ncclapi::ScalarHostImmediate, l.data),
            "ncclRedOpCreatePreMulSum", l.data);
    premul = true;
  }
  Status s = Status::Ok();
  Result r = ncclapi::Success;
  const char* call = "";
  switch (a.coll) {
    case Coll::AllReduce:
      call = "ncclAllReduce";
      r = api.AllReduce(a.send, a.recv, a.count, dt, op, l.data, l.stream);
      break;
    case Coll::AllGather:
      call = "ncclAllGather";
      r = api.AllGather(a.send, a.recv, a.count, dt, l.data, l.stream);
      break;
    case Coll::ReduceScatter:
      call = "ncclReduceScatter";
      r = api.ReduceScatter(a.send, a.recv, a.count, dt, op, l.data, l.stream);
      break;
    case Coll::Broadcast:
      call = "ncclBroadcast";
      r = api.Broadcast(a.send, a.recv, a.count, dt, a.root, l.data, l.stream);
      break;
    case Coll::Reduce:
      call = "ncclReduce";
      r = api.Reduce(a.send, a.recv, a.count, dt, op, a.root, l.data, l.stream);
      break;
    case Coll::AllToAll:
      call = "ncclAlltoAll";
      if (api.AlltoAll != nullptr)
        r = api.AlltoAll(a.send, a.recv, a.count, dt, l.data, l.stream);
      else
        s = sendRecvGroup(a, "ncclGroupEnd (alltoall)");
      break;
    case Coll::AllToAllV:
      s = sendRecvGroup(a, "ncclGroupEnd (alltoallv)");
      break;
    case Coll::Gather:
      call = "ncclGather";
      if (api.Gather != nullptr)
        r = api.Gather(a.send, a.recv, a.count, dt, a.root, l.data, l.stream);
      else
        s = sendRecvGroup(a, "ncclGroupEnd (gather)");
      break;
    case Coll::Scatter:
      call = "ncclScatter";
      if (api.Scatter != nullptr)
        r = api.Scatter(a.send, a.recv, a.count, dt, a.root, l.data, l.stream);
      else
        s = sendRecvGroup(a, "ncclGroupEnd (scatter)");
      break;
    case Coll::SendRecv:
      s = sendRecvGroup(a, "ncclGroupEnd (sendrecv)");
      break;
    case Coll::HyperCube:
      s = issueHyperCube(&a, 1);
      break;
    default:
      s = badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), "NcclBackend::issue");
  }
  if (r != ncclapi::Success && r != ncclapi::InProgress && s.ok) s = ncclStatus(r, call, l.data);
  if (premul) {
    const Result d = api.RedOpDestroy(op, l.data);
    if (d != ncclapi::Success && s.ok) s = ncclStatus(d, "ncclRedOpDestroy", l.data);
  }
  return s;
}

// nccl-tests' hypercube: copy the own chunk, then log2(n) exchange rounds. Each round is one group
// over this process's ranks, so a round's sends read what the previous round received.
Status NcclBackend::issueHyperCube(const OpArgs* args, int count) {
  const ncclapi::Api& api = lib_->api;
  const int n = groupSize_;
  if ((n & (n - 1)) != 0)
    return badSpec("hypercube needs a power-of-two rank count, not " + std::to_string(n), "NcclBackend::hyperCube");
  for (int i = 0; i < count; ++i) {
    const OpArgs& a = args[i];
    CB_TRY(checkLocalIndex(a.local));
    const uint64_t ts = dtypeSize(a.dtype);
    char* mine = at(a.recv, a.count * devices_[a.local].groupRank, ts);
    if (a.inPlace) {
      if (a.send != mine) return badSpec("hypercube in-place needs send == recv + rank*count", "NcclBackend::hyperCube");
    } else if (a.count > 0) {
      if (opt_.streamNull) CB_TRY(setDevice(a.local));
      CB_CUDA(cudaMemcpyAsync(mine, a.send, a.count * ts, cudaMemcpyDeviceToDevice, locals_[a.local].stream),
              "cudaMemcpyAsync (hypercube own chunk)");
    }
  }
  for (int mask = 1; mask < n; mask <<= 1) {
    CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
    Status first = Status::Ok();
    for (int i = 0; i < count && first.ok; ++i) {
      const OpArgs& a = args[i];
      const Local& l = locals_[a.local];
      const uint64_t ts = dtypeSize(a.dtype), b = a.count;
      const int me = devices_[a.local].groupRank, peer = me ^ mask;
      const uint64_t sendChunk = static_cast<uint64_t>(me & ~(mask - 1));
      const uint64_t recvChunk = static_cast<uint64_t>(peer & ~(mask - 1));
      Result r = api.Send(at(a.recv, sendChunk * b, ts), b * mask, ncclType(a.dtype), peer, l.data, l.stream);
      if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "ncclSend (hypercube)", l.data);
      r = api.Recv(at(a.recv, recvChunk * b, ts), b * mask, ncclType(a.dtype), peer, l.data, l.stream);
      if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclRecv (hypercube)", l.data);
    }
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclGroupEnd (hypercube)", nullptr);
    CB_TRY(first);
  }
  return Status::Ok();
}

Status NcclBackend::groupStart() {
  CB_NCCL(lib_->api.GroupStart(), "ncclGroupStart", nullptr);
  ++groupDepth_;
  return Status::Ok();
}

Status NcclBackend::groupEnd() {
  const Result r = lib_->api.GroupEnd();
  if (groupDepth_ > 0) --groupDepth_;
  if (r != ncclapi::Success && r != ncclapi::InProgress) return ncclStatus(r, "ncclGroupEnd", nullptr);
  if (groupDepth_ == 0 && pendingBarrier_) {
    pendingBarrier_ = false;
    return barrier();
  }
  return Status::Ok();
}

// nccl-tests' completion wait: poll every stream; between polls check the communicators for
// asynchronous errors and the -T clock; abort the communicators on either.
Status NcclBackend::waitAll() {
  if (capturing_) return Status::Ok();  // a capture records, nothing runs yet
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (;;) {
    bool done = true;
    for (int i = 0; i < localCount_; ++i) {
      if (opt_.streamNull) CB_TRY(setDevice(i));
      const cudaError_t e = cudaStreamQuery(locals_[i].stream);
      if (e == cudaErrorNotReady) {
        done = false;
      } else if (e != cudaSuccess) {
        cudaGetLastError();
        return cudaStatus(e, "cudaStreamQuery");
      }
    }
    if (done) return Status::Ok();
    for (const Local& l : locals_) {
      for (ncclapi::Comm c : {l.data, l.world}) {
        if (c == nullptr) continue;
        Result async = ncclapi::Success;
        const Result r = lib_->api.CommGetAsyncError(c, &async);
        if (r != ncclapi::Success) return ncclStatus(r, "ncclCommGetAsyncError", c);
        if (async != ncclapi::Success && async != ncclapi::InProgress) {
          const Status s = ncclStatus(async, "asynchronous NCCL operation", c);
          return abortAll(s.message, s.code);
        }
      }
    }
    if (abortRequested_.load())
      return abortAll("Test timeout: aborted by the watchdog while waiting for completion", "TIMEOUT");
    if (opt_.timeoutSec > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() > static_cast<double>(opt_.timeoutSec))
      return abortAll("Test timeout (" + std::to_string(opt_.timeoutSec) + "s) waiting for completion", "TIMEOUT");
    std::this_thread::yield();
  }
}

// -------------------------------------------------------------------------------------------------
// Control plane

Status NcclBackend::ensureCtrl(uint64_t bytes) {
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.ctrlBytes >= bytes) continue;
    CB_TRY(setDevice(i));
    if (l.ctrlDev != nullptr) cudaFree(l.ctrlDev);
    if (l.ctrlHost != nullptr) cudaFreeHost(l.ctrlHost);
    l.ctrlDev = l.ctrlHost = nullptr;
    l.ctrlBytes = 0;
    const uint64_t size = std::max<uint64_t>(bytes, 64 * 1024);
    CB_CUDA(cudaMalloc(&l.ctrlDev, size), "cudaMalloc (control plane)");
    CB_CUDA(cudaMallocHost(&l.ctrlHost, size), "cudaMallocHost (control plane)");
    l.ctrlBytes = size;
  }
  return Status::Ok();
}

// Allreduce of per-process values over the world communicators: local rank 0 brings the process's
// values, the others the op's identity.
Status NcclBackend::ctrlAllreduce(double* values, int n, Combine how) {
  if (n <= 0) return Status::Ok();
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(double);
  CB_TRY(ensureCtrl(bytes));
  int op = ncclapi::OpSum;
  double identity = 0;
  if (how == Combine::Min) op = ncclapi::OpMin, identity = std::numeric_limits<double>::infinity();
  if (how == Combine::Max) op = ncclapi::OpMax, identity = -std::numeric_limits<double>::infinity();
  const ncclapi::Api& api = lib_->api;
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.world == nullptr) return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("control plane"));
    double* h = static_cast<double*>(l.ctrlHost);
    for (int k = 0; k < n; ++k) h[k] = i == 0 ? values[k] : identity;
    CB_TRY(setDevice(i));
    CB_CUDA(cudaMemcpyAsync(l.ctrlDev, l.ctrlHost, bytes, cudaMemcpyHostToDevice, l.stream), "cudaMemcpyAsync");
  }
  if (localCount_ > 1) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < localCount_ && first.ok; ++i) {
    Local& l = locals_[i];
    const Result r = how == Combine::Rank0
                         ? api.Broadcast(l.ctrlDev, l.ctrlDev, n, ncclapi::Float64, 0, l.world, l.stream)
                         : api.AllReduce(l.ctrlDev, l.ctrlDev, n, ncclapi::Float64, op, l.world, l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "control plane allreduce", l.world);
  }
  if (localCount_ > 1) {
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclGroupEnd (control plane)", nullptr);
  }
  CB_TRY(first);
  CB_TRY(setDevice(0));
  CB_CUDA(cudaMemcpyAsync(locals_[0].ctrlHost, locals_[0].ctrlDev, bytes, cudaMemcpyDeviceToHost, locals_[0].stream),
          "cudaMemcpyAsync");
  CB_TRY(waitAll());
  const double* h = static_cast<const double*>(locals_[0].ctrlHost);
  for (int k = 0; k < n; ++k) values[k] = how == Combine::Mean ? h[k] / opt_.nprocs : h[k];
  return Status::Ok();
}

// Allgather of `bytes` per rank over the world communicators; *all gets every rank's bytes in world
// rank order (local rank 0 brings `mine`, the others zeros).
Status NcclBackend::ctrlAllgather(const void* mine, uint64_t bytes, std::vector<char>* all) {
  const uint64_t total = bytes * static_cast<uint64_t>(nranks());
  CB_TRY(ensureCtrl(bytes + total));
  const ncclapi::Api& api = lib_->api;
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.world == nullptr) return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("control plane"));
    if (i == 0 && bytes > 0) std::memcpy(l.ctrlHost, mine, bytes);
    if (i != 0) std::memset(l.ctrlHost, 0, bytes);
    CB_TRY(setDevice(i));
    CB_CUDA(cudaMemcpyAsync(l.ctrlDev, l.ctrlHost, bytes, cudaMemcpyHostToDevice, l.stream), "cudaMemcpyAsync");
  }
  if (localCount_ > 1) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < localCount_ && first.ok; ++i) {
    Local& l = locals_[i];
    const Result r = api.AllGather(l.ctrlDev, static_cast<char*>(l.ctrlDev) + bytes, bytes, ncclapi::Uint8, l.world,
                                   l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "control plane allgather", l.world);
  }
  if (localCount_ > 1) {
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclGroupEnd (control plane)", nullptr);
  }
  CB_TRY(first);
  CB_TRY(setDevice(0));
  Local& l0 = locals_[0];
  CB_CUDA(cudaMemcpyAsync(l0.ctrlHost, static_cast<char*>(l0.ctrlDev) + bytes, total, cudaMemcpyDeviceToHost, l0.stream),
          "cudaMemcpyAsync");
  CB_TRY(waitAll());
  all->assign(static_cast<const char*>(l0.ctrlHost), static_cast<const char*>(l0.ctrlHost) + total);
  return Status::Ok();
}

Status NcclBackend::barrier() {
  if (opt_.control != nullptr) return opt_.control->barrier();
  // One host thread drives every local rank, so they are in step already.
  if (opt_.nprocs == 1 || capturing_) return Status::Ok();
  if (groupDepth_ > 0) {
    // An NCCL op now would join the open group and never complete before its end: defer.
    pendingBarrier_ = true;
    return Status::Ok();
  }
  double v = 0;
  return ctrlAllreduce(&v, 1, Combine::Sum);
}

Status NcclBackend::allreduce(double* values, int n, Combine how) {
  if (n > 0 && values == nullptr) return badSpec("allreduce of a null array", "NcclBackend::allreduce");
  if (opt_.control != nullptr) return opt_.control->allreduce(values, n, how);
  if (opt_.nprocs == 1) return Status::Ok();  // one process: its values are the job's
  return ctrlAllreduce(values, n, how);
}

Status NcclBackend::gather(const double* mine, int n, std::vector<double>* atRoot) {
  if (atRoot == nullptr || n < 0 || (n > 0 && mine == nullptr))
    return badSpec("gather needs a value array and an output vector", "NcclBackend::gather");
  if (opt_.control != nullptr) return opt_.control->gather(mine, n, atRoot);
  atRoot->clear();
  if (opt_.nprocs == 1) {
    atRoot->assign(mine, mine + n);
    return Status::Ok();
  }
  std::vector<char> all;
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(double);
  CB_TRY(ctrlAllgather(mine, bytes, &all));
  if (rank() != 0) return Status::Ok();
  atRoot->resize(static_cast<size_t>(n) * opt_.nprocs);
  for (int p = 0; p < opt_.nprocs; ++p)  // local rank 0 of each process
    std::memcpy(atRoot->data() + static_cast<size_t>(p) * n, all.data() + static_cast<uint64_t>(p) * localCount_ * bytes,
                bytes);
  return Status::Ok();
}

Status NcclBackend::gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) {
  if (atRoot == nullptr) return badSpec("gatherStrings needs an output vector", "NcclBackend::gatherStrings");
  if (opt_.control != nullptr) return opt_.control->gatherStrings(mine, atRoot);
  atRoot->clear();
  if (opt_.nprocs == 1) {
    atRoot->push_back(mine);
    return Status::Ok();
  }
  const double len = static_cast<double>(mine.size());
  std::vector<char> lens;
  CB_TRY(ctrlAllgather(&len, sizeof len, &lens));
  uint64_t maxLen = 1;
  std::vector<uint64_t> lengths(opt_.nprocs);
  for (int p = 0; p < opt_.nprocs; ++p) {
    double v = 0;
    std::memcpy(&v, lens.data() + static_cast<uint64_t>(p) * localCount_ * sizeof(double), sizeof v);
    lengths[p] = static_cast<uint64_t>(v);
    maxLen = std::max(maxLen, lengths[p]);
  }
  std::string padded = mine;
  padded.resize(maxLen, '\0');
  std::vector<char> all;
  CB_TRY(ctrlAllgather(padded.data(), maxLen, &all));
  if (rank() != 0) return Status::Ok();
  for (int p = 0; p < opt_.nprocs; ++p)
    atRoot->emplace_back(all.data() + static_cast<uint64_t>(p) * localCount_ * maxLen, lengths[p]);
  return Status::Ok();
}

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
    if (s.kind == SegKind::ReduceInput && (s.rank < 0 || s.rank >= groupSize_))
      return badSpec("fill segment of rank " + std::to_string(s.rank) + " outside 0.." + std::to_string(groupSize_ - 1),
                     "NcclBackend::fill");
    const devdata::SegmentArgs a = devdata::segmentArgs(dtype, op, groupSize_, seed, s);
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
  CB_CUDA(cudaMalloc(reinterpret_cast<void**>(&l.checkDev), sizeof(unsigned long long) * 2 * n), "cudaMalloc (check results)");
  CB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&l.checkHost), sizeof(unsigned long long) * 2 * n), "cudaMallocHost (check results)");
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
    const devdata::SegmentArgs a = devdata::segmentArgs(dtype, op, groupSize_, seed, s);
    CB_CUDA(ncclkernels::launchCheck(dtype, b.ptr, a, l.checkDev + 2 * k, l.stream), "check kernel launch");
  }
  CB_CUDA(cudaMemcpyAsync(l.checkHost, l.checkDev, sizeof(unsigned long long) * 2 * nseg, cudaMemcpyDeviceToHost,
                          l.stream),
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
    case SegKind::ReduceInput: want = pattern::reduceInputBits(dtype, op, groupSize_, pseed, index, s.rank); break;
    case SegKind::ReduceOutput: want = pattern::reduceOutputBits(dtype, op, groupSize_, pseed, index); break;
    case SegKind::Copy: want = pattern::copyBits(dtype, pseed, index); break;
    default: break;
  }
  out->haveFirst = true;
  out->firstIndex = firstOffset;
  out->expected = formatElement(dtype, want);
  out->got = formatElement(dtype, got);
  return Status::Ok();
}

// -------------------------------------------------------------------------------------------------
// Events (-I) and graphs (-G)

Status NcclBackend::timerMarks(int count) {
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (static_cast<int>(l.marks.size()) >= count) continue;
    CB_TRY(setDevice(i));
    while (static_cast<int>(l.marks.size()) < count) {
      cudaEvent_t e = nullptr;
      CB_CUDA(cudaEventCreate(&e), "cudaEventCreate");
      l.marks.push_back(e);
    }
  }
  return Status::Ok();
}

Status NcclBackend::timerMark(int k) {
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (k < 0 || k >= static_cast<int>(l.marks.size())) return badSpec("timer mark out of range", "NcclBackend::timerMark");
    if (opt_.streamNull) CB_TRY(setDevice(i));
    CB_CUDA(cudaEventRecord(l.marks[k], l.stream), "cudaEventRecord");
  }
  return Status::Ok();
}

Status NcclBackend::timerElapsed(int from, int to, double* seconds) {
  *seconds = 0;
  for (const Local& l : locals_) {  // nccl-tests: the max over the thread's GPUs
    if (from < 0 || to < 0 || from >= static_cast<int>(l.marks.size()) || to >= static_cast<int>(l.marks.size()))
      return badSpec("timer mark out of range", "NcclBackend::timerElapsed");
    float ms = 0;
    CB_CUDA(cudaEventElapsedTime(&ms, l.marks[from], l.marks[to]), "cudaEventElapsedTime");
    *seconds = std::max(*seconds, static_cast<double>(ms) / 1e3);
  }
  return Status::Ok();
}

Status NcclBackend::captureBegin() {
  if (opt_.streamNull)
    return badSpec("graph capture needs created streams; -y 1 uses the legacy default stream", "cudaStreamBeginCapture");
  destroyGraphs();
  for (int i = 0; i < localCount_; ++i) {
    // Thread-local mode (nccl-tests): NCCL may allocate while a capture is open.
    const cudaError_t e = cudaStreamBeginCapture(locals_[i].stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      for (int j = 0; j < i; ++j) {
        cudaGraph_t g = nullptr;
        if (cudaStreamEndCapture(locals_[j].stream, &g) == cudaSuccess && g != nullptr) cudaGraphDestroy(g);
      }
      cudaGetLastError();
      return cudaStatus(e, "cudaStreamBeginCapture");
    }
  }
  capturing_ = true;
  return Status::Ok();
}

Status NcclBackend::captureEnd() {
  Status first = Status::Ok();
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    const cudaError_t e = cudaStreamEndCapture(l.stream, &l.graph);
    if (e != cudaSuccess && first.ok) first = cudaStatus(e, "cudaStreamEndCapture");
  }
  capturing_ = false;
  CB_TRY(first);
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    CB_TRY(setDevice(i));
    CB_CUDA(cudaGraphInstantiate(&l.graphExec, l.graph, 0), "cudaGraphInstantiate");
  }
  return Status::Ok();
}

Status NcclBackend::graphLaunch(int times) {
  for (int t = 0; t < times; ++t)
    for (Local& l : locals_) {
      if (l.graphExec == nullptr) return badSpec("no graph was captured", "cudaGraphLaunch");
      CB_CUDA(cudaGraphLaunch(l.graphExec, l.stream), "cudaGraphLaunch");
    }
  return Status::Ok();
}

}  // namespace collbench
