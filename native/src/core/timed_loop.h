// The one timed loop of collbench, shared by every backend (docs/architecture.md, "Native layer"): warm-up, one row-half
// measured exactly as nccl-tests' BenchTime does it (docs/nccl-tests-contract.md, "Timing"), then the correctness check.
// Backends only enqueue ops, wait, barrier and combine numbers; nothing here is per collective.
#pragma once
#include <vector>

#include "backend.h"

namespace collbench {

// -w ops of one warm-up size (out-of-place, rotated through the buffer as timed ops are), then wait.
Status warmup(Backend& backend, const HalfSpec& spec, int iters);

// Time one row-half and check it; on rank 0 `result` holds what the table prints.
Status benchHalf(Backend& backend, const HalfSpec& spec, HalfResult* result);

// The same for a process that drives several ranks (backend.localRanks() > 1, NCCL -t/-g): one spec
// per local rank, in local order; sizes and modes must agree. Each op is issued on every local rank
// (Backend::enqueueAll); times are per process, as nccl-tests' are per thread.
Status warmupLocal(Backend& backend, const std::vector<const HalfSpec*>& specs, int iters);
Status benchLocal(Backend& backend, const std::vector<const HalfSpec*>& specs, HalfResult* result);

// Where this process's timed loop is, for the watchdog's report of who did not arrive (read from another thread while
// the loop runs): the iteration being issued (0-based; -1 before the first, in the untimed op; iters after the last,
// while completing and checking). A relaxed atomic store per iteration, nothing else.
int64_t loopIteration();

// The clock of every process against rank 0's: `rounds` barriers, each process reading its monotonic clock as it
// leaves each one; rank 0 receives processes x rounds readings (microseconds, process-major). Leaving a barrier
// happens at nearly the same moment everywhere, so the per-round differences estimate each clock's offset.
Status clockSamples(Backend& backend, int rounds, std::vector<double>* atRoot);

}  // namespace collbench
