// Host side of the device-API all_reduce kernels (-D 1..4). The device API is versioned (ncclDevComm changes between
// 2.28 and 2.29), so the .cu is compiled once per NCCL include directory given at build time into a Variant, and a run
// uses the one that matches the loaded libnccl, or says why none does. No NCCL header here.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "backends/nccl/nccl_api.h"
#include "core/types.h"

namespace collbench {
struct NcclLibrary;
}

namespace collbench::nccldevice {

// nccl-tests' numbering: 1 LSA, 2 LSA vectorized, 3 multimem, 4 multimem vectorized.
constexpr int kMaxImpl = 4;
const char* implName(int impl);
inline bool usesMultimem(int impl) {
  return impl == 3 || impl == 4;
}

// One rank's device communicator (an ncclDevComm in the layout of its variant's headers).
struct DevComm;

// The kernels compiled against one nccl_device.h.
struct Variant {
  int version;  // normalized NCCL version (X*10000+Y*100+Z) of the headers
  // Whether implementation `impl` has a kernel for this dtype (all of them reduce with sum only).
  bool (*supports)(int impl, DType dtype);
  // ncclDevCommCreate through api.DevCommCreate with what `impl` needs: an LSA barrier per CTA (`ctas`), and
  // multimem on the LSA team for 3 and 4. Collective over the communicator; *out is set on success.
  ncclapi::Result (*create)(const ncclapi::Api& api, ncclapi::Comm comm, int impl, int ctas, DevComm** out);
  // NCCL's answer to "does this communicator support multimem" (ncclCommQueryProperties, 2.29+ headers): 1 yes,
  // 0 no, -1 these headers or this library cannot say (2.28: ncclDevCommCreate is the answer). *r: the call's result.
  int (*multimemSupport)(const ncclapi::Api& api, ncclapi::Comm comm, ncclapi::Result* r);
  // ncclDevCommDestroy, then frees `dc` (null is a no-op).
  ncclapi::Result (*destroy)(const ncclapi::Api& api, ncclapi::Comm comm, DevComm* dc);
  // Kernel `impl` over `count` elements: reads the send window at sendOffset bytes on every LSA peer, writes the
  // sum into the recv window at recvOffset bytes on every peer; `ctas` blocks on `stream`.
  cudaError_t (*launchAllReduce)(int impl, DType dtype, const DevComm* dc, ncclapi::Window sendWin, size_t sendOffset,
                                 ncclapi::Window recvWin, size_t recvOffset, size_t count, int ctas,
                                 cudaStream_t stream);
};

// Called once per compiled variant at load time (nccl_device.cc keeps the list).
bool registerVariant(const Variant* v);
// Normalized versions of the headers this build has kernels for (empty: built without nccl_device.h).
std::vector<int> builtVersions();

// Whether kernels built against headers of version `built` run on a libnccl of version `loaded`: the 2.28 device
// API only on 2.28.x, a 2.29+ one on that release or newer (nccl-tests refuses the same mismatches).
constexpr bool compatible(int built, int loaded) {
  const int builtMinor = built / 100, loadedMinor = loaded / 100;  // X*100+Y
  return builtMinor < 229 ? loadedMinor == builtMinor : loadedMinor >= builtMinor;
}
static_assert(compatible(22809, 22800) && compatible(22809, 22809) && !compatible(22809, 22900) &&
              !compatible(22809, 23007) && !compatible(22809, 22703));
static_assert(compatible(22900, 22900) && compatible(22900, 23007) && compatible(23007, 23100) &&
              !compatible(23007, 22905) && !compatible(22900, 22809));

// The variant for `lib`, or null with *why set (one sentence naming the loaded version and what to rebuild with):
// a library without ncclDevCommCreate/ncclTeamLsa (NCCL < 2.28), or no variant compatible with its version.
const Variant* variantFor(const NcclLibrary& lib, std::string* why);

// Whether CUDA device `ordinal` supports multicast objects (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, through the
// driver entry point); *why says what failed when the query itself could not run.
bool multicastSupported(int ordinal, std::string* why);

}  // namespace collbench::nccldevice
