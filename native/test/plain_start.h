/* The start delay of the reference loops (plain_mpi_loop.c, plain_gloo_loop.cc, native_loop.cc: -s MS): they sleep
 * before they initialise, so that their first timed op comes about as long after exec as collbench's does (Node's
 * start-up). On some machines the time since exec changes the speed of memory-bound ops by 5-10 %, even if the process
 * only slept (scripts/bench-overhead.ts --start-delay-ms; docs/performance.md). C and C++ alike. */
#ifndef COLLBENCH_PLAIN_START_H
#define COLLBENCH_PLAIN_START_H
#include <errno.h>
#include <time.h>

/* Sleeps ms milliseconds (0: not at all), resuming after signals. */
static inline void plainStartDelay(long ms) {
  struct timespec t;
  if (ms <= 0) return;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}
#endif
