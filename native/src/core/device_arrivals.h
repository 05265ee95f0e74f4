// Arrivals on the device's clock (issue 29): at -z 0 the host enqueues every iteration ahead of the GPU, so its clock
// says nothing about which GPU reached a collective last. With -I the timed loop already records a device mark before
// each iteration on every local stream; this puts a reference mark of known host time beside them, so that each mark
// can be placed on the host clock (bench/core/device-arrivals.ts does the mapping and alignment). Plus the test hook
// COLLBENCH_TEST_GPU_DELAY, a device-side busy wait before one iteration of one rank's stream (docs/reliability.md,
// "Late ranks").
#pragma once
#include <vector>

#include "backend.h"

namespace collbench {

// COLLBENCH_TEST_GPU_DELAY=MICROS:ITER[:RANK]: a busy wait of MICROS µs on global rank RANK's stream (default 0)
// just before iteration ITER's device mark (ITER `all`: before every iteration). Unset: iter == kNone.
struct DeviceDelay {
  static constexpr int kNone = -2, kAll = -1;
  int iter = kNone;
  int local = -1;  // the local rank it applies to; -1: another process's
  double micros = 0;
  bool due(int i) const { return local >= 0 && (iter == i || iter == kAll); }
};
Status deviceDelayFromEnv(const Backend& backend, int iters, DeviceDelay* out);

// One row-half's device arrivals.
class DeviceArrivals {
 public:
  // After the row's barrier, streams idle: a reference mark per local rank, bracketed by host clock readings.
  Status begin(Backend& backend);
  // After completion: per local rank, the device time from its reference to mark `stride`·i for each of `iters`
  // iterations; gathered to rank 0 with the references (HalfResult::arrivalUs rank rows, deviceRefUs).
  Status gather(Backend& backend, int iters, int stride, HalfResult* result) const;

 private:
  std::vector<double> refs_;  // per local rank: host time of its reference (µs, monotonic), half-width of its window
};

}  // namespace collbench
