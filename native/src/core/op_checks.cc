// Implementation of the shared op checks (see op_checks.h).
#include "core/op_checks.h"

#include <algorithm>
#include <string>

#include "core/backend_errors.h"

namespace collbench {

Status checkOpArgs(const OpArgs& a, int nranks, const char* where) {
  if (!collValid(a.coll)) return badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), where);
  const int d = static_cast<int>(a.dtype);
  if (d < 0 || d >= kDTypeCount) return badSpec("unknown datatype " + std::to_string(d), where);
  const int o = static_cast<int>(a.op);
  if (collReducing(a.coll) && (o < 0 || o >= kRedOpCount)) return badSpec("unknown op " + std::to_string(o), where);
  if (collRooted(a.coll) && (a.root < 0 || a.root >= nranks))
    return badSpec(std::string(collName(a.coll)) + ": root " + std::to_string(a.root) + " is not a rank of " +
                       std::to_string(nranks),
                   where);
  return Status::Ok();
}

Status checkInPlace(const OpArgs& a, int rank, const char* call) {
  if (!a.inPlace) return Status::Ok();
  if (!collValid(a.coll)) return badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), call);
  const char* send = static_cast<const char*>(a.send);
  const char* recv = static_cast<const char*>(a.recv);
  const uint64_t mine = a.count * static_cast<uint64_t>(rank) * dtypeSize(a.dtype);  // this rank's chunk, in bytes
  const char* rule = nullptr;
  switch (kCollTraits[static_cast<int>(a.coll)].inPlace) {
    case InPlace::Same:
      if (send != recv) rule = "send == recv";
      break;
    case InPlace::SendInRecv:
      if (send != recv + mine) rule = "send == recv + rank*count";
      break;
    case InPlace::RecvInSend:
      if (recv != send + mine) rule = "recv == send + rank*count";
      break;
  }
  if (rule == nullptr) return Status::Ok();
  return badSpec(std::string(collName(a.coll)) + " in-place needs " + rule, call);
}

Status checkGroups(const std::vector<std::vector<int>>& groups, int nranks, const char* where) {
  for (size_t k = 0; k < groups.size(); ++k) {
    const std::vector<int>& g = groups[k];
    const std::string name = "process group " + std::to_string(k);
    if (g.empty()) return badSpec(name + " has no ranks", where);
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] < 0 || g[i] >= nranks)
        return badSpec(
            name + ": rank " + std::to_string(g[i]) + " is not in the job's " + std::to_string(nranks) + " ranks",
            where);
      if (std::find(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(i), g[i]) !=
          g.begin() + static_cast<std::ptrdiff_t>(i))
        return badSpec(name + " names rank " + std::to_string(g[i]) + " twice", where);
    }
  }
  return Status::Ok();
}

int groupRank(const std::vector<int>& group, int rank) {
  const auto it = std::find(group.begin(), group.end(), rank);
  return it == group.end() ? -1 : static_cast<int>(it - group.begin());
}

Status checkGroupIndex(int group, size_t count, const char* where) {
  if (group == -1 || (group >= 0 && static_cast<size_t>(group) < count)) return Status::Ok();
  return badSpec("process group " + std::to_string(group) + " was not created (" + std::to_string(count) + " groups)",
                 where);
}

}  // namespace collbench
