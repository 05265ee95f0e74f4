// The checks every host backend makes of one op before any library call, written once: the collective, datatype,
// op and root are known (checkOpArgs), and an in-place op's pointers sit where nccl-tests' layout puts them
// (checkInPlace, from collectives.def's in-place column). Both return the CORE_BAD_SPEC Status the backends return.
#pragma once
#include "core/backend.h"
#include "core/status.h"

namespace collbench {

// Refuses an unknown collective, datatype or (for a reducing collective) op, and a root outside 0..nranks-1 (for a
// rooted one). `where` names the backend's call, e.g. "MpiBackend::enqueue".
Status checkOpArgs(const OpArgs& a, int nranks, const char* where);

// Refuses an in-place op whose send and recv are not laid out as the collective's in-place rule says (rank: this
// rank's place in the group). `call` names the library call the op would have made, e.g. "MPI_Allreduce".
Status checkInPlace(const OpArgs& a, int rank, const char* call);

}  // namespace collbench
