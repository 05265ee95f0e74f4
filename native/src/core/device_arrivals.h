// Arrivals on the device's clock: at -z 0 the host enqueues ahead of the GPU, so only device marks say which GPU
// reached a collective last; a reference mark of known host time places -I's marks on the host clock
// (bench/numbers/lateness.ts). Plus COLLBENCH_TEST_GPU_DELAY, a device-side delay of one rank (test hook).
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
