// The one timed loop of collbench, shared by every backend (docs/architecture.md, "Native layer"): warm-up, one
// row-half measured exactly as nccl-tests' BenchTime does it (docs/nccl-tests-contract.md, "Timing"), then the
// correctness check. Backends only enqueue ops, wait, barrier and combine numbers; nothing here is per collective.
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

// A sequence of different ops timed as one step (collbench workload: one DDP step's gradient buckets, one FSDP
// step's all-gathers and reduce-scatters). ops[k] holds op k's spec per local rank (as benchLocal's `specs`);
// only coll, dtype, op, root, count, offsets and the data segments of each spec are read.
struct SequenceSpec {
  int iters = 1;              // timed steps
  int warmupIters = 1;        // untimed steps before them
  std::vector<double> gapUs;  // busy time before op k of each step (compute standing in for backward); empty: none
  bool check = true;          // run each op once more with pattern data and count wrong elements
};
struct SequenceResult {
  std::vector<double> stepUs;  // per timed step, max over processes (valid on rank 0)
  double gapUs = 0;            // measured busy time per step on this process (the gaps as spun)
  double wrong = 0;            // global wrong-element count, summed over the ops
  int ranksWithWrong = 0;      // the largest count of ranks with a wrong element in one op
  int firstWrongOp = -1;       // the first op with a wrong element
  FirstWrong firstWrong;
};
// Each step: for every op, the gap (a busy wait) and then the op, issued without waiting; the step ends when every
// op has completed on this process (what a training step waits for before its optimizer), no barrier between steps.
Status benchSequence(Backend& backend, const std::vector<std::vector<const HalfSpec*>>& ops, const SequenceSpec& seq,
                     SequenceResult* result);

// Where this process's timed loop is, for the watchdog's report of who did not arrive (read from another thread while
// the loop runs): the iteration being issued (0-based; -1 before the first, in the untimed op; iters after the last,
// while completing and checking). A relaxed atomic store per iteration, nothing else.
int64_t loopIteration();

// The clock of every process against rank 0's: `rounds` barriers, each process reading its monotonic clock as it
// leaves each one; rank 0 receives processes x rounds readings (microseconds, process-major). Leaving a barrier
// happens at nearly the same moment everywhere, so the per-round differences estimate each clock's offset.
Status clockSamples(Backend& backend, int rounds, std::vector<double>* atRoot);

}  // namespace collbench
