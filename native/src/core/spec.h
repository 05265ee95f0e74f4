// What one row-half asks of the timed loop, and what it returns. Built by the TypeScript collective
// descriptors (bench/collectives/*.ts) for this rank, so counts, in-place offsets and the data layout
// are defined once, in TypeScript, for every backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace collbench {

// Kinds of generated data, see pattern.h.
enum class SegKind : int {
  ReduceInput = 0,   // rank `rank`'s contribution to a reduction (depends on nranks and op)
  ReduceOutput = 1,  // the exact reduced value over all nranks contributions
  Copy = 2,          // non-reducing data of stream `stream`
  Zero = 3,          // all-zero bits (recv buffers are zeroed before each init)
};
constexpr int kSegKindCount = 4;
// The names JavaScript gives segments (bench/core/types.ts SegmentKind; addon_common.cc parses them).
inline constexpr EnumName kSegKindNames[] = {
    {"reduceInput", static_cast<int>(SegKind::ReduceInput)},
    {"reduceOutput", static_cast<int>(SegKind::ReduceOutput)},
    {"copy", static_cast<int>(SegKind::Copy)},
    {"zero", static_cast<int>(SegKind::Zero)},
};
static_assert(static_cast<int>(sizeof kSegKindNames / sizeof kSegKindNames[0]) == kSegKindCount &&
              enumTableInOrder(kSegKindNames));

enum class BufId : int { Send = 0, Recv = 1 };

// A run of `count` elements at element offset `offset` of buffer `buf`, whose element i holds the
// pattern value for global index `indexBase + i`, generated with seed mix(baseSeed, stream).
struct Segment {
  BufId buf = BufId::Recv;
  SegKind kind = SegKind::Zero;
  uint64_t offset = 0;
  uint64_t count = 0;
  uint64_t indexBase = 0;
  uint64_t stream = 0;
  int rank = 0;
};

// Per-peer element counts and displacements (alltoallv only).
struct PeerCounts {
  std::vector<uint64_t> sendCounts, sendDispls, recvCounts, recvDispls;
};

enum class Combine : int { Rank0 = 0, Mean = 1, Min = 2, Max = 3, Sum = 4 };

struct HalfSpec {
  Coll coll = Coll::AllReduce;
  DType dtype = DType::Float32;
  RedOp op = RedOp::Sum;
  int root = 0;
  bool inPlace = false;
  uint64_t count = 0;               // the count passed to the library ("count" column)
  uint64_t sendOffset = 0;          // element offset of the send pointer in its buffer (in-place layouts)
  uint64_t recvOffset = 0;          // element offset of the recv pointer in the recv buffer
  uint64_t rotateBytes = 0;         // B of nccl-tests' buffer rotation: max(sendBytes, recvBytes)
  uint64_t maxBytes = 0;            // the sweep's maximum size: rotation wraps at floor(maxBytes / B)
  PeerCounts peers;                 // alltoallv
  std::vector<Segment> fill;        // inputs written before every checked op (and before timing)
  std::vector<Segment> expect;      // expected recv-buffer contents after the op
  int iters = 20;                   // -n
  int aggIters = 1;                 // -m
  int blocking = 0;                 // -z 0..3
  bool perIter = false;             // -I
  int checkRounds = 1;              // -c (0: no check)
  uint64_t checkSeed = 1;           // seed of this half's check (nccl-tests: per-thread counter)
  Combine average = Combine::Mean;  // -a
  uint64_t unalignElems = 0;        // -u
  int graphLaunches = 0;            // -G: capture the timed ops once, replay them this many times
  bool arrivals = false;            // record when each iteration starts and gather it (HalfResult::arrivalUs)
};

struct FirstWrong {
  int rank = -1;
  uint64_t index = 0;         // element index in the recv buffer
  std::string expected, got;  // values as text (decoded number and raw bits)
};

struct HalfResult {
  double timeUs = 0;     // per op, combined across ranks per -a
  double cpuTimeUs = 0;  // per op enqueue time, this rank only (as nccl-tests)
  bool checked = false;
  double wrong = 0;                   // global wrong-element count of the last round
  int ranksWithWrong = 0;             // ranks whose local count was > 0 (the footer's out-of-bounds unit)
  FirstWrong firstWrong;              // valid when wrong > 0 (lowest rank with a wrong element)
  std::vector<double> iterUs;         // -I: max over ranks per iteration (valid on rank 0)
  std::vector<double> perRankIterUs;  // -I: nranks x iters, rank-major (valid on rank 0)
  // When each iteration started on each process: processes x iters, process-major, in microseconds of that
  // process's own monotonic clock (valid on rank 0; empty for 1 process and with -G). Who arrives last at a
  // collective is who the others wait for; bench/numbers/lateness.ts puts the clocks together and names it.
  // With device arrivals (a device timer, -I: core/device_arrivals.h) arrivalUs holds instead one row per rank: the
  // device time from that rank's reference mark to its stream reaching each iteration; deviceRefUs, per rank, the
  // reference's host time (µs of its process's monotonic clock) and the half-width of the window it fell in; and
  // enqueueUs the host arrivals (processes x iters) arrivalUs would otherwise hold.
  std::vector<double> arrivalUs;
  int arrivalIters = 0;             // row width of arrivalUs
  std::vector<double> deviceRefUs;  // ranks x 2
  std::vector<double> enqueueUs;    // processes x arrivalIters
};

}  // namespace collbench
