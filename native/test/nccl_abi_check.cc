// ABI check of our NCCL declarations (backends/nccl/nccl_api.h) against a real nccl.h, compiled (never
// run) by test/native/nccl-abi.test.ts: enum values, struct layout, call-signature shapes, and collbench's
// DType/RedOp numbering (core/types.h) must equal NCCL's. -DCOLLBENCH_ABI_BREAK flips one expectation so
// the test can prove the assertions are live.
#include <nccl.h>

#include <cstddef>
#include <type_traits>

#include "backends/nccl/nccl_api.h"
#include "core/types.h"

namespace api = collbench::ncclapi;
using collbench::DType;
using collbench::RedOp;

// Results
static_assert(int(api::Success) == int(ncclSuccess), "ncclSuccess");
static_assert(int(api::UnhandledCudaError) == int(ncclUnhandledCudaError), "ncclUnhandledCudaError");
static_assert(int(api::SystemError) == int(ncclSystemError), "ncclSystemError");
static_assert(int(api::InternalError) == int(ncclInternalError), "ncclInternalError");
static_assert(int(api::InvalidArgument) == int(ncclInvalidArgument), "ncclInvalidArgument");
static_assert(int(api::InvalidUsage) == int(ncclInvalidUsage), "ncclInvalidUsage");
#if NCCL_VERSION_CODE >= 21100
static_assert(int(api::RemoteError) == int(ncclRemoteError), "ncclRemoteError");
#endif
#if NCCL_VERSION_CODE >= 21400
static_assert(int(api::InProgress) == int(ncclInProgress), "ncclInProgress");
#endif
static_assert(sizeof(api::Result) == sizeof(ncclResult_t), "ncclResult_t size");

// Datatypes: ours, NCCL's and collbench's DType are one numbering.
static_assert(int(api::Int8) == int(ncclInt8) && int(api::Uint8) == int(ncclUint8), "8-bit integer types");
static_assert(int(api::Int32) == int(ncclInt32) && int(api::Uint32) == int(ncclUint32), "32-bit integer types");
static_assert(int(api::Int64) == int(ncclInt64) && int(api::Uint64) == int(ncclUint64), "64-bit integer types");
#ifdef COLLBENCH_ABI_BREAK
static_assert(int(api::Float16) == int(ncclFloat32), "deliberately broken expectation (COLLBENCH_ABI_BREAK)");
#endif
static_assert(int(api::Float16) == int(ncclFloat16) && int(api::Float32) == int(ncclFloat32) &&
                  int(api::Float64) == int(ncclFloat64),
              "floats");
static_assert(int(DType::Int8) == int(ncclInt8) && int(DType::Uint8) == int(ncclUint8) &&
                  int(DType::Int32) == int(ncclInt32) && int(DType::Uint32) == int(ncclUint32) &&
                  int(DType::Int64) == int(ncclInt64) && int(DType::Uint64) == int(ncclUint64),
              "collbench integer DTypes");
static_assert(int(DType::Float16) == int(ncclFloat16) && int(DType::Float32) == int(ncclFloat32) &&
                  int(DType::Float64) == int(ncclFloat64),
              "collbench float DTypes");
#if NCCL_VERSION_CODE >= 21000
static_assert(int(api::Bfloat16) == int(ncclBfloat16) && int(DType::Bfloat16) == int(ncclBfloat16), "bfloat16");
#endif
#if NCCL_VERSION_CODE >= 22400
static_assert(int(api::Float8e4m3) == int(ncclFloat8e4m3) && int(api::Float8e5m2) == int(ncclFloat8e5m2), "fp8");
static_assert(int(DType::F8e4m3) == int(ncclFloat8e4m3) && int(DType::F8e5m2) == int(ncclFloat8e5m2),
              "collbench fp8 DTypes");
