// The one host clock of the timed loop (its times and host arrivals), the clock-alignment samples and the device
// arrivals' host references: steady_clock, read in µs since its epoch. Their values are compared with each other
// (core/device_arrivals.cc maps device events onto it), so they must come from this one definition.
#pragma once

#include <chrono>

namespace collbench {

using Clock = std::chrono::steady_clock;

inline double clockMicros(Clock::time_point t = Clock::now()) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

}  // namespace collbench
