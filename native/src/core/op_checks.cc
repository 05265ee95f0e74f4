// Implementation of the shared op checks (see op_checks.h).
#include "core/op_checks.h"

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

}  // namespace collbench
