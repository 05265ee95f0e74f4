// CUDA fill and check kernels: one grid-stride kernel per dtype over device_data.h's CB_HD loops
// (which pattern.h feeds), so the GPU writes and verifies exactly what the CPU backends do.
// Mirrors nccl-tests' verifiable InitData/Verify kernels in role, not in code.
#include "backends/nccl/nccl_kernels.h"

#include <algorithm>

namespace collbench::ncclkernels {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kMaxBlocks = 4096;  // grid-stride beyond: enough to fill any GPU

unsigned blocksFor(uint64_t count) {
  const uint64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(b, kMaxBlocks)));
}

template <DType DT>
__global__ void fillKernel(void* base, devdata::SegmentArgs a) {
  const uint64_t begin = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  devdata::fillRange<DT>(base, a, begin, uint64_t(gridDim.x) * blockDim.x);
}

template <DType DT>
__global__ void checkKernel(const void* base, devdata::SegmentArgs a, unsigned long long* result) {
  const uint64_t begin = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t wrong = 0, first = ~uint64_t(0);
  devdata::checkRange<DT>(base, a, begin, uint64_t(gridDim.x) * blockDim.x, &wrong, &first);
  // Wrong elements are rare: one atomic pair per thread that saw any.
  if (wrong > 0) {
    atomicAdd(&result[0], static_cast<unsigned long long>(wrong));
    atomicMin(&result[1], static_cast<unsigned long long>(first));
  }
}

__global__ void resetKernel(unsigned long long* result, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    result[2 * i] = 0;
    result[2 * i + 1] = ~0ull;
  }
}

// One thread busy on the device's nanosecond timer until `nanos` have passed (the device-delay test hook).
__global__ void spinKernel(unsigned long long nanos) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanos);
}

#define CB_KERNEL_DISPATCH(dtype, LAUNCH) \
  switch (dtype) {                        \
    case DType::Int8:                     \
      LAUNCH(DType::Int8);                \
      break;                              \
    case DType::Uint8:                    \
      LAUNCH(DType::Uint8);               \
      break;                              \
    case DType::Int32:                    \
      LAUNCH(DType::Int32);               \
      break;                              \
    case DType::Uint32:                   \
      LAUNCH(DType::Uint32);              \
      break;                              \
    case DType::Int64:                    \
      LAUNCH(DType::Int64);               \
      break;                              \
    case DType::Uint64:                   \
      LAUNCH(DType::Uint64);              \
      break;                              \
    case DType::Float16:                  \
      LAUNCH(DType::Float16);             \
      break;                              \
    case DType::Float32:                  \
      LAUNCH(DType::Float32);             \
      break;                              \
    case DType::Float64:                  \
      LAUNCH(DType::Float64);             \
      break;                              \
    case DType::Bfloat16:                 \
      LAUNCH(DType::Bfloat16);            \
      break;                              \
    case DType::F8e4m3:                   \
      LAUNCH(DType::F8e4m3);              \
      break;                              \
    case DType::F8e5m2:                   \
      LAUNCH(DType::F8e5m2);              \
      break;                              \
    default:                              \
      return cudaErrorInvalidValue;       \
  }

}  // namespace

cudaError_t launchFill(DType dtype, void* base, const devdata::SegmentArgs& a, cudaStream_t stream) {
  if (a.count == 0) return cudaSuccess;
#define CB_LAUNCH_FILL(DT) fillKernel<DT><<<blocksFor(a.count), kThreads, 0, stream>>>(base, a)
  CB_KERNEL_DISPATCH(dtype, CB_LAUNCH_FILL)
#undef CB_LAUNCH_FILL
  return cudaGetLastError();
}

cudaError_t launchCheck(DType dtype, const void* base, const devdata::SegmentArgs& a, unsigned long long* result,
                        cudaStream_t stream) {
  if (a.count == 0) return cudaSuccess;
#define CB_LAUNCH_CHECK(DT) checkKernel<DT><<<blocksFor(a.count), kThreads, 0, stream>>>(base, a, result)
  CB_KERNEL_DISPATCH(dtype, CB_LAUNCH_CHECK)
#undef CB_LAUNCH_CHECK
  return cudaGetLastError();
}

cudaError_t launchResetResults(unsigned long long* result, int n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  resetKernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(result, n);
  return cudaGetLastError();
}

cudaError_t launchSpin(double micros, cudaStream_t stream) {
  spinKernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(micros * 1e3));
  return cudaGetLastError();
}

}  // namespace collbench::ncclkernels
