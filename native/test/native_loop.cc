// The third column of scripts/bench-overhead.ts (--native-loop): collbench's own timed loop (core/timed_loop.cc
// benchHalf, warmup) over its MPI or Gloo backend, driven from C++ with no Node and no other thread of collbench's,
// on the sweep of plain_mpi_loop.c / plain_gloo_loop.cc (same options, buffers, layouts, rotation and output).
// Beside the plain loop it says what the loop itself adds; beside collbench, what running inside a Node process adds.
// Built twice: native_mpi_loop, and native_gloo_loop with NATIVE_LOOP_GLOO (rank and size from the launcher's
// environment, as plain_gloo_loop). Errors: the Status, exit 3.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#ifdef NATIVE_LOOP_GLOO
#include "backends/gloo/gloo_backend.h"
#include "plain_world.h"
#else
#include "backends/mpi/mpi_backend.h"
#endif
#include "core/timed_loop.h"
#include "plain_layout.h"
#include "plain_size.h"
#include "plain_start.h"

using namespace collbench;

namespace {

#ifdef NATIVE_LOOP_GLOO
using LoopBackend = GlooBackend;
constexpr const char* kProgram = "native_gloo_loop";
constexpr const char* kExtraUsage = " [--store DIR] [--hostname ADDR]";
#else
using LoopBackend = MpiBackend;
constexpr const char* kProgram = "native_mpi_loop";
constexpr const char* kExtraUsage = "";
#endif

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s -c COLL [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-r ROOT] "
               "[-i 0|1] [-s DELAY_MS]%s\n",
               kProgram, msg, kProgram, kExtraUsage);
  std::exit(2);
}

void check(const Status& s, const char* what) {
  if (s.ok) return;
  std::fprintf(stderr, "%s: %s failed: %s %s (%s)\n", kProgram, what, s.code().c_str(), s.message().c_str(),
               s.site().c_str());
  std::exit(3);
}

long parseInt(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 0);
  if (end == s || *end != '\0') usage("bad integer");
  return v;
}

size_t parseSize(const char* s) {
  const char* bad = nullptr;
  const size_t v = plainParseSize(s, &bad);
  if (bad != nullptr) usage(bad);
  return v;
}

const Coll kColl[] = {Coll::AllReduce, Coll::AllGather,     Coll::AllToAll,
                      Coll::Broadcast, Coll::ReduceScatter, Coll::SendRecv};

// One row-half as bench/engine/half-spec.ts halfSpec() builds it for float sum, -c 0, -a 3 (max over ranks).
HalfSpec halfOf(enum coll c, const struct layout& l, size_t maxBytes, int iters, int root, int rank, bool inPlace) {
  HalfSpec h;
  h.coll = kColl[c];
  h.dtype = DType::Float32;
  h.op = RedOp::Sum;
  h.root = root;
  h.inPlace = inPlace;
  h.count = l.count;
  // In place, all_gather sends this rank's block of the recv buffer; reduce_scatter leaves its result there.
  h.sendOffset = inPlace && c == ALL_GATHER ? static_cast<uint64_t>(rank) * l.count : 0;
  h.recvOffset = inPlace && c == REDUCE_SCATTER ? static_cast<uint64_t>(rank) * l.count : 0;
  h.rotateBytes = l.rotateBytes;
  h.maxBytes = maxBytes;
  h.iters = iters;
  h.checkRounds = 0;
  h.average = Combine::Max;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int coll = -1, iters = 20, warm = 1, root = 0, inPlace = 1;
  long startDelayMs = 0;
  size_t minBytes = 8, maxBytes = 4u << 20, factor = 2;
  std::string storeDir, host = "127.0.0.1";  // gloo: loopback, as collbench's gloo driver on one host
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const char* v = argv[++i];
    if (!std::strcmp(a, "-c") || !std::strcmp(a, "--coll")) {
      coll = plainCollByName(v);
      if (coll < 0) usage("unknown collective");
    } else if (!std::strcmp(a, "-b"))
      minBytes = parseSize(v);
    else if (!std::strcmp(a, "-e"))
      maxBytes = parseSize(v);
    else if (!std::strcmp(a, "-f"))
      factor = static_cast<size_t>(parseInt(v));
    else if (!std::strcmp(a, "-n"))
      iters = static_cast<int>(parseInt(v));
    else if (!std::strcmp(a, "-w"))
      warm = static_cast<int>(parseInt(v));
    else if (!std::strcmp(a, "-r"))
      root = static_cast<int>(parseInt(v));
    else if (!std::strcmp(a, "-i") || !std::strcmp(a, "--in-place"))
      inPlace = static_cast<int>(parseInt(v));
    else if (!std::strcmp(a, "-s"))
      startDelayMs = static_cast<long>(parseInt(v));
#ifdef NATIVE_LOOP_GLOO
    else if (!std::strcmp(a, "--store"))
      storeDir = v;
    else if (!std::strcmp(a, "--hostname"))
      host = v;
#endif
    else
      usage("unknown option");
  }
  if (coll < 0) usage("-c COLL is required");
  if (minBytes == 0 || minBytes > maxBytes || factor < 2 || iters < 1 || warm < 0) usage("bad sweep");
  const auto c = static_cast<enum coll>(coll);
  plainStartDelay(startDelayMs);

  std::unique_ptr<LoopBackend> b;
