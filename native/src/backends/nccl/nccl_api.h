// Our own declarations of the part of the NCCL C API that collbench calls (result codes, datatypes, ops, unique id,
// the versioned communicator config, a table of dlsym'ed function pointers), so that no nccl.h is needed to build;
// test/native/nccl-abi.test.ts checks them against a real nccl.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace collbench::ncclapi {

// ncclResult_t
enum Result : int {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7,  // NCCL >= 2.14 (non-blocking communicators)
  Timeout = 8,     // NCCL >= 2.29
  NumResults = 9,
};

// ncclDataType_t: same numbering as collbench::DType (core/types.h).
enum DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,     // NCCL >= 2.10
  Float8e4m3 = 10,  // NCCL >= 2.24
  Float8e5m2 = 11,  // NCCL >= 2.24
};

// ncclRedOp_t: the built-in ops; NCCL hands out larger values for user ops (PreMulSum).
enum RedOp : int { OpSum = 0, OpProd = 1, OpMax = 2, OpMin = 3, OpAvg = 4 /* >= 2.10 */ };

// ncclScalarResidence_t
enum ScalarResidence : int { ScalarDevice = 0, ScalarHostImmediate = 1 };

constexpr int kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};

using Comm = struct CommOpaque*;      // ncclComm_t
using Window = struct WindowOpaque*;  // ncclWindow_t (NCCL >= 2.27)
struct Team {                         // ncclTeam_t (NCCL >= 2.28)
  int nRanks, rank, stride;
};

constexpr int kConfigUndefInt = INT32_MIN;  // NCCL_CONFIG_UNDEF_INT
constexpr unsigned kApiMagic = 0xcafebeef;  // NCCL_API_MAGIC
constexpr int kWinCollSymmetric = 0x01;     // NCCL_WIN_COLL_SYMMETRIC
constexpr int kSplitNoColor = -1;           // NCCL_SPLIT_NOCOLOR: ncclCommSplit's "no communicator for this rank"

// ncclConfig_t as of NCCL 2.30 (version 23007). NCCL copies min(size, its own sizeof) bytes and
// treats fields newer than `version` as unset, so this one layout serves every release >= 2.14:
// older libraries read only the prefix they know.
struct Config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;  // >= 2.27
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
};
constexpr unsigned kConfigVersion = 23007;
// The nccl.h these declarations follow (nccl-tests prints it as nccl-headers=…).
constexpr int kDeclaredVersion = 23007;

// A config with every field unset, as NCCL_CONFIG_INITIALIZER makes it.
inline Config defaultConfig() {
  Config c{};
  c.size = sizeof(Config);
  c.magic = kApiMagic;
  c.version = kConfigVersion;
  c.blocking = c.cgaClusterSize = c.minCTAs = c.maxCTAs = kConfigUndefInt;
  c.netName = nullptr;
  c.splitShare = c.trafficClass = kConfigUndefInt;
  c.commName = nullptr;
  c.collnetEnable = c.CTAPolicy = c.shrinkShare = c.nvlsCTAs = c.nChannelsPerNetPeer = kConfigUndefInt;
  c.nvlinkCentricSched = c.graphUsageMode = c.numRmaCtx = c.maxP2pPeers = c.graphStreamOrdering = kConfigUndefInt;
  return c;
}

// NCCL version codes: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 (NCCL_VERSION()).
// normalizedVersion maps either to X*10000+Y*100+Z so versions compare as numbers.
constexpr int versionCode(int x, int y, int z) {
  return x * 10000 + y * 100 + z;
}
constexpr int normalizedVersion(int code) {
  return code >= 10000 ? code : (code / 1000) * 10000 + ((code % 1000) / 100) * 100 + code % 100;
}

// Functions collbench calls. Required ones exist in every NCCL >= 2.7 (ncclSend/ncclRecv);
// the others are null when the library lacks them.
struct Api {
  // required
  Result (*GetVersion)(int* version);
  Result (*GetUniqueId)(UniqueId* id);
  Result (*CommInitRank)(Comm* comm, int nranks, UniqueId id, int rank);
  Result (*CommDestroy)(Comm comm);
  Result (*CommAbort)(Comm comm);
  Result (*CommGetAsyncError)(Comm comm, Result* asyncError);
  Result (*CommCount)(Comm comm, int* count);
  Result (*CommUserRank)(Comm comm, int* rank);
  const char* (*GetErrorString)(Result result);
  Result (*GroupStart)();
  Result (*GroupEnd)();
  Result (*AllReduce)(const void* send, void* recv, size_t count, DataType type, int op, Comm comm,
                      cudaStream_t stream);
  Result (*AllGather)(const void* send, void* recv, size_t sendCount, DataType type, Comm comm, cudaStream_t stream);
  Result (*ReduceScatter)(const void* send, void* recv, size_t recvCount, DataType type, int op, Comm comm,
                          cudaStream_t stream);
  Result (*Broadcast)(const void* send, void* recv, size_t count, DataType type, int root, Comm comm,
                      cudaStream_t stream);
  Result (*Reduce)(const void* send, void* recv, size_t count, DataType type, int op, int root, Comm comm,
                   cudaStream_t stream);
  Result (*Send)(const void* send, size_t count, DataType type, int peer, Comm comm, cudaStream_t stream);
  Result (*Recv)(void* recv, size_t count, DataType type, int peer, Comm comm, cudaStream_t stream);

