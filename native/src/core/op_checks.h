// The checks every host backend makes of one op before any library call, written once: the collective, datatype,
// op and root are known (checkOpArgs), and an in-place op's pointers sit where nccl-tests' layout puts them
// (checkInPlace, from collectives.def's in-place column). Both return the CORE_BAD_SPEC Status the backends return.
#pragma once
#include "core/backend.h"
#include "core/status.h"

#include <vector>

namespace collbench {

// Refuses an unknown collective, datatype or (for a reducing collective) op, and a root outside 0..nranks-1 (for a
// rooted one). `where` names the backend's call, e.g. "MpiBackend::enqueue".
Status checkOpArgs(const OpArgs& a, int nranks, const char* where);

// Refuses an in-place op whose send and recv are not laid out as the collective's in-place rule says (rank: this
// rank's place in the group). `call` names the library call the op would have made, e.g. "MPI_Allreduce".
Status checkInPlace(const OpArgs& a, int rank, const char* call);

// Backend::createGroups()' list: every group non-empty, its ranks within 0..nranks-1, none twice. `where` names the
// backend's call.
Status checkGroups(const std::vector<std::vector<int>>& groups, int nranks, const char* where);
// `rank`'s place in `group` (its group rank), or -1 when it is not a member.
int groupRank(const std::vector<int>& group, int rank);
// An op's group index outside 0..count-1 (count: the groups created): CORE_BAD_SPEC naming it; Ok for -1 (world).
Status checkGroupIndex(int group, size_t count, const char* where);

}  // namespace collbench