#ifdef NATIVE_LOOP_GLOO
  // As collbench's gloo driver: in-memory store for one rank, else a FileStore directory (plain_world.h).
  const PlainWorld world = plainWorld(storeDir);
  if (!world.error.empty()) usage(world.error.c_str());
  GlooConfig config;
  config.rank = world.rank;
  config.size = world.size;
  config.store = world.storeDir.empty() ? "" : "file:" + world.storeDir;
  config.runId = "native";
  config.hostname = host;
  check(GlooBackend::create(config, &b), "GlooBackend::create");
#else
  check(MpiBackend::create(&b), "MpiBackend::create");
#endif
  const int rank = b->rank(), nranks = b->nranks();
  if (root < 0 || root >= nranks) usage("root is not a rank");

  // One allocation for the run, as plain_mpi_loop.c (run.ts allocateBuffers).
  const struct layout top = layoutOf(c, maxBytes, nranks);
  const size_t sendBytes = std::max(maxBytes, top.sendElems * kTs), recvBytes = std::max(maxBytes, top.recvElems * kTs);
  check(b->allocate(sendBytes + 64, recvBytes + 64), "allocate");
  if (rank == 0) {
    std::printf("# %s %s float sum, %d ranks, %d iters, %d warm-up, %s\n", kProgram, ::kCollNames[coll], nranks, iters,
                warm, LoopBackend::libraryVersionShort().c_str());
    std::printf("# size_requested size_bytes count out_of_place_us in_place_us\n");
    std::fflush(stdout);
  }
  for (size_t size = minBytes; size <= maxBytes; size *= 2)  // warm-up sweep (run.ts warmupSizes)
    check(warmup(*b, halfOf(c, layoutOf(c, size, nranks), maxBytes, iters, root, rank, false), warm), "warmup");
  for (size_t size = minBytes; size <= maxBytes; size *= factor) {
    const struct layout l = layoutOf(c, size, nranks);
    HalfResult oop, ip;
    check(benchHalf(*b, halfOf(c, l, maxBytes, iters, root, rank, false), &oop), "benchHalf (out of place)");
    if (inPlace) check(benchHalf(*b, halfOf(c, l, maxBytes, iters, root, rank, true), &ip), "benchHalf (in place)");
    if (rank == 0) {
      std::printf("%zu %zu %zu %.4f %.4f\n", size, l.rotateBytes, l.count, oop.timeUs, inPlace ? ip.timeUs : -1.0);
      std::fflush(stdout);
    }
  }
  check(b->finalize(), "finalize");
#ifdef NATIVE_LOOP_GLOO
  plainWorldDone(world);
#endif
  return 0;
}
