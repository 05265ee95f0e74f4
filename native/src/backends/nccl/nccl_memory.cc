// NcclBackend's device memory (nccl_backend.h): send/recv buffers (ncclMemAlloc where NCCL has it,
// else cudaMalloc), their registration (-R 1 ncclCommRegister, -R 2 symmetric windows), and -M's
// free-memory accounting around communicator init and allocation.
#include "backends/nccl/nccl_backend.h"

#include <algorithm>
#include <string>

#include "backends/nccl/nccl_internal.h"
#include "core/backend_errors.h"

namespace collbench {

using ncclapi::Result;
using nccldetail::freeMemory;

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
                               std::to_string(l.device) + ": " + ncclStatus(r, "ncclMemAlloc", nullptr).message(),
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
        CB_NCCL(api.CommRegister(l.data, b->ptr, std::max<uint64_t>(b->bytes, 4096), &b->regHandle), "ncclCommRegister",
                l.data);
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
    CB_TRY(destroyDevComm(l));  // -D: a device communicator goes before the windows it was created over
    CB_TRY(freeBuffer(l, l.send));
    CB_TRY(freeBuffer(l, l.recv));
    if (l.freeBeforeAlloc == 0) l.freeBeforeAlloc = freeMemory();
    CB_TRY(allocBuffer(l, l.send, sendBytes));
    CB_TRY(allocBuffer(l, l.recv, recvBytes));
  }
  CB_TRY(registerBuffers());
  CB_TRY(createDevComms());  // -D
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

}  // namespace collbench
