// Keeps the process's other threads (JavaScript, V8's and libuv's workers, progress threads) off the timed loop's CPU:
// the executor on one CPU of the process's set, every other thread on the rest, for one process alone on its host
// (bench/engine/loop-cpu.ts decides; docs/performance.md).
#pragma once
#include <vector>

#include "../core/status.h"

namespace collbench::addon {

// The CPUs the calling thread may run on (sched_getaffinity), ascending; an error on a system without it.
Status allowedCpus(std::vector<int>* out);

// Runs on the executor thread: pins it to `cpu` (one of its allowed CPUs) and moves every other thread of the
// process to the remaining ones (threads created afterwards inherit their creator's set). `others` receives them.
Status isolateCallingThread(int cpu, std::vector<int>* others);

}  // namespace collbench::addon
