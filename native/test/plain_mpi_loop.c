/* The plain-MPI reference of scripts/bench-overhead.ts: for one of collbench's collectives, the MPI calls
 * collbench's mpi backend makes (mpi_collectives.cc) on the same buffers, timed as collbench reports time (nccl-tests:
 * warm-up sweep, untimed op + barrier, host clock over n rotated ops, max over ranks), and nothing else: no
 * collbench code, no Node, no worker thread. Every MPI return code is checked (message, exit 3). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plain_layout.h"
#include "plain_size.h"
#include "plain_start.h"

static const int kTag = 0x4342; /* mpi_collectives.cc kTag */
static const size_t kPage = 4096;

static int gRank = 0;

static void die(const char* what, int rc) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  fprintf(stderr, "plain_mpi_loop: rank %d: %s failed: %s\n", gRank, what, text);
  MPI_Abort(MPI_COMM_WORLD, 3);
  exit(3);
}
#define CHECK(call)                          \
  do {                                       \
    const int rc_ = (call);                  \
    if (rc_ != MPI_SUCCESS) die(#call, rc_); \
  } while (0)

/* Usage: plain_mpi_loop -c COLL [-b 8] [-e 4M] [-f 2] [-n 20] [-w 1] [-r 0] [-t serialized] [-i 1]
 *   COLL: all_reduce all_gather alltoall broadcast reduce_scatter sendrecv (float, sum)
 *   -t/--thread-level single|funneled|serialized|multiple (collbench requests serialized)
 *   -i/--in-place 0|1: also run (and time) the in-place half of each row, as collbench does (default 1)
 * Rank 0 prints "# ..." lines, then per size: size_requested size_bytes count oop_us ip_us (ip_us -1 with -i 0). */
static void usage(const char* msg) {
  fprintf(stderr,
          "plain_mpi_loop: %s\nusage: plain_mpi_loop -c COLL [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
          "[-w WARMUP] [-r ROOT] [-t single|funneled|serialized|multiple] [-i 0|1] [-s DELAY_MS]\n",
          msg);
  exit(2);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t); /* std::chrono::steady_clock on Linux */
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* K/M/G binary suffixes, as collbench's -b/-e. */
static size_t parseSize(const char* s) {
  const char* bad = NULL;
  const size_t v = plainParseSize(s, &bad);
  if (bad != NULL) usage(bad);
  return v;
}

static long parseInt(const char* s) {
  char* end = NULL;
  const long v = strtol(s, &end, 0);
  if (end == s || *end != '\0') usage("bad integer");
  return v;
}

/* Page-aligned, page-rounded, zeroed (HostMemoryBackend::HostBuffer::allocate). */
static char* hostBuffer(size_t n) {
  size_t size = (n + kPage - 1) / kPage * kPage;
  if (size < kPage) size = kPage;
  void* p = NULL;
  if (posix_memalign(&p, kPage, size) != 0 || p == NULL) {
    fprintf(stderr, "plain_mpi_loop: cannot allocate %zu bytes\n", size);
    exit(3);
  }
  memset(p, 0, size);
  return (char*)p;
}

struct ctx {
  enum coll coll;
  MPI_Comm comm; /* data collectives (collbench: comm_, a dup of MPI_COMM_WORLD) */
  MPI_Comm ctrl; /* barrier and time combine (collbench: ctrl_) */
  int rank, nranks, root;
  char *send, *recv;
};

/* One op, exactly as MpiBackend::enqueue runs it for float sum (minus its argument checks). */
static void op(const struct ctx* x, const struct layout* l, int inPlace, size_t shift) {
  const int n = (int)l->count;
  char* recvBase = x->recv + shift;
  switch (x->coll) {
    case ALL_REDUCE:
      if (inPlace)
        CHECK(MPI_Allreduce(MPI_IN_PLACE, recvBase, n, MPI_FLOAT, MPI_SUM, x->comm));
      else
        CHECK(MPI_Allreduce(x->send + shift, recvBase, n, MPI_FLOAT, MPI_SUM, x->comm));
      break;
    case ALL_GATHER: /* in place: this rank's chunk already sits at recv + rank*count */
      CHECK(MPI_Allgather(inPlace ? MPI_IN_PLACE : x->send + shift, n, MPI_FLOAT, recvBase, n, MPI_FLOAT, x->comm));
      break;
    case ALLTOALL:
      CHECK(MPI_Alltoall(inPlace ? MPI_IN_PLACE : x->send + shift, n, MPI_FLOAT, recvBase, n, MPI_FLOAT, x->comm));
      break;
    case BROADCAST: /* out of place the root's send bytes are in recv already (half(): MPI_Bcast never changes them) */
      CHECK(MPI_Bcast(recvBase, n, MPI_FLOAT, x->root, x->comm));
      break;
    case REDUCE_SCATTER:
      if (inPlace) {
        /* send = the full recv buffer, recv = its slice at rank*count: the result is moved there */
        char* slice = recvBase + l->count * kTs * (size_t)x->rank;
        CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, recvBase, n, MPI_FLOAT, MPI_SUM, x->comm));
        if (slice != recvBase) memmove(slice, recvBase, l->count * kTs);
      } else {
        CHECK(MPI_Reduce_scatter_block(x->send + shift, recvBase, n, MPI_FLOAT, MPI_SUM, x->comm));
      }
      break;
    case SENDRECV: {
      const int next = (x->rank + 1) % x->nranks, prev = (x->rank - 1 + x->nranks) % x->nranks;
      if (inPlace)
        CHECK(MPI_Sendrecv_replace(recvBase, n, MPI_FLOAT, next, kTag, prev, kTag, x->comm, MPI_STATUS_IGNORE));
      else
        CHECK(MPI_Sendrecv(x->send + shift, n, MPI_FLOAT, next, kTag, recvBase, n, MPI_FLOAT, prev, kTag, x->comm,
                           MPI_STATUS_IGNORE));
      break;
    }
  }
}

