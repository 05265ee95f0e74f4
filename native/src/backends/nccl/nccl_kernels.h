// Host entry points of the CUDA fill and check kernels (nccl_kernels.cu): pattern segments written
// and verified on the device, wrong elements counted there and the first bad offset recorded with an
// atomic minimum, so only two numbers per segment cross PCIe (nccl-tests' verifiable kernels, but with
// regenerated instead of stored expected values: two buffers, not three).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/nccl/device_data.h"

namespace collbench::ncclkernels {

// Writes segment `a` into `base` (the buffer it names) on `stream`.
cudaError_t launchFill(DType dtype, void* base, const devdata::SegmentArgs& a, cudaStream_t stream);

// Compares segment `a` of `base`; adds its wrong count to result[0] and lowers result[1] (initialise
// it to UINT64_MAX) to the buffer offset of its first wrong element. `result` is device memory.
cudaError_t launchCheck(DType dtype, const void* base, const devdata::SegmentArgs& a, unsigned long long* result,
                        cudaStream_t stream);

// Sets result[0] = 0, result[1] = UINT64_MAX for `n` result pairs.
cudaError_t launchResetResults(unsigned long long* result, int n, cudaStream_t stream);

// A one-thread kernel that keeps `stream` busy for `micros` µs of the device's timer (COLLBENCH_TEST_GPU_DELAY).
cudaError_t launchSpin(double micros, cudaStream_t stream);

}  // namespace collbench::ncclkernels
