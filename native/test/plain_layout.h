/* The sweep shape shared by the MPI reference loops of scripts/bench-overhead.ts (plain_mpi_loop.c: MPI calls only;
 * native_mpi_loop.cc: collbench's own timed loop without Node): the six collectives, each row's counts as
 * bench/collectives lays them out (float) and nccl-tests' buffer rotation. C and C++ alike. */
#ifndef COLLBENCH_PLAIN_LAYOUT_H
#define COLLBENCH_PLAIN_LAYOUT_H
#include <stddef.h>
#include <string.h>

enum coll { ALL_REDUCE, ALL_GATHER, ALLTOALL, BROADCAST, REDUCE_SCATTER, SENDRECV };
static const char* const kCollNames[] = {"all_reduce", "all_gather",     "alltoall",
                                         "broadcast",  "reduce_scatter", "sendrecv"};
static const size_t kTs = sizeof(float);

/* The collective named NAME or NAME_perf; -1 when none is. */
static inline int plainCollByName(const char* v) {
  for (int k = 0; k < 6; ++k) {
    const size_t n = strlen(kCollNames[k]);
    if (!strcmp(v, kCollNames[k]) || (!strncmp(v, kCollNames[k], n) && !strcmp(v + n, "_perf"))) return k;
  }
  return -1;
}

/* The counts of one row (the layout() of bench/collectives, float): count passed to MPI, elements sent
 * and received, and nccl-tests' rotation step B = max(send, recv) bytes. */
struct layout {
  size_t count, sendElems, recvElems, rotateBytes;
};

static inline struct layout layoutOf(enum coll c, size_t size, int n) {
  const size_t total = size / kTs;
  size_t per = total / (size_t)n;
  per -= per % (16 / kTs); /* chunkElems: 16-byte granularity */
  struct layout l;
  switch (c) {
    case ALL_GATHER:
      l.count = per;
      l.sendElems = per;
      l.recvElems = per * n;
      break;
    case ALLTOALL:
      l.count = per;
      l.sendElems = per * n;
      l.recvElems = per * n;
      break;
    case REDUCE_SCATTER:
      l.count = per;
      l.sendElems = per * n;
      l.recvElems = per;
      break;
    default:
      l.count = total;
      l.sendElems = total;
      l.recvElems = total;
      break;
  }
  l.rotateBytes = (l.sendElems > l.recvElems ? l.sendElems : l.recvElems) * kTs;
  return l;
}

/* nccl-tests' rotation: op i shifts send and recv by B * (i mod floor(maxBytes / B)). */
static inline size_t slots(const struct layout* l, size_t maxBytes) {
  if (l->rotateBytes == 0 || maxBytes < l->rotateBytes) return 1;
  return maxBytes / l->rotateBytes;
}

#endif