static_assert(collbench::kDTypeCount == ncclNumTypes, "one collbench DType per NCCL datatype");
#endif
static_assert(sizeof(api::DataType) == sizeof(ncclDataType_t), "ncclDataType_t size");

// Ops
static_assert(int(api::OpSum) == int(ncclSum) && int(api::OpProd) == int(ncclProd) && int(api::OpMax) == int(ncclMax) &&
                  int(api::OpMin) == int(ncclMin),
              "ops");
static_assert(int(RedOp::Sum) == int(ncclSum) && int(RedOp::Prod) == int(ncclProd) && int(RedOp::Max) == int(ncclMax) &&
                  int(RedOp::Min) == int(ncclMin),
              "collbench RedOps");
#if NCCL_VERSION_CODE >= 21000
static_assert(int(api::OpAvg) == int(ncclAvg) && int(RedOp::Avg) == int(ncclAvg), "avg");
#endif
static_assert(sizeof(int) == sizeof(ncclRedOp_t), "ncclRedOp_t travels as an int");
#if NCCL_VERSION_CODE >= 21100
static_assert(int(api::ScalarDevice) == int(ncclScalarDevice) &&
                  int(api::ScalarHostImmediate) == int(ncclScalarHostImmediate),
              "ncclScalarResidence_t");
#endif

// Unique id, config and constants
static_assert(sizeof(api::UniqueId) == sizeof(ncclUniqueId) && api::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES,
              "ncclUniqueId");
