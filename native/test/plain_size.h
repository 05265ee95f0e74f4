/* The size syntax of the plain reference loops (plain_mpi_loop.c, plain_gloo_loop.cc), shared so both read -b/-e
 * as collbench does: an integer (strtoull base 0) with an optional K/M/G binary suffix. C and C++ alike.
 * Returns 0 and sets *bad to the reason on malformed input. */
#ifndef COLLBENCH_PLAIN_SIZE_H
#define COLLBENCH_PLAIN_SIZE_H
#include <stddef.h>
#include <stdlib.h>

static inline size_t plainParseSize(const char* s, const char** bad) {
  char* end = NULL;
  const unsigned long long v = strtoull(s, &end, 0);
  size_t mul = 1;
  *bad = NULL;
  if (end == s) {
    *bad = "bad size";
    return 0;
  }
  switch (*end) {
    case 'k':
    case 'K':
      mul = 1024;
      ++end;
      break;
    case 'm':
    case 'M':
      mul = 1024 * 1024;
      ++end;
      break;
    case 'g':
    case 'G':
      mul = 1024ull * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (*end != '\0') {
    *bad = "bad size suffix";
    return 0;
  }
  return (size_t)v * mul;
}
#endif
