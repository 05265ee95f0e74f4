// The plain-Gloo reference of scripts/bench-overhead.ts: for one of collbench's collectives, the Gloo calls
// collbench's gloo backend makes (gloo_collectives.cc, default algorithm) on the same buffers, timed as collbench
// reports time (nccl-tests: warm-up sweep, untimed op + barrier, host clock over n rotated ops, max over ranks), and
// nothing else: no collbench code (kept_options.h aside), no Node, no worker thread. Any Gloo exception is printed
// with the rank (exit 3).
#include "plain_size.h"
#include "plain_start.h"
#include "plain_world.h"
#include "../src/backends/gloo/kept_options.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

namespace {

// Each call's options kept for a few calls, as collbench's backend and Gloo's own benchmark keep theirs: destroyed as
// the call returns, Gloo's unbound buffers wait for its device thread (kept_options.h), up to a scheduler tick per op.
collbench::KeptOptions gKept;

enum Coll { kAllReduce, kAllGather, kAlltoall, kBroadcast, kReduceScatter, kSendRecv };
const char* const kCollNames[] = {"all_reduce", "all_gather", "alltoall", "broadcast", "reduce_scatter", "sendrecv"};
constexpr uint32_t kTag = 0;              // gloo_backend.h kTag
constexpr uint8_t kP2PSlotPrefix = 0x43;  // gloo_collectives.cc kP2PSlotPrefix
constexpr size_t kTs = sizeof(float);
constexpr size_t kPage = 4096;
constexpr int kTimeoutMs = 30000;  // collbench's default COLLBENCH_GLOO_TIMEOUT_MS
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// Usage: plain_gloo_loop -c COLL [-b 8] [-e 4M] [-f 2] [-n 20] [-w 1] [-r 0] [-i 1] [--store DIR] [--hostname H]
//   COLL: all_reduce all_gather alltoall broadcast reduce_scatter sendrecv (float, sum)
//   -i/--in-place 0|1: also run (and time) the in-place half of each row, as collbench does (default 1)
//   Rank and size: OMPI_COMM_WORLD_RANK/SIZE (mpirun -np N), PMI_RANK/PMI_SIZE or RANK/WORLD_SIZE; else 1 rank
//   (in-memory HashStore). Several ranks meet in a FileStore: --store DIR, else $TMPDIR/plain-gloo-<job id>.
// Rank 0 prints "# ..." lines, then per size: size_requested size_bytes count oop_us ip_us (ip_us -1 with -i 0).
[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "plain_gloo_loop: %s\nusage: plain_gloo_loop -c COLL [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
               "[-w WARMUP] [-r ROOT] [-i 0|1] [-s DELAY_MS] [--store DIR] [--hostname ADDR]\n",
               msg);
  std::exit(2);
}

size_t parseSize(const char* s) {
  const char* bad = nullptr;
  const size_t v = plainParseSize(s, &bad);
  if (bad != nullptr) usage(bad);
  return v;
}

long parseInt(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 0);
  if (end == s || *end != '\0') usage("bad integer");
  return v;
}

// Page-aligned, page-rounded, zeroed (HostMemoryBackend::HostBuffer::allocate).
char* hostBuffer(size_t n) {
  size_t size = std::max(kPage, (n + kPage - 1) / kPage * kPage);
  void* p = nullptr;
  if (posix_memalign(&p, kPage, size) != 0 || p == nullptr) {
    std::fprintf(stderr, "plain_gloo_loop: cannot allocate %zu bytes\n", size);
    std::exit(3);
  }
  std::memset(p, 0, size);
  return static_cast<char*>(p);
}

// The counts of one row (the layout() of bench/collectives, float): count, elements sent and received,
// and nccl-tests' rotation step B = max(send, recv) bytes.
struct Layout {
  size_t count, sendElems, recvElems, rotateBytes;
};

