// Finds and dlopens libnccl at run time and resolves nccl_api.h's functions (required ones must exist, newer optional
// ones stay null). Search order: --nccl-lib or COLLBENCH_NCCL_LIB, the system loader (libnccl.so.2), then Python
// site-packages layouts (…/nvidia/nccl/lib), the active virtualenv first.
#pragma once
#include <string>
#include <vector>

#include "backends/nccl/nccl_api.h"
#include "core/status.h"

namespace collbench {

struct NcclLibrary {
  void* handle = nullptr;
  std::string path;     // the file actually loaded
  std::string how;      // which search step found it ("--nccl-lib", "system loader", "site-packages", …)
  int versionCode = 0;  // ncclGetVersion, as the library reports it (e.g. 23007)
  int version = 0;      // normalized X*10000+Y*100+Z (ncclapi::normalizedVersion)
  ncclapi::Api api{};

  bool atLeast(int x, int y, int z) const { return version >= ncclapi::versionCode(x, y, z); }
  std::string versionString() const;  // "2.30.7"
};

// One place the loader looks: a concrete file, a glob pattern, or the bare soname for dlopen.
struct NcclCandidate {
  std::string pattern;  // path, glob or "libnccl.so.2"
  std::string how;      // "COLLBENCH_NCCL_LIB", "system loader", "site-packages (VIRTUAL_ENV)", …
};

// The search list for an explicit path (may be empty) and an environment lookup (pure; for tests).
// An explicit path that names a directory means DIR/libnccl.so.2 or DIR/lib/libnccl.so.2.
std::vector<NcclCandidate> ncclCandidates(const std::string& explicitPath, const char* (*getenv)(const char*));

// Loads libnccl once per process (later calls return the same library, whatever they ask for).
// explicitPath: --nccl-lib's value, or "" (then COLLBENCH_NCCL_LIB, then the search).
// Errors: NCCL_NOT_FOUND (lists every place tried and how to point at a library), NCCL_TOO_OLD,
// NCCL_SYMBOL_MISSING.
Status loadNccl(const std::string& explicitPath, const NcclLibrary** out);

// The library loadNccl returned before, or nullptr.
const NcclLibrary* loadedNccl();

}  // namespace collbench
