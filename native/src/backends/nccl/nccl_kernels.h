// Host entry points of the CUDA fill and check kernels (nccl_kernels.cu): wrong elements counted on the device and
// the first bad offset kept with an atomic minimum, so two numbers per segment cross PCIe; expected values are
// regenerated, not stored (two buffers, not three as nccl-tests' verifiable kernels).
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
