// NcclBackend's device arrivals (core/device_arrivals.h): a reference CUDA event per local stream, recorded on the
// idle stream and waited for, and the -I marks read against it; and the test hook's device-side delay (a one-thread
// spin kernel, nccl_kernels.cu). CUDA events, not a %globaltimer kernel per iteration: the -I marks are there already.
#include <string>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_internal.h"
#include "backends/nccl/nccl_kernels.h"
#include "core/backend_errors.h"

namespace collbench {

Status NcclBackend::arrivalReference(int local) {
  CB_TRY(checkLocalIndex(local));
  Local& l = locals_[local];
  CB_TRY(setDevice(local));
  if (l.reference == nullptr) CB_CUDA(cudaEventCreate(&l.reference), "cudaEventCreate");
  CB_CUDA(cudaEventRecord(l.reference, l.stream), "cudaEventRecord");
  CB_CUDA(cudaEventSynchronize(l.reference), "cudaEventSynchronize");
  return Status::Ok();
}

Status NcclBackend::markSinceReference(int local, int k, double* seconds) {
  *seconds = 0;
  CB_TRY(checkLocalIndex(local));
  const Local& l = locals_[local];
  if (l.reference == nullptr || k < 0 || k >= static_cast<int>(l.marks.size()))
    return badSpec("device arrival mark " + std::to_string(k) + " has no reference or no mark", "markSinceReference");
  float ms = 0;
  CB_CUDA(cudaEventElapsedTime(&ms, l.reference, l.marks[k]), "cudaEventElapsedTime");
  *seconds = static_cast<double>(ms) / 1e3;
  return Status::Ok();
}

Status NcclBackend::delayStream(int local, double micros) {
  CB_TRY(checkLocalIndex(local));
  CB_TRY(setDevice(local));
  CB_CUDA(ncclkernels::launchSpin(micros, locals_[local].stream), "launchSpin (COLLBENCH_TEST_GPU_DELAY)");
  return Status::Ok();
}

}  // namespace collbench
