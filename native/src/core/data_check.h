// Host-memory fill and check of pattern segments: the Backend::fill/check contract (backend.h) for
// backends whose buffers live in CPU memory (mpi, gloo). Expected values are regenerated from
// pattern.h rather than stored, (docs/architecture.md, "Native layer"; docs/nccl-tests-contract.md, "Checks").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend.h"
#include "spec.h"
#include "status.h"
#include "types.h"

namespace collbench {

// Write every segment into the buffer it names: Zero -> zero bits; ReduceInput -> rank seg.rank's
// contribution; ReduceOutput -> the reduced value; Copy -> copy data. Seed = mixSeed(baseSeed,
// seg.stream); element i has pattern index seg.indexBase + i at element offset seg.offset + i.
Status hostFill(void* sendBase, void* recvBase, DType dtype, RedOp op, int nranks, uint64_t baseSeed,
                const std::vector<Segment>& segs);

// Compare every segment's elements with the values hostFill would write: ReduceOutput within
// pattern::tolerance bit distance, every other kind bit-exact. *out is reset; it receives the wrong count and, if any,
// the wrong element with the lowest offset (ties: earliest segment), its expected and actual values as text: floats
// "3.25 (0x4280)", integers "-3 (0xfd)".
Status hostCheck(const void* recvBase, const void* sendBase, DType dtype, RedOp op, int nranks, uint64_t baseSeed,
                 const std::vector<Segment>& segs, CheckOutcome* out);

// Text of one element value, as hostCheck reports it.
std::string formatElement(DType dtype, uint64_t bits);

}  // namespace collbench