Layout layoutOf(Coll c, size_t size, int n) {
  const size_t total = size / kTs;
  size_t per = total / static_cast<size_t>(n);
  per -= per % (16 / kTs);  // chunkElems: 16-byte granularity
  Layout l{};
  switch (c) {
    case kAllGather:
      l = {per, per, per * n, 0};
      break;
    case kAlltoall:
      l = {per, per * n, per * n, 0};
      break;
    case kReduceScatter:
      l = {per, per * n, per, 0};
      break;
    default:
      l = {total, total, total, 0};
      break;
  }
  l.rotateBytes = std::max(l.sendElems, l.recvElems) * kTs;
  return l;
}

size_t slots(const Layout& l, size_t maxBytes) {
  if (l.rotateBytes == 0 || maxBytes < l.rotateBytes) return 1;
  return maxBytes / l.rotateBytes;
}

struct Ctx {
  Coll coll;
  int rank, size, root;
  std::shared_ptr<gloo::Context> data, ctrl;  // collbench: data_ (collectives), ctrl_ (barrier, combine)
  char *send, *recv, *scratch;
};

void dataAllreduce(const Ctx& x, const float* input, float* output, size_t count) {
  auto& opts = gKept.make<gloo::AllreduceOptions>(x.data);
  if (input != nullptr) opts.setInput<float>(const_cast<float*>(input), count);
  opts.setOutput<float>(output, count);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::UNSPECIFIED);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
  opts.setTag(kTag);
  gloo::allreduce(opts);
}

// One op, exactly as GlooBackend::enqueue runs it for float sum and the default algorithm (minus its
// argument checks).
void op(const Ctx& x, const Layout& l, bool inPlace, size_t shift) {
  char* send = (inPlace ? x.recv : x.send) + shift;
  char* recv = x.recv + shift;
  const size_t bytes = l.count * kTs;
  if (l.count == 0) return;  // collbench makes no Gloo call for an empty op
  switch (x.coll) {
    case kAllReduce:
      dataAllreduce(x, inPlace ? nullptr : reinterpret_cast<float*>(send), reinterpret_cast<float*>(recv), l.count);
      break;
    case kAllGather: {  // in place, this rank's chunk already sits at recv + rank*count
      auto& opts = gKept.make<gloo::AllgatherOptions>(x.data);
      if (!inPlace) opts.setInput<uint8_t>(reinterpret_cast<uint8_t*>(send), bytes);
      opts.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(recv), bytes * x.size);
      opts.setTag(kTag);
      gloo::allgather(opts);
      break;
    }
    case kAlltoall: {  // in place: the same buffer twice
      auto& opts = gKept.make<gloo::AlltoallOptions>(x.data);
      opts.setInput<uint8_t>(reinterpret_cast<uint8_t*>(send), bytes * x.size);
      opts.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(recv), bytes * x.size);
      opts.setTag(kTag);
      gloo::alltoall(opts);
      break;
    }
    case kBroadcast: {  // out of place the root's send buffer is Gloo's input (it copies it to recv)
      auto& opts = gKept.make<gloo::BroadcastOptions>(x.data);
      if (x.rank == x.root && !inPlace) opts.setInput<uint8_t>(reinterpret_cast<uint8_t*>(send), bytes);
      opts.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(recv), bytes);
      opts.setRoot(x.root);
      opts.setTag(kTag);
      gloo::broadcast(opts);
      break;
    }
    case kReduceScatter: {
      // As collbench and PyTorch's ProcessGroupGloo: an all-reduce of the whole input, then this rank's
      // block. Out of place into the scratch buffer, then copied; in place the full buffer is the recv
      // buffer and the block already sits at recv + rank*count (collbench's recv pointer there).
      const size_t total = l.count * x.size;
      if (inPlace) {
        dataAllreduce(x, nullptr, reinterpret_cast<float*>(recv), total);
      } else {
        dataAllreduce(x, reinterpret_cast<float*>(send), reinterpret_cast<float*>(x.scratch), total);
        std::memcpy(recv, x.scratch + bytes * x.rank, bytes);
      }
      break;
    }
    case kSendRecv: {
      if (x.size == 1) {
        if (send != recv) std::memmove(recv, send, bytes);
        break;
      }
      const int next = (x.rank + 1) % x.size, prev = (x.rank - 1 + x.size) % x.size;
      auto& out = gKept.adopt(x.data->createUnboundBuffer(send, bytes));
      auto& in = gKept.adopt(x.data->createUnboundBuffer(recv, bytes));
      const auto slot = gloo::Slot::build(kP2PSlotPrefix, 0);
      in.recv(prev, slot);
      out.send(next, slot);
      in.waitRecv();
      out.waitSend();
      break;
    }
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void barrier(const Ctx& x) {
  auto& opts = gKept.make<gloo::BarrierOptions>(x.ctrl);
  opts.setTag(kTag);
  gloo::barrier(opts);
}