/* One row-half (benchRanks): untimed op, barrier, n timed ops with rotation, max over ranks, barrier. */
static double half(const struct ctx* x, const struct layout* l, size_t maxBytes, int iters, int inPlace) {
  const size_t s = slots(l, maxBytes);
  /* Broadcast out of place: the root copies every region the half's shifts use to recv once, untimed, as
     MpiBackend::runPrepared does (BcastFromSend); MPI_Bcast sends from there. */
  if (x->coll == BROADCAST && !inPlace && x->rank == x->root) {
    const size_t used = s < (size_t)iters ? s : (size_t)iters;
    memmove(x->recv, x->send, l->rotateBytes * (used - 1) + l->count * kTs);
  }
  op(x, l, inPlace, 0);
  CHECK(MPI_Barrier(x->ctrl));
  const double t0 = now();
  for (int i = 0; i < iters; ++i) op(x, l, inPlace, l->rotateBytes * ((size_t)i % s));
  double us = (now() - t0) * 1e6 / iters;
  CHECK(MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, x->ctrl)); /* -a 3 */
  CHECK(MPI_Barrier(x->ctrl));
  return us;
}

int main(int argc, char** argv) {
  int coll = -1, iters = 20, warm = 1, root = 0, inPlace = 1, level = MPI_THREAD_SERIALIZED;
  long startDelayMs = 0;
  size_t minBytes = 8, maxBytes = 4u << 20, factor = 2;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const char* v = argv[++i];
    if (!strcmp(a, "-c") || !strcmp(a, "--coll")) {
      coll = plainCollByName(v);
      if (coll < 0) usage("unknown collective");
    } else if (!strcmp(a, "-b"))
      minBytes = parseSize(v);
    else if (!strcmp(a, "-e"))
      maxBytes = parseSize(v);
    else if (!strcmp(a, "-f"))
      factor = (size_t)parseInt(v);
    else if (!strcmp(a, "-n"))
      iters = (int)parseInt(v);
    else if (!strcmp(a, "-w"))
      warm = (int)parseInt(v);
    else if (!strcmp(a, "-r"))
      root = (int)parseInt(v);
    else if (!strcmp(a, "-i") || !strcmp(a, "--in-place"))
      inPlace = (int)parseInt(v);
    else if (!strcmp(a, "-s"))
      startDelayMs = parseInt(v);
    else if (!strcmp(a, "-t") || !strcmp(a, "--thread-level")) {
      if (!strcmp(v, "single"))
        level = MPI_THREAD_SINGLE;
      else if (!strcmp(v, "funneled"))
        level = MPI_THREAD_FUNNELED;
      else if (!strcmp(v, "serialized"))
        level = MPI_THREAD_SERIALIZED;
      else if (!strcmp(v, "multiple"))
        level = MPI_THREAD_MULTIPLE;
      else
        usage("thread level: single, funneled, serialized or multiple");
    } else
      usage("unknown option");
  }
  if (coll < 0) usage("-c COLL is required");
  if (minBytes == 0 || minBytes > maxBytes || factor < 2 || iters < 1 || warm < 0) usage("bad sweep");
  plainStartDelay(startDelayMs);

  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, level, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "plain_mpi_loop: MPI_Init_thread failed\n");
    return 3;
  }
  CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  struct ctx x;
  memset(&x, 0, sizeof x);
  x.coll = (enum coll)coll;
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &x.rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &x.nranks));
  gRank = x.rank;
  if (root < 0 || root >= x.nranks) usage("root is not a rank");
  x.root = root;
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &x.comm));
  CHECK(MPI_Comm_set_errhandler(x.comm, MPI_ERRORS_RETURN));
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &x.ctrl));
  CHECK(MPI_Comm_set_errhandler(x.ctrl, MPI_ERRORS_RETURN));

  /* One allocation for the run (run.ts allocateBuffers): max(maxBytes, need at maxBytes) + 64 slack. */
  const struct layout top = layoutOf(x.coll, maxBytes, x.nranks);
  size_t sendBytes = maxBytes, recvBytes = maxBytes;
  if (top.sendElems * kTs > sendBytes) sendBytes = top.sendElems * kTs;
  if (top.recvElems * kTs > recvBytes) recvBytes = top.recvElems * kTs;
  x.send = hostBuffer(sendBytes + 64);
  x.recv = hostBuffer(recvBytes + 64);

  if (x.rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
    int len = 0;
    CHECK(MPI_Get_library_version(lib, &len));
    const char* names[] = {"single", "funneled", "serialized", "multiple"};
    const int lv[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
    const char* got = "?";
    for (int k = 0; k < 4; ++k)
      if (provided == lv[k]) got = names[k];
    lib[strcspn(lib, ",\n")] = '\0';
    printf("# plain_mpi_loop %s float sum, %d ranks, %d iters, %d warm-up, thread level %s, %s\n", kCollNames[coll],
           x.nranks, iters, warm, got, lib);
    printf("# size_requested size_bytes count out_of_place_us in_place_us\n");
    fflush(stdout);
  }

  /* Warm-up sweep (warmupSizes): min, 2*min, ... <= max, out of place, rotating. */
  for (size_t size = minBytes; size <= maxBytes; size *= 2) {
    const struct layout l = layoutOf(x.coll, size, x.nranks);
    const size_t s = slots(&l, maxBytes);
    for (int i = 0; i < warm; ++i) op(&x, &l, 0, l.rotateBytes * ((size_t)i % s));
  }
  for (size_t size = minBytes; size <= maxBytes; size *= factor) {
    const struct layout l = layoutOf(x.coll, size, x.nranks);
    const double oop = half(&x, &l, maxBytes, iters, 0);
    const double ip = inPlace ? half(&x, &l, maxBytes, iters, 1) : -1.0;
    if (x.rank == 0) {
      printf("%zu %zu %zu %.4f %.4f\n", size, l.rotateBytes, l.count, oop, ip);
      fflush(stdout);
    }
  }
  CHECK(MPI_Comm_free(&x.comm));
  CHECK(MPI_Comm_free(&x.ctrl));
  free(x.send);
  free(x.recv);
  CHECK(MPI_Finalize());
  return 0;
}