  // optional, by the NCCL release that added them
  const char* (*GetLastError)(Comm comm);                                                       // 2.13
  Result (*CommInitRankConfig)(Comm* comm, int nranks, UniqueId id, int rank, Config* config);  // 2.14
  Result (*CommFinalize)(Comm comm);                                                            // 2.14
  Result (*RedOpCreatePreMulSum)(int* op, void* scalar, DataType type, ScalarResidence residence,
                                 Comm comm);                                                 // 2.11
  Result (*RedOpDestroy)(int op, Comm comm);                                                 // 2.11
  Result (*CommSplit)(Comm comm, int color, int key, Comm* newcomm, Config* config);         // 2.18
  Result (*MemAlloc)(void** ptr, size_t size);                                               // 2.19
  Result (*MemFree)(void* ptr);                                                              // 2.19
  Result (*CommRegister)(Comm comm, void* buff, size_t size, void** handle);                 // 2.19
  Result (*CommDeregister)(Comm comm, void* handle);                                         // 2.19
  Result (*CommWindowRegister)(Comm comm, void* buff, size_t size, Window* win, int flags);  // 2.27
  Result (*CommWindowDeregister)(Comm comm, Window win);                                     // 2.27
  Result (*AlltoAll)(const void* send, void* recv, size_t count, DataType type, Comm comm,
                     cudaStream_t stream);  // 2.28
  Result (*Gather)(const void* send, void* recv, size_t count, DataType type, int root, Comm comm,
                   cudaStream_t stream);  // 2.28
  Result (*Scatter)(const void* send, void* recv, size_t count, DataType type, int root, Comm comm,
                    cudaStream_t stream);  // 2.28
  // Device API (-D): the requirements and ncclDevComm layouts are the headers' (nccl_device_kernels.cu).
  Result (*DevCommCreate)(Comm comm, const void* requirements, void* outDevComm);  // 2.28
  Result (*DevCommDestroy)(Comm comm, const void* devComm);                        // 2.28
  Team (*TeamLsa)(Comm comm);                                                      // 2.28
  Result (*CommQueryProperties)(Comm comm, void* properties);                      // 2.29
};

// "ncclUnhandledCudaError" etc.: the enum name, as users search for it.
inline const char* resultName(int r) {
  switch (r) {
    case Success:
      return "ncclSuccess";
    case UnhandledCudaError:
      return "ncclUnhandledCudaError";
    case SystemError:
      return "ncclSystemError";
    case InternalError:
      return "ncclInternalError";
    case InvalidArgument:
      return "ncclInvalidArgument";
    case InvalidUsage:
      return "ncclInvalidUsage";
    case RemoteError:
      return "ncclRemoteError";
    case InProgress:
      return "ncclInProgress";
    case Timeout:
      return "ncclTimeout";
    default:
      return "ncclUnknownResult";
  }
}

// Stable string code for JS: "NCCL_UNHANDLED_CUDA_ERROR", "NCCL_INVALID_USAGE", ...
inline const char* resultCode(int r) {
  switch (r) {
    case Success:
      return "NCCL_SUCCESS";
    case UnhandledCudaError:
      return "NCCL_UNHANDLED_CUDA_ERROR";
    case SystemError:
      return "NCCL_SYSTEM_ERROR";
    case InternalError:
      return "NCCL_INTERNAL_ERROR";
    case InvalidArgument:
      return "NCCL_INVALID_ARGUMENT";
    case InvalidUsage:
      return "NCCL_INVALID_USAGE";
    case RemoteError:
      return "NCCL_REMOTE_ERROR";
    case InProgress:
      return "NCCL_IN_PROGRESS";
    case Timeout:
      return "NCCL_TIMEOUT";
    default:
      return "NCCL_UNKNOWN_RESULT";
  }
}

}  // namespace collbench::ncclapi