static_assert(alignof(api::UniqueId) == alignof(ncclUniqueId), "ncclUniqueId alignment");
#if NCCL_VERSION_CODE >= 21400
static_assert(api::kConfigUndefInt == NCCL_CONFIG_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");
#define CB_SAME_OFFSET(field) static_assert(offsetof(api::Config, field) == offsetof(ncclConfig_t, field), #field)
CB_SAME_OFFSET(size);
CB_SAME_OFFSET(magic);
CB_SAME_OFFSET(version);
CB_SAME_OFFSET(blocking);
CB_SAME_OFFSET(cgaClusterSize);
CB_SAME_OFFSET(minCTAs);
CB_SAME_OFFSET(maxCTAs);
CB_SAME_OFFSET(netName);
#if NCCL_VERSION_CODE >= 21700
CB_SAME_OFFSET(splitShare);
#endif
#if NCCL_VERSION_CODE >= 22700
CB_SAME_OFFSET(CTAPolicy);
#endif
#if NCCL_VERSION_CODE >= 23000
// Our layout is NCCL 2.30's: with such a header the whole struct must agree.
CB_SAME_OFFSET(trafficClass);
CB_SAME_OFFSET(commName);
CB_SAME_OFFSET(collnetEnable);
CB_SAME_OFFSET(shrinkShare);
CB_SAME_OFFSET(nvlsCTAs);
CB_SAME_OFFSET(nChannelsPerNetPeer);
CB_SAME_OFFSET(nvlinkCentricSched);
CB_SAME_OFFSET(graphUsageMode);
CB_SAME_OFFSET(numRmaCtx);
CB_SAME_OFFSET(maxP2pPeers);
CB_SAME_OFFSET(graphStreamOrdering);
static_assert(sizeof(api::Config) == sizeof(ncclConfig_t), "ncclConfig_t size");
#else
static_assert(sizeof(api::Config) >= sizeof(ncclConfig_t), "our ncclConfig_t covers the library's");
#endif
#endif
#ifdef NCCL_API_MAGIC
static_assert(api::kApiMagic == NCCL_API_MAGIC, "NCCL_API_MAGIC");
#endif
#ifdef NCCL_WIN_COLL_SYMMETRIC
static_assert(api::kWinCollSymmetric == NCCL_WIN_COLL_SYMMETRIC, "NCCL_WIN_COLL_SYMMETRIC");
static_assert(api::kSplitNoColor == NCCL_SPLIT_NOCOLOR, "NCCL_SPLIT_NOCOLOR");
#endif
static_assert(api::normalizedVersion(NCCL_VERSION_CODE) == api::versionCode(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),
              "version code normalization");

// Function signatures: same arity, and each parameter and the result of the same size, pointer-ness
// and integer/floating class (enums we pass as int are ABI-identical to NCCL's enums).
template <typename A, typename B>
constexpr bool sameShape() {
  return sizeof(A) == sizeof(B) && std::is_pointer<A>::value == std::is_pointer<B>::value &&
         std::is_floating_point<A>::value == std::is_floating_point<B>::value &&
         std::is_class<A>::value == std::is_class<B>::value;
}
template <typename A, typename B>
struct SameAbi : std::false_type {};
template <typename RA, typename... PA, typename RB, typename... PB>
struct SameAbi<RA (*)(PA...), RB (*)(PB...)> {
  static constexpr bool value = sizeof...(PA) == sizeof...(PB) && sameShape<RA, RB>() && (sameShape<PA, PB>() && ...);
};
#define CB_SAME_FN(member, fn) \
  static_assert(SameAbi<decltype(api::Api::member), decltype(&fn)>::value, #fn " signature")
CB_SAME_FN(GetVersion, ncclGetVersion);
CB_SAME_FN(GetUniqueId, ncclGetUniqueId);
CB_SAME_FN(CommInitRank, ncclCommInitRank);
CB_SAME_FN(CommDestroy, ncclCommDestroy);
CB_SAME_FN(CommAbort, ncclCommAbort);
CB_SAME_FN(CommGetAsyncError, ncclCommGetAsyncError);
CB_SAME_FN(CommCount, ncclCommCount);
CB_SAME_FN(CommUserRank, ncclCommUserRank);
CB_SAME_FN(GetErrorString, ncclGetErrorString);
CB_SAME_FN(GroupStart, ncclGroupStart);
CB_SAME_FN(GroupEnd, ncclGroupEnd);
CB_SAME_FN(AllReduce, ncclAllReduce);
CB_SAME_FN(AllGather, ncclAllGather);
CB_SAME_FN(ReduceScatter, ncclReduceScatter);
CB_SAME_FN(Broadcast, ncclBroadcast);
CB_SAME_FN(Reduce, ncclReduce);
CB_SAME_FN(Send, ncclSend);
CB_SAME_FN(Recv, ncclRecv);
#if NCCL_VERSION_CODE >= 21100
CB_SAME_FN(RedOpCreatePreMulSum, ncclRedOpCreatePreMulSum);
CB_SAME_FN(RedOpDestroy, ncclRedOpDestroy);
#endif
#if NCCL_VERSION_CODE >= 21300
CB_SAME_FN(GetLastError, ncclGetLastError);
#endif
#if NCCL_VERSION_CODE >= 21400
CB_SAME_FN(CommInitRankConfig, ncclCommInitRankConfig);
CB_SAME_FN(CommFinalize, ncclCommFinalize);
#endif
#if NCCL_VERSION_CODE >= 21800
CB_SAME_FN(CommSplit, ncclCommSplit);
#endif
#if NCCL_VERSION_CODE >= 21900
CB_SAME_FN(MemAlloc, ncclMemAlloc);
CB_SAME_FN(MemFree, ncclMemFree);
CB_SAME_FN(CommRegister, ncclCommRegister);
CB_SAME_FN(CommDeregister, ncclCommDeregister);
#endif
#if NCCL_VERSION_CODE >= 22700
CB_SAME_FN(CommWindowRegister, ncclCommWindowRegister);
CB_SAME_FN(CommWindowDeregister, ncclCommWindowDeregister);
#endif
#if NCCL_VERSION_CODE >= 22800
CB_SAME_FN(AlltoAll, ncclAlltoAll);
CB_SAME_FN(Gather, ncclGather);
CB_SAME_FN(Scatter, ncclScatter);
#endif

int main() {
  return 0;
}
