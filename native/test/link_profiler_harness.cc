// Drives collbench's NCCL link profiler as NCCL does, without NCCL or a GPU: dlopen the library, dlsym its
// ncclProfiler_v5 table, init one context per rank, then replay a simulated ring (collective, proxy ops, proxy steps
// with their state records and sizes, kernel channels) in time order and read the rows back after each row-half.
//
//   link_profiler_harness LIB ring [--ranks 8] [--channels 8] [--halves 6] [--iters 8] [--steps 16]
//                         [--slow RANK:CHANNEL] [--factor 4.6] [--late RANK] [--late-us 400]
//                         [--split N] [--split-slow RANK]
//       prints JSON: per row-half, the plugin's collbenchProfilerReadJson (what collbench gathers), and the totals;
//       --split N: a second communicator of the first N ranks (as ncclCommSplit makes), its own ring after each of
//       the world's iterations, healthy or with --split-slow RANK's outgoing link slow by --factor;
//   link_profiler_harness LIB rows [--rows 3000]
//       thousands of row-halves, each a new collective kind, read and reset: checks the rows and that nothing is
//       dropped; then the same without resets: kinds past the table's capacity are counted as dropped, not kept.
//       Both modes count the allocations made inside the event calls (malloc interposed): there must be none.
//   link_profiler_harness LIB cost [--rows R]
//       R*100 proxy steps through the event calls on the real clock: the plugin's CPU cost per step.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "profiler/link_profiler.h"
#include "profiler/profiler_abi.h"

