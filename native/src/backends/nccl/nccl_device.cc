// NcclBackend's -D path (nccl_backend.h): what refuses device-API kernels before anything runs (the loaded
// NCCL, the LSA team, multicast support), one ncclDevCommCreate per local rank at init, and each op as a launch of
// collbench's own kernel (nccl_device_kernels.cu) on the symmetric windows of -R 2 instead of an NCCL host call.
#include <cuda.h>

#include <string>
#include <vector>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_internal.h"
#include "core/backend_errors.h"

namespace collbench {

namespace nccldevice {

const char* implName(int impl) {
  switch (impl) {
    case 1:
      return "LSA";
    case 2:
      return "LSA vectorized";
    case 3:
      return "multimem";
    case 4:
      return "multimem vectorized";
    default:
      return "unknown";
  }
}

namespace {

std::vector<const Variant*>& registry() {
  static std::vector<const Variant*> variants;
  return variants;
}

std::string versionText(int v) {
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace

bool registerVariant(const Variant* v) {
  registry().push_back(v);
  return true;
}

std::vector<int> builtVersions() {
  std::vector<int> out;
  for (const Variant* v : registry()) out.push_back(v->version);
  return out;
}

const Variant* variantFor(const NcclLibrary& lib, std::string* why) {
  const ncclapi::Api& a = lib.api;
  const std::string loaded = "loaded NCCL " + lib.versionString();
  if (a.DevCommCreate == nullptr || a.DevCommDestroy == nullptr || a.TeamLsa == nullptr) {
    *why = "the NCCL device API (ncclDevCommCreate, ncclTeamLsa) needs NCCL 2.28 or newer; " + loaded;
    return nullptr;
  }
  const Variant* best = nullptr;
  for (const Variant* v : registry())
    if (compatible(v->version, lib.version) && (best == nullptr || v->version > best->version)) best = v;
  if (best != nullptr) return best;
  if (registry().empty()) {
    *why =
        "this collbench was built without NCCL's device-API headers (nccl_device.h); rebuild it with "
        "COLLBENCH_NCCL_INCLUDE naming the include directory of the NCCL you load";
    return nullptr;
  }
  std::string built;
  for (const Variant* v : registry()) built += (built.empty() ? "" : ", ") + versionText(v->version);
  *why = "the device-API kernels were built against NCCL " + built + " headers; the 2.28 device API runs only on " +
         "2.28.x and a 2.29+ one on that release or newer, and this is " + loaded +
         ": rebuild with COLLBENCH_NCCL_INCLUDE adding its include directory";
  return nullptr;
}

bool multicastSupported(int ordinal, std::string* why) {
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  using GetDevice = CUresult (*)(CUdevice*, int);
  void* attrFn = nullptr;
  void* devFn = nullptr;
  cudaDriverEntryPointQueryResult q1{}, q2{};
  if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &attrFn, 12000, cudaEnableDefault, &q1) != cudaSuccess ||
      cudaGetDriverEntryPointByVersion("cuDeviceGet", &devFn, 12000, cudaEnableDefault, &q2) != cudaSuccess ||
      attrFn == nullptr || devFn == nullptr) {
    cudaGetLastError();
    *why = "the CUDA driver offers no cuDeviceGetAttribute";
    return false;
  }
  CUdevice dev = 0;
  int value = 0;
  if (reinterpret_cast<GetDevice>(devFn)(&dev, ordinal) != CUDA_SUCCESS ||
      reinterpret_cast<GetAttribute>(attrFn)(&value, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev) != CUDA_SUCCESS) {
    *why = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) failed";
    return false;
  }
  return value != 0;
}

}  // namespace nccldevice

namespace {

constexpr const char* kUnsupported = "NCCL_DEVICE_API_UNSUPPORTED";

std::string implText(int impl) {
  return "-D " + std::to_string(impl) + " (" + nccldevice::implName(impl) + ")";
}

}  // namespace

Status NcclBackend::checkDevApi() {
  const int impl = opt_.deviceImpl;
  if (impl <= 0) return Status::Ok();
  if (impl > nccldevice::kMaxImpl)
    return badSpec("-D " + std::to_string(impl) + ": collbench has device-API kernels 1..4", "createDevComms");
  if (opt_.localRegister != 2)
    return badSpec(implText(impl) + " needs symmetric buffer registration (-R 2)", "createDevComms");
  std::string refusal;
  devApi_ = nccldevice::variantFor(*lib_, &refusal);
  if (devApi_ == nullptr)
    return Status::Error("nccl", kUnsupported, implText(impl) + ": " + refusal, CB_SITE("ncclDevCommCreate"));
  const ncclapi::Api& api = lib_->api;
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    int n = 0;
    CB_NCCL(api.CommCount(l.data, &n), "ncclCommCount", l.data);
    const ncclapi::Team lsa = api.TeamLsa(l.data);
    if (lsa.nRanks != n)
      return Status::Error("nccl", kUnsupported,
                           implText(impl) + ": the kernels load and store on every rank's buffers, which needs all " +
                               std::to_string(n) + " ranks load/store-accessible (CUDA P2P); NCCL's LSA team of rank " +
                               std::to_string(devices_[i].worldRank) + " has " + std::to_string(lsa.nRanks),
                           CB_SITE("ncclTeamLsa"));
    if (nccldevice::usesMultimem(impl)) {
      std::string why;
      if (!nccldevice::multicastSupported(l.device, &why))
        return Status::Error("nccl", kUnsupported,
                             implText(impl) + ": CUDA device " + std::to_string(l.device) + " (" + devices_[i].name +
                                 ") " +
                                 (why.empty() ? "does not support multicast (NVLink SHARP)"
                                              : "cannot say whether it supports multicast: " + why),
                             CB_SITE("cuDeviceGetAttribute"));
      ncclapi::Result r = ncclapi::Success;
      if (devApi_->multimemSupport(api, l.data, &r) == 0)
        return Status::Error("nccl", kUnsupported,
                             implText(impl) +
                                 ": NCCL says multimem is not supported on this communicator "
                                 "(ncclCommQueryProperties; NVLink SHARP needs an NVSwitch system, and NCCL "
                                 "sets it up only across several GPUs)",
                             CB_SITE("ncclCommQueryProperties"));
      if (r != ncclapi::Success) return ncclStatus(r, "ncclCommQueryProperties", l.data);
    }
  }
  return Status::Ok();
}

