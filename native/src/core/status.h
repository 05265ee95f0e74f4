// Errors as values: every library call of every backend ends up as a Status that the addon turns
// into a typed JavaScript error ({backend, code, message, site}). Native code never prints or exits.
#pragma once
#include <memory>
#include <string>
#include <utility>

namespace collbench {

// An Ok status is a flag and a null pointer: building, returning and destroying one costs a few instructions, so
// the timed loop's calls (runPrepared and what it calls) can return Status on every op. An error's text lives
// behind the pointer, shared by copies.
class Status {
 public:
  bool ok = true;

  static Status Ok() { return Status{}; }
  static Status Error(std::string backend, std::string code, std::string message, std::string site) {
    Status s;
    s.ok = false;
    s.detail_ = std::make_shared<const Detail>(
        Detail{std::move(backend), std::move(code), std::move(message), std::move(site)});
    return s;
  }

  // Empty for an Ok status.
  const std::string& backend() const { return detail().backend; }  // "mpi", "nccl", "cuda", "gloo", "core"
  const std::string& code() const { return detail().code; }        // stable string code, e.g. "MPI_ERR_TRUNCATE"
  const std::string& message() const { return detail().message; }  // the library's own explanation
  const std::string& site() const { return detail().site; }        // "file:line call"

 private:
  struct Detail {
    std::string backend, code, message, site;
  };
  const Detail& detail() const {
    static const Detail kNone;
    return detail_ ? *detail_ : kNone;
  }
  std::shared_ptr<const Detail> detail_;
};

#define CB_STR2(x) #x
#define CB_STR(x) CB_STR2(x)
#define CB_SITE(call) (std::string(__FILE__ ":" CB_STR(__LINE__) " ") + (call))

// Propagate a non-ok Status from an expression returning Status.
#define CB_TRY(expr)                    \
  do {                                  \
    ::collbench::Status cb_s_ = (expr); \
    if (!cb_s_.ok) return cb_s_;        \
  } while (0)

}  // namespace collbench