namespace {

using namespace collbench::profabi;

uint64_t g_now = 0;
uint64_t simClock() {
  return g_now;
}

// Allocations made while NCCL's thread is inside the plugin's event calls (malloc is interposed below).
bool g_inEventCall = false, g_inInit = false;
uint64_t g_eventAllocs = 0, g_initAllocs = 0;  // the latter proves the count live: init makes the context

struct Api {
  ProfilerTable* table = nullptr;
  int (*read)(int, CollbenchLinkRow*, int, int*, CollbenchCollRow*, int, int*, CollbenchKernelChRow*, int, int*,
              CollbenchProfilerTotals*) = nullptr;
  void (*setClock)(uint64_t (*)(void)) = nullptr;
  char* (*readJson)(int) = nullptr;
  void (*freeJson)(char*) = nullptr;
  int (*abi)(void) = nullptr;
};

[[noreturn]] void fail(const std::string& what) {
  fprintf(stderr, "link_profiler_harness: %s\n", what.c_str());
  exit(1);
}

void check(Result r, const char* call) {
  if (r != Success) fail(std::string(call) + " returned " + std::to_string(r));
}

// The event calls, as NCCL's threads make them, counting what they allocate.
struct InEventCall {
  InEventCall() { g_inEventCall = true; }
  ~InEventCall() { g_inEventCall = false; }
};
ProfilerTable* g_table = nullptr;
void startEvent(void* ctx, void** handle, EventDescr* d, const char* what) {
  InEventCall in;
  check(g_table->startEvent(ctx, handle, d), what);
}
void recordState(void* handle, int state, EventStateArgs* args, const char* what) {
  InEventCall in;
  check(g_table->recordEventState(handle, state, args), what);
}
void stopEvent(void* handle, const char* what) {
  InEventCall in;
  check(g_table->stopEvent(handle), what);
}

Api load(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // as NCCL opens NCCL_PROFILER_PLUGIN
  if (!lib) fail(std::string("dlopen: ") + dlerror());
  Api a;
  a.table = static_cast<ProfilerTable*>(dlsym(lib, "ncclProfiler_v5"));
  if (!a.table || !dlsym(lib, "ncclProfiler_v6")) fail("ncclProfiler_v5/_v6 not exported");
  a.read = reinterpret_cast<decltype(a.read)>(dlsym(lib, "collbenchProfilerRead"));
  a.setClock = reinterpret_cast<decltype(a.setClock)>(dlsym(lib, "collbenchProfilerSetClock"));
  a.abi = reinterpret_cast<decltype(a.abi)>(dlsym(lib, "collbenchProfilerAbi"));
  a.readJson = reinterpret_cast<decltype(a.readJson)>(dlsym(lib, "collbenchProfilerReadJson"));
  a.freeJson = reinterpret_cast<decltype(a.freeJson)>(dlsym(lib, "collbenchProfilerFree"));
  if (!a.read || !a.setClock || !a.abi || !a.readJson || !a.freeJson) fail("collbenchProfiler* not all exported");
  if (a.abi() != CB_PROFILER_ABI) fail("ABI " + std::to_string(a.abi()));
  a.setClock(simClock);
  g_table = a.table;
  return a;
}

void logger(int, unsigned long, const char*, int, const char*, ...) {}

struct Options {
  int ranks = 8, channels = 8, halves = 6, iters = 8, steps = 16, rows = 3000;
  int slowRank = -1, slowChannel = -1, lateRank = -1, split = 0, splitSlowRank = -1;
  double factor = 4.6, lateUs = 400;
};

// Events of one iteration, replayed in time order (ties in the order they were made), as NCCL's threads would.
struct Timeline {
  struct Event {
    uint64_t t;
    size_t seq;
    std::function<void()> run;
  };
  std::vector<Event> events;
  void at(uint64_t t, std::function<void()> f) { events.push_back({t, events.size(), std::move(f)}); }
  void replay() {
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
    for (Event& e : events) {
      g_now = e.t;
      e.run();
    }
    events.clear();
  }
};

double jitter(uint64_t& seed) {  // deterministic, uniform in [-1, 1)
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>(seed >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

struct Read {
  std::vector<CollbenchLinkRow> links = std::vector<CollbenchLinkRow>(CB_PROFILER_MAX_LINKS * 16);
  std::vector<CollbenchCollRow> colls = std::vector<CollbenchCollRow>(4096);
  std::vector<CollbenchKernelChRow> channels = std::vector<CollbenchKernelChRow>(4096);
  int nLinks = 0, nColls = 0, nChannels = 0;
  CollbenchProfilerTotals totals{};
};

void readAll(const Api& api, Read& r, int reset) {
  if (api.read(reset, r.links.data(), static_cast<int>(r.links.size()), &r.nLinks, r.colls.data(),
               static_cast<int>(r.colls.size()), &r.nColls, r.channels.data(), static_cast<int>(r.channels.size()),
               &r.nChannels, &r.totals) != 0)
    fail("collbenchProfilerRead: arrays too small");
}

// One ring collective on every rank and channel: rank r sends to r+1 and receives from r-1 on each channel, nSteps
// steps of `stepBytes`; a step can leave once the GPU produced it, which needs the previous step from upstream.
void ringIteration(const Api& api, std::vector<void*>& ctx, const Options& o, uint64_t& t0, size_t count,
                   uint64_t stepBytes, uint64_t& seed) {
  const int n = o.ranks, C = o.channels, S = o.steps, depth = 8;  // NCCL_STEPS
  const double fastGBs = 45.0, gpuStepNs = 2000, latencyNs = 3000;
  Timeline tl;
  std::vector<void*> coll(n, nullptr);
  for (int r = 0; r < n; ++r) {
    tl.at(t0, [&, r] {
      EventDescr d{};
      d.type = EventColl;
      d.rank = r;
      d.coll.func = "AllReduce";
      d.coll.count = count;
      d.coll.datatype = "ncclFloat32";
      d.coll.nChannels = static_cast<uint8_t>(C);
      d.coll.algo = "RING";
      d.coll.proto = "SIMPLE";
      startEvent(ctx[r], &coll[r], &d, "startEvent(coll)");
    });
  }
  // Handles live as NCCL keeps them: one per proxy op, and per op NCCL_STEPS step slots reused in turn.
  std::vector<void*> sendOp(n * C), recvOp(n * C), kernel(n * C);
  std::vector<void*> sendStep(n * C * depth), recvStep(n * C * depth);
  uint64_t end = t0;
  for (int ch = 0; ch < C; ++ch) {
    std::vector<uint64_t> gpuStart(n), sendDone(n * S), recvDone(n * S), consumed(n * S);
    for (int r = 0; r < n; ++r) {
      gpuStart[r] = t0 + 1000 + (r == o.lateRank ? static_cast<uint64_t>(o.lateUs * 1000) : 0);
      int q = (r + 1) % n, p = (r + n - 1) % n;
      tl.at(t0, [&, r, ch, q, p] {
        EventDescr d{};
        d.type = EventProxyOp;
        d.parentObj = coll[r];
        d.rank = r;
        d.proxyOp.channelId = static_cast<uint8_t>(ch);
        d.proxyOp.nSteps = S;
        d.proxyOp.chunkSize = static_cast<int>(stepBytes);
        d.proxyOp.peer = q;
        d.proxyOp.isSend = 1;
        startEvent(ctx[r], &sendOp[r * C + ch], &d, "startEvent(proxyOp send)");
        d.proxyOp.peer = p;
        d.proxyOp.isSend = 0;
        startEvent(ctx[r], &recvOp[r * C + ch], &d, "startEvent(proxyOp recv)");
      });
      tl.at(gpuStart[r], [&, r, ch, start = gpuStart[r]] {
        EventDescr d{};
        d.type = EventKernelCh;
        d.parentObj = coll[r];
        d.rank = r;
        d.kernelCh.channelId = static_cast<uint8_t>(ch);
        d.kernelCh.pTimer = start + 7000000ull * static_cast<uint64_t>(r);  // each GPU's own clock
        startEvent(ctx[r], &kernel[r * C + ch], &d, "startEvent(kernelCh)");
      });
    }
    for (int k = 0; k < S; ++k) {
      for (int r = 0; r < n; ++r) {
        const int q = (r + 1) % n;
        const bool slow = r == o.slowRank && (o.slowChannel < 0 || ch == o.slowChannel);
        const double gbs = fastGBs * (1 + 0.08 * jitter(seed)) / (slow ? o.factor : 1.0);
        uint64_t posted = k < depth ? t0 : sendDone[r * S + k - depth];
        uint64_t ready = gpuStart[r] + static_cast<uint64_t>(gpuStepNs * (k + 1));
        if (k > 0) ready = std::max(ready, recvDone[r * S + k - 1] + static_cast<uint64_t>(gpuStepNs));
        ready = std::max(ready, posted);
        uint64_t wire = std::max(ready, k > 0 ? sendDone[r * S + k - 1] : 0);
        uint64_t done = wire + static_cast<uint64_t>(latencyNs + static_cast<double>(stepBytes) / gbs);
        sendDone[r * S + k] = done;
        recvDone[q * S + k] = done;
        uint64_t rPosted = k < depth ? t0 : consumed[q * S + k - depth];
        uint64_t use = done + 500;
        consumed[q * S + k] = use + static_cast<uint64_t>(gpuStepNs);
        void** ss = &sendStep[(r * C + ch) * depth + k % depth];
        void** rs = &recvStep[(q * C + ch) * depth + k % depth];
        void* sop = nullptr;
        (void)sop;
        auto stepStart = [&api, &ctx, k](int rank, void** op, void** slot) {
          EventDescr d{};
          d.type = EventProxyStep;
          d.parentObj = *op;
          d.rank = rank;
          d.proxyStep.step = k;
          startEvent(ctx[rank], slot, &d, "startEvent(proxyStep)");
        };
        auto record = [&api](void** slot, int state, uint64_t size) {
          if (!*slot) return;  // NCCL skips records of steps it holds no handle for
          EventStateArgs a{};
          a.proxyStep.transSize = size;
          recordState(*slot, state, &a, "recordEventState(proxyStep)");
        };
        auto stop = [&api](void** slot) {
          if (!*slot) return;
          stopEvent(*slot, "stopEvent(proxyStep)");
          *slot = nullptr;
        };
        void** sOp = &sendOp[r * C + ch];
        void** rOp = &recvOp[q * C + ch];
        tl.at(posted, [=] {
          stepStart(r, sOp, ss);
          record(ss, StateSendGPUWait, 0);
        });
        tl.at(ready, [=] {
          record(ss, StateSendPeerWait, 0);
          record(ss, StateSendWait, stepBytes);
        });
        tl.at(done, [=] { stop(ss); });
        tl.at(rPosted, [=] {
          stepStart(q, rOp, rs);
          record(rs, StateRecvWait, 0);
        });
        tl.at(done, [=] { record(rs, StateRecvFlushWait, stepBytes); });
        tl.at(done + 200, [=] { record(rs, StateRecvGPUWait, stepBytes); });
        tl.at(use + static_cast<uint64_t>(gpuStepNs), [=] { stop(rs); });
        end = std::max(end, use + static_cast<uint64_t>(gpuStepNs));
      }
    }
    for (int r = 0; r < n; ++r) {
      uint64_t last = consumed[r * S + S - 1];
      tl.at(last + 100, [&, r, ch, last] {
        stopEvent(sendOp[r * C + ch], "stopEvent(proxyOp send)");
        stopEvent(recvOp[r * C + ch], "stopEvent(proxyOp recv)");
        EventStateArgs a{};
        a.kernelCh.pTimer = last + 7000000ull * static_cast<uint64_t>(r);
        recordState(kernel[r * C + ch], StateKernelChStop, &a, "recordEventState(kernelCh)");
        stopEvent(kernel[r * C + ch], "stopEvent(kernelCh)");
      });
    }
  }
  for (int r = 0; r < n; ++r) tl.at(end + 200, [&, r] { stopEvent(coll[r], "stopEvent(coll)"); });
  tl.replay();
  t0 = end + 5000;
}

std::vector<void*> initRanks(const Api& api, int n, uint64_t commId) {
  std::vector<void*> ctx(n, nullptr);
  for (int r = 0; r < n; ++r) {
    int mask = 0;
    g_inInit = true;
    Result res = api.table->init(&ctx[r], commId, &mask, "harness", n, n, r, logger);
    g_inInit = false;
    check(res, "init");
    const int want = EventColl | EventProxyOp | EventProxyStep | EventKernelCh;
    if (!ctx[r] || (mask & want) != want) fail("init: no context or events not activated");
  }
  return ctx;
}

void finalizeRanks(const Api& api, std::vector<void*>& ctx) {
  for (void* c : ctx) check(api.table->finalize(c), "finalize");
}

int runRing(const Api& api, const Options& o) {
  std::vector<void*> ctx = initRanks(api, o.ranks, 0xc011b3e4c0ffeeull);
  Options sub = o;  // --split: the second communicator's ring (its ranks numbered within it)
  sub.ranks = o.split;
  sub.slowRank = o.splitSlowRank;
  sub.slowChannel = -1;
  sub.lateRank = -1;
  std::vector<void*> subCtx = o.split > 0 ? initRanks(api, o.split, 0x5b11700c0ffeeull) : std::vector<void*>{};
  uint64_t t0 = 1000000, seed = 12345;
  Read rd;
  const uint64_t stepBytes = 512 * 1024;
  printf("{\"ranks\":%d,\"channels\":%d,\"halves\":[", o.ranks, o.channels);
  uint64_t dropped = 0;
  for (int h = 0; h < o.halves; ++h) {
    // Row-halves alternate out-of-place / in-place of sizes growing by 2: one count per size.
    size_t count = (size_t{64} << 20 >> (o.halves / 2 - h / 2)) / 4;
    for (int i = 0; i < o.iters; ++i) {
      ringIteration(api, ctx, o, t0, count, stepBytes, seed);
      if (o.split > 0) ringIteration(api, subCtx, sub, t0, count, stepBytes, seed);
    }
    char* json = api.readJson(0);  // what collbench gathers (peeked), then the same rows read and reset
    if (!json) fail("collbenchProfilerReadJson: out of memory");
    printf("%s{\"count\":%zu,\"read\":%s}", h ? "," : "", count, json);
    api.freeJson(json);
    readAll(api, rd, 1);
    dropped += rd.totals.droppedSteps + rd.totals.droppedOps + rd.totals.droppedKernelCh + rd.totals.droppedLinks +
               rd.totals.droppedCollKinds;
    // Every send link of every rank carried exactly what the ring sent.
    for (int i = 0; i < rd.nLinks; ++i) {
      const CollbenchLinkRow& l = rd.links[i];
      uint64_t want = static_cast<uint64_t>(o.iters) * o.steps * stepBytes;
      if (l.bytes != want || l.steps != static_cast<uint64_t>(o.iters) * o.steps)
        fail("rank " + std::to_string(l.rank) + " link to " + std::to_string(l.peer) + " channel " +
             std::to_string(l.channel) + ": " + std::to_string(l.bytes) + " B in " + std::to_string(l.steps) +
             " steps, want " + std::to_string(want));
    }
    if (rd.nLinks != (o.ranks + o.split) * o.channels * 2) fail("links read: " + std::to_string(rd.nLinks));
  }
  finalizeRanks(api, ctx);
  finalizeRanks(api, subCtx);
  readAll(api, rd, 1);
  printf("],\"dropped\":%llu,\"eventAllocations\":%llu,\"afterFinalize\":%d}\n",
         static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(g_eventAllocs),
         rd.nLinks + rd.nColls + rd.nChannels + rd.totals.comms);
  return 0;
}

int runRows(const Api& api, const Options& o) {
  Options small = o;
  small.ranks = 2;
  small.channels = 2;
  small.steps = 4;
  small.slowRank = -1;
  small.lateRank = -1;
  std::vector<void*> ctx = initRanks(api, small.ranks, 0x5eedull);
  uint64_t t0 = 1000000, seed = 7;
  Read rd;
  for (int row = 0; row < o.rows; ++row) {
    for (int half = 0; half < 2; ++half) {
      size_t count = 1000 + static_cast<size_t>(row);  // a new collective kind every row
      ringIteration(api, ctx, small, t0, count, 4096, seed);
      readAll(api, rd, 1);
      if (rd.nColls != small.ranks || rd.colls[0].count != count || rd.colls[0].calls != 1)
        fail("row " + std::to_string(row) + ": " + std::to_string(rd.nColls) + " collective rows");
      if (rd.nLinks != small.ranks * small.channels * 2) fail("row " + std::to_string(row) + ": links");
      if (rd.totals.droppedCollKinds + rd.totals.droppedSteps + rd.totals.droppedOps + rd.totals.droppedLinks)
        fail("row " + std::to_string(row) + ": dropped events");
    }
  }
  printf("rows: %d row-halves read and reset, every row's kind and links read back, nothing dropped\n", o.rows * 2);
  // Without resets the run's kinds outgrow the table: they are counted as dropped, the table does not grow.
  for (int row = 0; row < CB_PROFILER_MAX_COLL_KINDS + 100; ++row)
    ringIteration(api, ctx, small, t0, 900000 + static_cast<size_t>(row), 4096, seed);
  readAll(api, rd, 0);
  printf("no reset: %d kinds kept per rank of %d seen, %llu dropped\n", rd.nColls / small.ranks,
         CB_PROFILER_MAX_COLL_KINDS + 100, static_cast<unsigned long long>(rd.totals.droppedCollKinds));
  printf("event calls allocated %llu times (init: %llu)\n", static_cast<unsigned long long>(g_eventAllocs),
         static_cast<unsigned long long>(g_initAllocs));
  finalizeRanks(api, ctx);
  return g_eventAllocs == 0 && rd.nColls == small.ranks * CB_PROFILER_MAX_COLL_KINDS &&
                 rd.totals.droppedCollKinds == 100u * small.ranks
             ? 0
             : 1;
}

// The event path's own cost on this CPU: one proxy op, then `steps` send steps each started, moved through three states
// (one with its size) and stopped, on the real clock (CLOCK_MONOTONIC, as under NCCL).
int runCost(const Api& api, const Options& o) {
  api.setClock(nullptr);
  std::vector<void*> ctx = initRanks(api, 1, 0xc057ull);
  EventDescr d{};
  d.type = EventProxyOp;
  d.proxyOp.peer = 1;
  d.proxyOp.isSend = 1;
  void* op = nullptr;
  startEvent(ctx[0], &op, &d, "startEvent(proxyOp)");
  const int steps = o.rows * 100;
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int k = 0; k < steps; ++k) {
    EventDescr sd{};
    sd.type = EventProxyStep;
    sd.parentObj = op;
    sd.proxyStep.step = k;
    void* step = nullptr;
    startEvent(ctx[0], &step, &sd, "startEvent(proxyStep)");
    EventStateArgs args{};
    recordState(step, StateSendGPUWait, &args, "recordEventState");
    recordState(step, StateSendPeerWait, &args, "recordEventState");
    args.proxyStep.transSize = 524288;
    recordState(step, StateSendWait, &args, "recordEventState");
    stopEvent(step, "stopEvent(proxyStep)");
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  stopEvent(op, "stopEvent(proxyOp)");
  double ns = (b.tv_sec - a.tv_sec) * 1e9 + static_cast<double>(b.tv_nsec - a.tv_nsec);
  Read rd;
  readAll(api, rd, 1);
  finalizeRanks(api, ctx);
  if (rd.nLinks != 1 || rd.links[0].steps != static_cast<uint64_t>(steps)) fail("cost: steps not all counted");
  printf("cost: %d steps, %.0f ns per step (start, 3 state records, stop: 5 calls), %.0f ns per call\n", steps,
         ns / steps, ns / steps / 5);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) fail("usage: link_profiler_harness LIB ring|rows|cost [options]");
  Options o;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--ranks")
      o.ranks = atoi(v);
    else if (k == "--channels")
      o.channels = atoi(v);
    else if (k == "--halves")
      o.halves = atoi(v);
    else if (k == "--iters")
      o.iters = atoi(v);
    else if (k == "--steps")
      o.steps = atoi(v);
    else if (k == "--rows")
      o.rows = atoi(v);
    else if (k == "--factor")
      o.factor = atof(v);
    else if (k == "--late")
      o.lateRank = atoi(v);
    else if (k == "--late-us")
      o.lateUs = atof(v);
    else if (k == "--split")
      o.split = atoi(v);
    else if (k == "--split-slow")
      o.splitSlowRank = atoi(v);
    else if (k == "--slow") {
      if (sscanf(v, "%d:%d", &o.slowRank, &o.slowChannel) < 1) fail("--slow RANK[:CHANNEL]");
    } else
      fail("unknown option " + k);
  }
  Api api = load(argv[1]);
  std::string mode = argv[2];
  if (mode == "ring") return runRing(api, o);
  if (mode == "rows") return runRows(api, o);
  if (mode == "cost") return runCost(api, o);
  fail("unknown mode " + mode);
}

// The harness's own allocator entry points: count what the plugin's event calls allocate (operator new ends here too).
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* malloc(size_t n) {
  if (g_inEventCall) ++g_eventAllocs;
  if (g_inInit) ++g_initAllocs;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  if (g_inEventCall) ++g_eventAllocs;
  if (g_inInit) ++g_initAllocs;
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  if (g_inEventCall) ++g_eventAllocs;
  if (g_inInit) ++g_initAllocs;
  return __libc_realloc(p, n);
}
