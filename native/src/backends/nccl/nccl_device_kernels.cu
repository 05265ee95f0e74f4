// collbench's own all_reduce kernels on NCCL's device API (-D 1..4, nccl-tests' numbering, written here): each rank
// sums its share of the elements over every LSA peer's symmetric send window and writes it into every peer's recv
// window (1, 2: loads/stores; 3, 4: multimem), between LSA barriers; compiled once per nccl_device.h into a Variant.
#include "backends/nccl/nccl_device_kernels.h"

#include <cuda_fp16.h>
#include <nccl.h>
#include <nccl_device.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

// CMake compiles this file once per NCCL include directory, each time with its own COLLBENCH_DEVAPI_VARIANT
// namespace, so variants for different device-API versions link into one module.
#ifndef COLLBENCH_DEVAPI_VARIANT
#error "compile with -DCOLLBENCH_DEVAPI_VARIANT=<namespace> (native/CMakeLists.txt)"
#endif

namespace collbench::nccldevice::COLLBENCH_DEVAPI_VARIANT {

// Our host declarations (nccl_api.h, dlsym'ed) against these headers: ncclTeam_t, returned by value by ncclTeamLsa.
static_assert(sizeof(ncclapi::Team) == sizeof(ncclTeam_t) &&
                  offsetof(ncclTeam_t, nRanks) == offsetof(ncclapi::Team, nRanks) &&
                  offsetof(ncclTeam_t, rank) == offsetof(ncclapi::Team, rank) &&
                  offsetof(ncclTeam_t, stride) == offsetof(ncclapi::Team, stride),
              "ncclTeam_t layout");
[[maybe_unused]] constexpr ncclTeam_t (*kTeamLsaHost)(ncclComm_t) =
    ncclTeamLsa;  // the host overload exists as declared
static_assert(std::is_same_v<decltype(&ncclDevCommCreate),
                             ncclResult_t (*)(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*)>,
              "ncclDevCommCreate");

namespace {

constexpr int kThreads = 512;  // per CTA (nccl-tests' device kernels use 512 too)
constexpr int kVecBytes = 16;

// Two-operand sum as NCCL computes it: integers wrap, half rounds after every step.
template <typename T>
__device__ __forceinline__ T addElem(T a, T b) {
  if constexpr (sizeof(T) < 4 && !std::is_same_v<T, __half>) {
    return static_cast<T>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;  // __half: __hadd through cuda_fp16.h's operator
  }
}

__device__ __forceinline__ size_t umin(size_t a, size_t b) {
  return a < b ? a : b;
}

// This rank's contiguous share [begin, end) of n units among nRanks.
struct Share {
  size_t begin, end;
};
__device__ __forceinline__ Share shareOf(size_t n, int rank, int nRanks) {
  const size_t per = (n + nRanks - 1) / nRanks;
  const size_t begin = umin(n, per * rank);
  return {begin, umin(n, begin + per)};
}

template <typename T>
__device__ __forceinline__ T* peerPtr(ncclWindow_t w, size_t offset, int peer) {
  return static_cast<T*>(ncclGetLsaPointer(w, offset, peer));
}

// Elements [begin, end) one at a time, strided over the grid: load from every peer, sum, store to every peer.
template <typename T>
__device__ void lsaScalarRange(ncclWindow_t sw, size_t so, ncclWindow_t rw, size_t ro, size_t begin, size_t end,
                               int nPeers) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += stride) {
    T acc = peerPtr<T>(sw, so, 0)[i];
    for (int p = 1; p < nPeers; ++p) acc = addElem(acc, peerPtr<T>(sw, so, p)[i]);
    for (int p = 0; p < nPeers; ++p) peerPtr<T>(rw, ro, p)[i] = acc;
  }
}

// The head elements before the first 16-byte boundary of the send offset (the whole range when the send and
// recv offsets are not equally aligned, so no vector access would be aligned on both).
template <typename T>
__device__ __forceinline__ size_t vectorHead(size_t so, size_t ro, size_t count) {
  if (so % kVecBytes != ro % kVecBytes || so % sizeof(T) != 0) return count;
  return umin(count, ((kVecBytes - so % kVecBytes) % kVecBytes) / sizeof(T));
}

// -D 1: scalar LSA.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    lsaKernel(ncclWindow_t sw, size_t so, ncclWindow_t rw, size_t ro, size_t count, ncclDevComm dc) {
  const ncclTeam lsa = ncclTeamLsa(dc);
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, lsa, dc.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every peer's input is written and visible
  const Share s = shareOf(count, lsa.rank, lsa.nRanks);
  lsaScalarRange<T>(sw, so, rw, ro, s.begin, s.end, lsa.nRanks);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every peer's output is complete and visible
}

