// NcclBackend's core: errors and devices, life cycle (load NCCL, pick devices, create streams, then nccl_comms.cc's
// communicators; finalize), CUDA events (-I) and graphs (-G); the rest in nccl_comms, nccl_collectives, nccl_memory
// and nccl_data. Every NCCL result and CUDA error becomes a Status naming the call and the error.
#include "backends/nccl/nccl_backend.h"

#include <algorithm>
#include <string>

#include "backends/nccl/nccl_internal.h"
#include "core/backend_errors.h"

namespace collbench {

using ncclapi::Result;
using nccldetail::freeMemory;

namespace {

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

}  // namespace

// -------------------------------------------------------------------------------------------------
// Errors and devices

Status cudaStatus(cudaError_t err, const std::string& call, const std::string& site) {
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  return Status::Error("cuda", cudaCode(err),
                       call + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")",
                       site.empty() ? CB_SITE(call) : site);
}

CudaDevices queryCudaDevices() {
  CudaDevices d;
  int count = 0;  // left unwritten when the call fails (e.g. cudaErrorInsufficientDriver on a node without a driver)
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
    return badSpec(
        "local rank " + std::to_string(local) + " does not exist (" + std::to_string(localCount_) + " local ranks)",
        "NcclBackend");
  return Status::Ok();
}

// -------------------------------------------------------------------------------------------------
// Life cycle

Status NcclBackend::create(const NcclOptions& options, std::unique_ptr<NcclBackend>* out) {
  if (out == nullptr) return badSpec("NcclBackend::create needs an output pointer", "NcclBackend::create");
  const NcclOptions& o = options;
  if (o.nThreads < 1 || o.nGpus < 1 || o.nprocs < 1 || o.procRank < 0 || o.procRank >= o.nprocs || o.firstDevice < 0)
    return badSpec("invalid process layout: rank " + std::to_string(o.procRank) + " of " + std::to_string(o.nprocs) +
                       ", -t " + std::to_string(o.nThreads) + " -g " + std::to_string(o.nGpus) + ", first device " +
                       std::to_string(o.firstDevice),
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
    msg += "; " + n.message();
    code = n.code();
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
  if (!opt_.shareDevices && needed > cuda.count)
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
    l.device = d.ordinal = (opt_.firstDevice + i) % cuda.count;  // the identity unless shareDevices
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
  CB_TRY(checkDevApi());
  for (int i = 0; i < localCount_; ++i) {
    CB_TRY(setDevice(i));
    locals_[i].freeAfterInit = freeMemory();
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
    keep(destroyDevComm(l));  // -D: before its windows go
    if (l.reference != nullptr) cudaEventDestroy(l.reference);
    l.reference = nullptr;
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
  keep(destroySubGroups());  // before the world communicator they were split from
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

NcclBackend::~NcclBackend() {
  (void)finalize();
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
    if (k < 0 || k >= static_cast<int>(l.marks.size()))
      return badSpec("timer mark out of range", "NcclBackend::timerMark");
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
    return badSpec("graph capture needs created streams; -y 1 uses the legacy default stream",
                   "cudaStreamBeginCapture");
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
