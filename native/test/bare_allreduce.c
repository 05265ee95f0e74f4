/* A bare MPI_Allreduce timing loop (float sum), the reference scripts/bench-overhead compares
 * collbench's all_reduce against. It times like nccl-tests (warm-up sweep, one untimed op + barrier,
 * host monotonic clock over n ops with the same buffer rotation, mean over ranks) and nothing more.
 * Usage: bare_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP   → rank 0 prints "bytes time_us". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "bare_allreduce: %s failed (%d)\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bare_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP\n");
    return 2;
  }
  const size_t minBytes = strtoull(argv[1], NULL, 0), maxBytes = strtoull(argv[2], NULL, 0);
  const size_t factor = strtoull(argv[3], NULL, 0);
  const int iters = atoi(argv[4]), warm = atoi(argv[5]);
  int provided, rank, nranks;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &nranks), "MPI_Comm_size");
  char *send = NULL, *recv = NULL;
  if (posix_memalign((void**)&send, 4096, maxBytes + 64) || posix_memalign((void**)&recv, 4096, maxBytes + 64)) {
    fprintf(stderr, "bare_allreduce: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (size_t i = 0; i < maxBytes / sizeof(float); ++i) ((float*)send)[i] = (float)(i % 1000) * 0.25f;
  memset(recv, 0, maxBytes + 64);

  for (size_t size = minBytes; size <= maxBytes; size *= 2) {
    const size_t count = size / sizeof(float), slots = size ? maxBytes / size : 1;
    for (int i = 0; i < warm; ++i)
      check(MPI_Allreduce(send + size * (i % slots), recv + size * (i % slots), (int)count, MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    if (size == 0) break;
  }
  for (size_t size = minBytes; size <= maxBytes; size = factor > 1 ? size * factor : size + 1048576) {
    const size_t count = size / sizeof(float), slots = size ? maxBytes / size : 1;
    check(MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const double t0 = now();
    for (int i = 0; i < iters; ++i)
      check(MPI_Allreduce(send + size * (i % slots), recv + size * (i % slots), (int)count, MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    double us = (now() - t0) * 1e6 / iters, sum = 0;
    check(MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    if (rank == 0) printf("%zu %.3f\n", size, sum / nranks);
    if (size == 0) break;
  }
  free(send);
  free(recv);
  check(MPI_Finalize(), "MPI_Finalize");
  return 0;
}
