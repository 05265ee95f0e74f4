// Private to the NCCL backend's .cc files (nccl_backend.cc, nccl_comms.cc, nccl_collectives.cc,
// nccl_memory.cc, nccl_data.cc): the macros that turn a failed NCCL or CUDA call into a Status naming
// it, and the free-memory probe that -M's accounting shares. Not part of the backend's interface.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/nccl/nccl_backend.h"

namespace collbench::nccldetail {

// Propagate a failed NCCL call / CUDA call as a Status naming it (InProgress: a non-blocking
// communicator still working, which the waits poll for).
#define CB_NCCL(expr, name, comm)                                                            \
  do {                                                                                       \
    const ::collbench::ncclapi::Result cb_r_ = (expr);                                       \
    if (cb_r_ != ::collbench::ncclapi::Success && cb_r_ != ::collbench::ncclapi::InProgress) \
      return ncclStatus(cb_r_, name, comm, CB_SITE(name));                                   \
  } while (0)
#define CB_CUDA(expr, name)                                                  \
  do {                                                                       \
    const cudaError_t cb_e_ = (expr);                                        \
    if (cb_e_ != cudaSuccess) return cudaStatus(cb_e_, name, CB_SITE(name)); \
  } while (0)

inline size_t freeMemory() {
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return freeBytes;
}

}  // namespace collbench::nccldetail
