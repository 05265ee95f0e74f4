// Small helpers the backends' .cc files share for their error messages: the nccl-tests name of a
// collective and the CORE_BAD_SPEC Status (a request the backend refuses before any library call).
// Used by the mpi_*.cc, gloo_*.cc and nccl_*.cc files and host_backend.cc.
#pragma once
#include <string>

#include "core/status.h"
#include "core/types.h"

namespace collbench {

// "all_reduce", "all_gather", ... as nccl-tests' binaries name them; "unknown" out of range.
inline const char* collName(Coll c) {
  const int i = static_cast<int>(c);
  return i >= 0 && i < kCollCount ? kCollNames[i].name : "unknown";
}

inline Status badSpec(const std::string& message, const std::string& where) {
  return Status::Error("core", "CORE_BAD_SPEC", message, CB_SITE(where));
}

}  // namespace collbench