// One row-half (benchRanks): untimed op, barrier, n timed ops with rotation, max over ranks, barrier.
double half(const Ctx& x, const Layout& l, size_t maxBytes, int iters, bool inPlace) {
  const size_t s = slots(l, maxBytes);
  op(x, l, inPlace, 0);
  barrier(x);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) op(x, l, inPlace, l.rotateBytes * (static_cast<size_t>(i) % s));
  double us = (now() - t0) * 1e6 / iters;
  if (x.size > 1) {  // -a 3 (collbench skips the call in a 1-rank world)
    auto& opts = gKept.make<gloo::AllreduceOptions>(x.ctrl);
    opts.setOutput<double>(&us, 1);
    opts.setReduceFunction(static_cast<ReduceFn>(&gloo::max<double>));
    opts.setTag(kTag);
    gloo::allreduce(opts);
  }
  barrier(x);
  return us;
}

std::shared_ptr<gloo::Context> connect(int rank, int size, gloo::rendezvous::Store& runStore, const char* name,
                                       std::shared_ptr<gloo::transport::Device>& device) {
  auto c = std::make_shared<gloo::rendezvous::Context>(rank, size);
  c->setTimeout(std::chrono::milliseconds(kTimeoutMs));
  gloo::rendezvous::PrefixStore store(name, runStore);
  c->connectFullMesh(store, device);
  return c;
}