// -D 2: 16-byte vectors over the aligned body, scalar head and tail (fewer than 16 bytes each, rank 0).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    lsaVectorKernel(ncclWindow_t sw, size_t so, ncclWindow_t rw, size_t ro, size_t count, ncclDevComm dc) {
  constexpr size_t kLanes = kVecBytes / sizeof(T);
  const ncclTeam lsa = ncclTeamLsa(dc);
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, lsa, dc.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const size_t head = vectorHead<T>(so, ro, count);
  const size_t vectors = (count - head) / kLanes;
  const size_t tail = head + vectors * kLanes;
  if (lsa.rank == 0) {
    lsaScalarRange<T>(sw, so, rw, ro, 0, head, lsa.nRanks);
    lsaScalarRange<T>(sw, so, rw, ro, tail, count, lsa.nRanks);
  }
  const Share s = shareOf(vectors, lsa.rank, lsa.nRanks);
  const size_t vso = so + head * sizeof(T), vro = ro + head * sizeof(T);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t v = s.begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < s.end; v += stride) {
    union Vec {
      uint4 raw;
      T lane[kLanes];
    } acc, in;
    acc.raw = peerPtr<uint4>(sw, vso, 0)[v];
    for (int p = 1; p < lsa.nRanks; ++p) {
      in.raw = peerPtr<uint4>(sw, vso, p)[v];
#pragma unroll
      for (size_t k = 0; k < kLanes; ++k) acc.lane[k] = addElem(acc.lane[k], in.lane[k]);
    }
    for (int p = 0; p < lsa.nRanks; ++p) peerPtr<uint4>(rw, vro, p)[v] = acc.raw;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// Multimem load-reduce and store (sm_90+: NVLink SHARP through the LSA team's multicast object); older targets trap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CB_MULTIMEM(...) asm volatile(__VA_ARGS__)
#else
#define CB_MULTIMEM(...) __trap()
#endif
__device__ __forceinline__ float mmLoadSum(const float* p) {
  float v = 0;
  CB_MULTIMEM("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ double mmLoadSum(const double* p) {
  double v = 0;
  CB_MULTIMEM("multimem.ld_reduce.relaxed.sys.global.add.f64 %0, [%1];" : "=d"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void mmStore(float* p, float v) {
  CB_MULTIMEM("multimem.st.relaxed.sys.global.f32 [%0], %1;" : : "l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void mmStore(double* p, double v) {
  CB_MULTIMEM("multimem.st.relaxed.sys.global.f64 [%0], %1;" : : "l"(p), "d"(v) : "memory");
}
__device__ __forceinline__ float4 mmLoadSum4(const float4* p) {
  float4 v{};
  CB_MULTIMEM("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
              : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
              : "l"(p)
              : "memory");
  return v;
}
__device__ __forceinline__ void mmStore4(float4* p, float4 v) {
  CB_MULTIMEM("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};"
              :
              : "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
              : "memory");
}
#undef CB_MULTIMEM

template <typename T>
__device__ void multimemScalarRange(T* send, T* recv, size_t begin, size_t end) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += stride)
    mmStore(recv + i, mmLoadSum(send + i));
}

// -D 3: one multimem load-reduce and one multimem store per element of this rank's share.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    multimemKernel(ncclWindow_t sw, size_t so, ncclWindow_t rw, size_t ro, size_t count, ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x, true};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const ncclTeam lsa = ncclTeamLsa(dc);
  const Share s = shareOf(count, lsa.rank, lsa.nRanks);
  multimemScalarRange(static_cast<T*>(ncclGetLsaMultimemPointer(sw, so, dc)),
                      static_cast<T*>(ncclGetLsaMultimemPointer(rw, ro, dc)), s.begin, s.end);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// -D 4: 16-byte multimem vectors (v4.f32) over the aligned body; scalar head and tail on rank 0.
__global__ void __launch_bounds__(kThreads)
    multimemVectorKernel(ncclWindow_t sw, size_t so, ncclWindow_t rw, size_t ro, size_t count, ncclDevComm dc) {
  constexpr size_t kLanes = kVecBytes / sizeof(float);
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x, true};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const ncclTeam lsa = ncclTeamLsa(dc);
  auto* send = static_cast<float*>(ncclGetLsaMultimemPointer(sw, so, dc));
  auto* recv = static_cast<float*>(ncclGetLsaMultimemPointer(rw, ro, dc));
  const size_t head = vectorHead<float>(so, ro, count);
  const size_t vectors = (count - head) / kLanes;
  const size_t tail = head + vectors * kLanes;
  if (lsa.rank == 0) {
    multimemScalarRange(send, recv, 0, head);
    multimemScalarRange(send, recv, tail, count);
  }
  const Share s = shareOf(vectors, lsa.rank, lsa.nRanks);
  auto* send4 = reinterpret_cast<float4*>(send + head);
  auto* recv4 = reinterpret_cast<float4*>(recv + head);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t v = s.begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < s.end; v += stride)
    mmStore4(recv4 + v, mmLoadSum4(send4 + v));
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

using Kernel = void (*)(ncclWindow_t, size_t, ncclWindow_t, size_t, size_t, ncclDevComm);

// The kernel of `impl` for `dtype`, or null where there is none.
Kernel kernelFor(int impl, DType dtype) {
#define CB_LSA_TYPES(KERNEL)   \
  switch (dtype) {             \
    case DType::Int8:          \
      return KERNEL<int8_t>;   \
    case DType::Uint8:         \
      return KERNEL<uint8_t>;  \
    case DType::Int32:         \
      return KERNEL<int32_t>;  \
    case DType::Uint32:        \
      return KERNEL<uint32_t>; \
    case DType::Int64:         \
      return KERNEL<int64_t>;  \
    case DType::Uint64:        \
      return KERNEL<uint64_t>; \
    case DType::Float16:       \
      return KERNEL<__half>;   \
    case DType::Float32:       \
      return KERNEL<float>;    \
    case DType::Float64:       \
      return KERNEL<double>;   \
    default:                   \
      return nullptr;          \
  }
  switch (impl) {
    case 1:
      CB_LSA_TYPES(lsaKernel)
    case 2:
      CB_LSA_TYPES(lsaVectorKernel)
    case 3:
      if (dtype == DType::Float32) return multimemKernel<float>;
      if (dtype == DType::Float64) return multimemKernel<double>;
      return nullptr;
    case 4:
      return dtype == DType::Float32 ? multimemVectorKernel : nullptr;
    default:
      return nullptr;
  }
#undef CB_LSA_TYPES
}

// What this variant's DevComm* points to (ncclDevComm in these headers' layout).
struct Holder {
  ncclDevComm dc;
};
Holder* holder(DevComm* d) {
  return reinterpret_cast<Holder*>(d);
}
const Holder* holder(const DevComm* d) {
  return reinterpret_cast<const Holder*>(d);
}

bool supports(int impl, DType dtype) {
  return kernelFor(impl, dtype) != nullptr;
}

ncclapi::Result create(const ncclapi::Api& api, ncclapi::Comm comm, int impl, int ctas, DevComm** out) {
  *out = nullptr;
  if (api.DevCommCreate == nullptr) return ncclapi::InvalidUsage;
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
  ncclDevCommRequirements reqs{};
#endif
  reqs.lsaBarrierCount = ctas;
  reqs.lsaMultimem = usesMultimem(impl);
  auto* h = new Holder{};
  const ncclapi::Result r = api.DevCommCreate(comm, &reqs, &h->dc);
  if (r != ncclapi::Success) {
    delete h;
    return r;
  }
  *out = reinterpret_cast<DevComm*>(h);
  return ncclapi::Success;
}

ncclapi::Result destroy(const ncclapi::Api& api, ncclapi::Comm comm, DevComm* dc) {
  if (dc == nullptr) return ncclapi::Success;
  Holder* h = holder(dc);
  const ncclapi::Result r = api.DevCommDestroy != nullptr ? api.DevCommDestroy(comm, &h->dc) : ncclapi::Success;
  delete h;
  return r;
}

cudaError_t launchAllReduce(int impl, DType dtype, const DevComm* dc, ncclapi::Window sendWin, size_t sendOffset,
                            ncclapi::Window recvWin, size_t recvOffset, size_t count, int ctas, cudaStream_t stream) {
  const Kernel k = kernelFor(impl, dtype);
  if (k == nullptr || dc == nullptr) return cudaErrorInvalidValue;
  k<<<ctas, kThreads, 0, stream>>>(reinterpret_cast<ncclWindow_t>(sendWin), sendOffset,
                                   reinterpret_cast<ncclWindow_t>(recvWin), recvOffset, count, holder(dc)->dc);
  return cudaGetLastError();
}

int multimemSupport(const ncclapi::Api& api, ncclapi::Comm comm, ncclapi::Result* r) {
  *r = ncclapi::Success;
#ifdef NCCL_COMM_PROPERTIES_INITIALIZER
  if (api.CommQueryProperties == nullptr) return -1;
  ncclCommProperties_t props{};  // NCCL_COMM_PROPERTIES_INITIALIZER's fields, the rest zero
  props.size = sizeof(props);
  props.magic = NCCL_API_MAGIC;
  props.version = NCCL_VERSION_CODE;
  *r = api.CommQueryProperties(comm, &props);
  return *r == ncclapi::Success ? (props.multimemSupport ? 1 : 0) : -1;
#else
  (void)api;
  (void)comm;
  return -1;
#endif
}

constexpr Variant kVariant{
    ncclapi::normalizedVersion(NCCL_VERSION_CODE), supports, create, multimemSupport, destroy, launchAllReduce};
const bool kRegistered = registerVariant(&kVariant);

}  // namespace
}  // namespace collbench::nccldevice::COLLBENCH_DEVAPI_VARIANT