// After the windows are registered, as nccl-tests orders it (the multimem mapping of a window and the device
// communicator's multicast object meet there).
Status NcclBackend::createDevComms() {
  const int impl = opt_.deviceImpl;
  if (impl <= 0 || devApi_ == nullptr || locals_.empty() || locals_[0].devComm != nullptr) return Status::Ok();
  const ncclapi::Api& api = lib_->api;
  // Collective over the communicator, like window registration: every local rank inside one group.
  if (localCount_ > 1) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    const ncclapi::Result r = devApi_->create(api, l.data, impl, opt_.deviceCtaCount, &l.devComm);
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
      first = ncclStatus(r, "ncclDevCommCreate", l.data);
  }
  if (localCount_ > 1) {
    const ncclapi::Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
      first = ncclStatus(r, "ncclGroupEnd (ncclDevCommCreate)", nullptr);
  }
  if (first.ok) return first;
  // NCCL's own refusal of what -D asks (multimem without NVLS on this communicator, too many barriers), named so.
  const bool refused = first.code() == "NCCL_INVALID_USAGE" || first.code() == "NCCL_INVALID_ARGUMENT";
  return Status::Error("nccl", first.code(),
                       implText(impl) + (refused ? ": NCCL refused the device communicator: " : ": ") + first.message(),
                       first.site());
}

Status NcclBackend::destroyDevComm(Local& l) {
  if (l.devComm == nullptr || devApi_ == nullptr) return Status::Ok();
  // After an abort the communicator is gone: only the host copy is freed (an Api without functions calls nothing).
  static const ncclapi::Api kNoCalls{};
  const bool live = !aborted_ && l.data != nullptr;
  const ncclapi::Result r = devApi_->destroy(live ? lib_->api : kNoCalls, l.data, l.devComm);
  l.devComm = nullptr;
  if (r != ncclapi::Success) return ncclStatus(r, "ncclDevCommDestroy", l.data);
  return Status::Ok();
}

Status NcclBackend::issueDevice(const OpArgs& a) {
  const int impl = opt_.deviceImpl;
  if (a.coll != Coll::AllReduce)
    return badSpec(
        implText(impl) + ": collbench's device-API kernels exist for all_reduce only, not " + collName(a.coll),
        "issueDevice");
  Local& l = locals_[a.local];
  if (devApi_ == nullptr || l.devComm == nullptr)
    return Status::Error("nccl", "NCCL_ABORTED", "no device communicator (aborted or never created)",
                         CB_SITE("issueDevice"));
  // dtype and op are known values here: checkOp (checkOpArgs) ran before issue() came to this.
  if (a.op != RedOp::Sum || !devApi_->supports(impl, a.dtype))
    return badSpec(implText(impl) + ": no kernel for " + kDTypeNames[static_cast<int>(a.dtype)].name + " " +
                       kRedOpNames[static_cast<int>(a.op)].name,
                   "issueDevice");
  // The window and offset of a pointer into one of this rank's registered buffers.
  auto locate = [&l](const void* p, ncclapi::Window* win, size_t* offset) {
    for (const DeviceBuffer* b : {&l.send, &l.recv}) {
      const char* base = static_cast<const char*>(b->ptr);
      const char* q = static_cast<const char*>(p);
      if (b->window != nullptr && q >= base && q <= base + b->bytes) {
        *win = b->window;
        *offset = static_cast<size_t>(q - base);
        return true;
      }
    }
    return false;
  };
  ncclapi::Window sendWin = nullptr, recvWin = nullptr;
  size_t sendOffset = 0, recvOffset = 0;
  if (!locate(a.send, &sendWin, &sendOffset) || !locate(a.recv, &recvWin, &recvOffset))
    return badSpec(implText(impl) + ": the op's buffers are not in a registered window", "issueDevice");
  if (localCount_ > 1 || opt_.streamNull) CB_TRY(setDevice(a.local));
  CB_CUDA(devApi_->launchAllReduce(impl, a.dtype, l.devComm, sendWin, sendOffset, recvWin, recvOffset, a.count,
                                   opt_.deviceCtaCount, l.stream),
          std::string("cudaLaunchKernel (") + implText(impl) + " all_reduce)");
  return Status::Ok();
}

}  // namespace collbench