int run(int argc, char** argv) {
  int coll = -1, iters = 20, warm = 1, root = 0, inPlace = 1;
  long startDelayMs = 0;
  size_t minBytes = 8, maxBytes = 4u << 20, factor = 2;
  std::string storeDir, host = "127.0.0.1";  // loopback, as collbench's gloo driver on one host
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const char* v = argv[++i];
    if (a == "-c" || a == "--coll") {
      for (int k = 0; k < 6; ++k)
        if (std::string(v) == kCollNames[k] || std::string(v) == std::string(kCollNames[k]) + "_perf") coll = k;
      if (coll < 0) usage("unknown collective");
    } else if (a == "-b")
      minBytes = parseSize(v);
    else if (a == "-e")
      maxBytes = parseSize(v);
    else if (a == "-f")
      factor = static_cast<size_t>(parseInt(v));
    else if (a == "-n")
      iters = static_cast<int>(parseInt(v));
    else if (a == "-w")
      warm = static_cast<int>(parseInt(v));
    else if (a == "-r")
      root = static_cast<int>(parseInt(v));
    else if (a == "-i" || a == "--in-place")
      inPlace = static_cast<int>(parseInt(v));
    else if (a == "-s")
      startDelayMs = static_cast<long>(parseInt(v));
    else if (a == "--store")
      storeDir = v;
    else if (a == "--hostname")
      host = v;
    else
      usage("unknown option");
  }
  if (coll < 0) usage("-c COLL is required");
  if (minBytes == 0 || minBytes > maxBytes || factor < 2 || iters < 1 || warm < 0) usage("bad sweep");
  plainStartDelay(startDelayMs);

  Ctx x{};
  x.coll = static_cast<Coll>(coll);
  const PlainWorld world = plainWorld(storeDir);
  if (!world.error.empty()) usage(world.error.c_str());
  x.rank = world.rank;
  x.size = world.size;
  if (root < 0 || root >= x.size) usage("root is not a rank");
  x.root = root;

  // Rendezvous: in-memory for 1 rank, else a FileStore directory both ranks derive from the job.
  std::unique_ptr<gloo::rendezvous::Store> base;
  if (world.storeDir.empty())
    base = std::make_unique<gloo::rendezvous::HashStore>();
  else
    base = std::make_unique<gloo::rendezvous::FileStore>(world.storeDir);
  gloo::rendezvous::PrefixStore runStore("plain", *base);
  gloo::transport::tcp::attr attr;
  attr.hostname = host;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  x.ctrl = connect(x.rank, x.size, runStore, "ctrl", device);
  x.data = connect(x.rank, x.size, runStore, "data", device);

  // One allocation for the run (run.ts allocateBuffers): max(maxBytes, need at maxBytes) + 64 slack;
  // reduce_scatter's scratch as GlooBackend::scratchReserve sizes it (2 * larger buffer + 128).
  const Layout top = layoutOf(x.coll, maxBytes, x.size);
  const size_t sendBytes = std::max(maxBytes, top.sendElems * kTs) + 64;
  const size_t recvBytes = std::max(maxBytes, top.recvElems * kTs) + 64;
  x.send = hostBuffer(sendBytes);
  x.recv = hostBuffer(recvBytes);
  x.scratch = x.coll == kReduceScatter ? hostBuffer(2 * std::max(sendBytes, recvBytes) + 128) : nullptr;

  if (x.rank == 0) {
    std::printf("# plain_gloo_loop %s float sum, %d ranks, %d iters, %d warm-up, Gloo %d.%d.%d tcp %s, store %s\n",
                kCollNames[coll], x.size, iters, warm, GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH,
                host.c_str(), x.size == 1 ? "hash" : world.storeDir.c_str());
    std::printf("# size_requested size_bytes count out_of_place_us in_place_us\n");
    std::fflush(stdout);
  }
  // Warm-up sweep (warmupSizes): min, 2*min, ... <= max, out of place, rotating.
  for (size_t size = minBytes; size <= maxBytes; size *= 2) {
    const Layout l = layoutOf(x.coll, size, x.size);
    const size_t s = slots(l, maxBytes);
    for (int i = 0; i < warm; ++i) op(x, l, false, l.rotateBytes * (static_cast<size_t>(i) % s));
  }
  for (size_t size = minBytes; size <= maxBytes; size *= factor) {
    const Layout l = layoutOf(x.coll, size, x.size);
    const double oop = half(x, l, maxBytes, iters, false);
    const double ip = inPlace ? half(x, l, maxBytes, iters, true) : -1.0;
    if (x.rank == 0) {
      std::printf("%zu %zu %zu %.4f %.4f\n", size, l.rotateBytes, l.count, oop, ip);
      std::fflush(stdout);
    }
  }
  barrier(x);  // collbench's finalize: a last barrier, then close
  gKept.clear();
  x.data->closeConnections();
  x.ctrl->closeConnections();
  plainWorldDone(world);
  std::free(x.send);
  std::free(x.recv);
  std::free(x.scratch);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string err;
  const int rank =
      plainEnvInt("OMPI_COMM_WORLD_RANK", plainEnvInt("PMI_RANK", plainEnvInt("RANK", 0, &err), &err), &err);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plain_gloo_loop: rank %d: %s\n", rank, e.what());
  } catch (...) {
    std::fprintf(stderr, "plain_gloo_loop: rank %d: unknown exception\n", rank);
  }
  return 3;
}
