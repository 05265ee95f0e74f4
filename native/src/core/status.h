// Errors as values: every library call of every backend ends up as a Status that the addon turns
// into a typed JavaScript error ({backend, code, message, site}). Native code never prints or exits.
#pragma once
#include <string>
#include <utility>

namespace collbench {

struct Status {
  bool ok = true;
  std::string backend;  // "mpi", "nccl", "cuda", "gloo", "core"
  std::string code;     // stable string code, e.g. "MPI_ERR_TRUNCATE", "CORE_BAD_SPEC"
  std::string message;  // the library's own explanation
  std::string site;     // "file:line call"

  static Status Ok() { return Status{}; }
  static Status Error(std::string backend, std::string code, std::string message, std::string site) {
    Status s;
    s.ok = false;
    s.backend = std::move(backend);
    s.code = std::move(code);
    s.message = std::move(message);
    s.site = std::move(site);
    return s;
  }
};

#define CB_STR2(x) #x
#define CB_STR(x) CB_STR2(x)
#define CB_SITE(call) (std::string(__FILE__ ":" CB_STR(__LINE__) " ") + (call))

// Propagate a non-ok Status from an expression returning Status.
#define CB_TRY(expr)                 \
  do {                               \
    ::collbench::Status cb_s_ = (expr); \
    if (!cb_s_.ok) return cb_s_;     \
  } while (0)

}  // namespace collbench
