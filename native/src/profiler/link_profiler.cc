// collbench's NCCL profiler plugin (NCCL_PROFILER_PLUGIN; ncclProfiler_v6/_v5 found by name): per communicator, per
// (peer, channel, direction) bytes, steps and time per proxy step state; collective kinds; kernel channel starts.
// Fixed tables made at init, slots claimed with atomics on the event path (no allocation, no lock); see docs/links.md.
#include "profiler/link_profiler.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <sched.h>

#include <string>
#include <vector>

#include "profiler/profiler_abi.h"

namespace {

using namespace collbench::profabi;

constexpr int kMaxComms = CB_PROFILER_MAX_COMMS;
constexpr int kMaxLinks = CB_PROFILER_MAX_LINKS;
constexpr int kMaxCollKinds = CB_PROFILER_MAX_COLL_KINDS;
constexpr int kMaxChannels = CB_PROFILER_MAX_CHANNELS;
constexpr int kStepSlots = CB_PROFILER_STEP_SLOTS;
constexpr int kOpSlots = CB_PROFILER_OP_SLOTS;
constexpr int kKernelSlots = CB_PROFILER_KERNEL_SLOTS;
constexpr int kClaimTries = 64;  // slots tried before an event is dropped (counted)
constexpr int kActivationMask = EventColl | EventP2p | EventProxyOp | EventProxyStep | EventKernelCh;

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
std::atomic<uint64_t (*)()> g_clock{monotonicNs};
inline uint64_t nowNs() {
  return g_clock.load(std::memory_order_relaxed)();
}

// Every handle given to NCCL starts with its kind, so stop/record know what they hold.
enum HandleKind : uint8_t { KindToken = 1, KindOp = 2, KindStep = 3, KindKernelCh = 4 };

inline void add(std::atomic<uint64_t>& a, uint64_t v) {
  a.fetch_add(v, std::memory_order_relaxed);
}
inline uint64_t take(std::atomic<uint64_t>& a, bool reset) {
  return reset ? a.exchange(0, std::memory_order_relaxed) : a.load(std::memory_order_relaxed);
}

struct Link {
  std::atomic<uint64_t> key{0};  // 0: free; else packLink()
  std::atomic<uint64_t> bytes{0}, steps{0}, ops{0};
  std::atomic<uint64_t> stateNs[CB_STEP_STATES] = {};
  std::atomic<uint64_t> stateWallNs[CB_STEP_STATES] = {};
  // Per state, the end of the latest interval added to stateWallNs: steps of one connection finish in order, so an
  // interval's part after this mark is what it adds to the union. Written by the proxy thread that owns the link.
  std::atomic<uint64_t> stateEnd[CB_STEP_STATES] = {};
};
inline uint64_t packLink(int peer, int channel, int isSend) {
  return (static_cast<uint64_t>(isSend ? 1 : 0) << 48) | (static_cast<uint64_t>(channel & 0xffff) << 32) |
         static_cast<uint32_t>(peer) | (1ull << 56);
}

struct CollKind {
  std::atomic<int> state{0};  // 0 free, 1 being written, 2 ready
  uint64_t count = 0;
  int nChannels = 0;
  char func[32] = {}, datatype[24] = {}, algo[16] = {}, proto[16] = {};
  std::atomic<uint64_t> calls{0};
};
// Collective kinds go to one of two tables; a resetting read switches tables and waits for the old one's writers,
// so it can empty it (the kinds of a run are unbounded, those of one read period are not).
struct CollTable {
  CollKind kinds[kMaxCollKinds];
  std::atomic<int> writers{0};
};

struct KernelChannel {
  std::atomic<uint64_t> kernels{0}, firstStart{UINT64_MAX}, lastStart{0}, busyNs{0};
};

struct Token {
  uint8_t kind = KindToken;
};
struct OpSlot {
  uint8_t kind = KindOp;
  std::atomic<uint8_t> busy{0};
  Link* link = nullptr;
};
struct StepSlot {
  uint8_t kind = KindStep;
  std::atomic<uint8_t> busy{0};
  int8_t state = -1;  // CollbenchStepState being timed, -1 before the first
  uint64_t lastNs = 0, bytes = 0;
  uint64_t ns[CB_STEP_STATES] = {};
  uint64_t from[CB_STEP_STATES] = {};  // when the step entered each state
  Link* link = nullptr;
};
struct KernelSlot {
  uint8_t kind = KindKernelCh;
  std::atomic<uint8_t> busy{0};
  KernelChannel* channel = nullptr;
  uint64_t start = 0;
};

template <class Slot, int N>
struct Pool {
  Slot slots[N];
  std::atomic<uint32_t> next{0};
  Slot* claim() {
    for (int i = 0; i < kClaimTries; ++i) {
      Slot& s = slots[next.fetch_add(1, std::memory_order_relaxed) % N];
      uint8_t free = 0;
      if (s.busy.compare_exchange_strong(free, 1, std::memory_order_acquire)) return &s;
    }
    return nullptr;
  }
  static void release(Slot* s) { s->busy.store(0, std::memory_order_release); }
};

struct Context {
  uint64_t commId = 0;
  int rank = 0, nRanks = 0;
  Token collToken;
  Link links[kMaxLinks];
  CollTable coll[2];
  std::atomic<int> activeColl{0};
  KernelChannel channels[kMaxChannels];
  Pool<OpSlot, kOpSlots> ops;
  Pool<StepSlot, kStepSlots> steps;
  Pool<KernelSlot, kKernelSlots> kernels;
  std::atomic<uint64_t> droppedSteps{0}, droppedOps{0}, droppedKernelCh{0}, droppedLinks{0}, droppedCollKinds{0};
};

std::mutex g_registry;  // init, finalize and reads only
Context* g_comms[kMaxComms] = {};
std::atomic<int> g_untracked{0};

Link* findLink(Context* c, int peer, int channel, int isSend) {
  uint64_t key = packLink(peer, channel, isSend);
  uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 40;
  for (int i = 0; i < kMaxLinks; ++i) {
    Link& l = c->links[(h + i) % kMaxLinks];
    uint64_t k = l.key.load(std::memory_order_acquire);
    if (k == key) return &l;
    if (k == 0) {
      if (l.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) return &l;
      if (k == key) return &l;
    }
  }
  add(c->droppedLinks, 1);
  return nullptr;
}

void copyName(char* dst, size_t n, const char* src) {
  if (!src) src = "";
  strncpy(dst, src, n - 1);
  dst[n - 1] = '\0';
}
bool sameName(const char* held, size_t n, const char* s) {
  return strncmp(held, s ? s : "", n - 1) == 0;
}

void countColl(Context* c, const char* func, uint64_t count, const char* datatype, const char* algo, const char* proto,
               int nChannels) {
  int a;
  for (;;) {  // enter the active table (see CollTable)
    a = c->activeColl.load(std::memory_order_seq_cst);
    c->coll[a].writers.fetch_add(1, std::memory_order_seq_cst);
    if (c->activeColl.load(std::memory_order_seq_cst) == a) break;
    c->coll[a].writers.fetch_sub(1, std::memory_order_seq_cst);
  }
  CollTable& t = c->coll[a];
  uint64_t h = count * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(nChannels) << 7;
  for (const char* s : {func, algo, proto, datatype})
    for (const char* p = s; p && *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 0x100000001B3ull;
  bool counted = false;
  for (int i = 0; i < kMaxCollKinds && !counted; ++i) {
    CollKind& k = t.kinds[(h + i) % kMaxCollKinds];
    int st = k.state.load(std::memory_order_acquire);
    if (st == 0) {
      if (k.state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) {
        k.count = count;
        k.nChannels = nChannels;
        copyName(k.func, sizeof k.func, func);
        copyName(k.datatype, sizeof k.datatype, datatype);
        copyName(k.algo, sizeof k.algo, algo);
        copyName(k.proto, sizeof k.proto, proto);
        k.state.store(2, std::memory_order_release);
        add(k.calls, 1);
        counted = true;
        continue;
      }
    }
    while (st == 1) st = k.state.load(std::memory_order_acquire);  // another thread is writing this kind's key
    if (k.count == count && k.nChannels == nChannels && sameName(k.func, sizeof k.func, func) &&
        sameName(k.algo, sizeof k.algo, algo) && sameName(k.proto, sizeof k.proto, proto) &&
        sameName(k.datatype, sizeof k.datatype, datatype)) {
      add(k.calls, 1);
      counted = true;
    }
  }
  if (!counted) add(c->droppedCollKinds, 1);
  t.writers.fetch_sub(1, std::memory_order_seq_cst);
}

int stepStateIndex(int eState) {
  switch (eState) {
    case StateSendGPUWait:
      return CB_SEND_GPU_WAIT;
    case StateSendPeerWait:
      return CB_SEND_PEER_WAIT;
    case StateSendWait:
      return CB_SEND_WAIT;
    case StateRecvWait:
      return CB_RECV_WAIT;
    case StateRecvFlushWait:
      return CB_RECV_FLUSH_WAIT;
    case StateRecvGPUWait:
      return CB_RECV_GPU_WAIT;
    default:
      return -1;
  }
}

Result profInit(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                int rank, DebugLogger logfn) {
  *context = nullptr;
  *eActivationMask = 0;
  Context* c = new (std::nothrow) Context();
  int slot = -1;
  if (c) {
    std::lock_guard<std::mutex> lock(g_registry);
    for (int i = 0; i < kMaxComms && slot < 0; ++i)
      if (!g_comms[i]) slot = i;
    if (slot >= 0) g_comms[slot] = c;
  }
  if (slot < 0) {
    delete c;
    g_untracked.fetch_add(1, std::memory_order_relaxed);
    if (logfn)
      logfn(LogWarn, LogInit, __FILE__, __LINE__,
            "collbench link profiler: rank %d of communicator %s (%lx) not profiled: %s", rank,
            commName ? commName : "-", static_cast<unsigned long>(commId),
            c ? "out of memory" : "more than 64 communicators");
    return Success;  // NCCL runs on, without events for this communicator
  }
  c->commId = commId;
  c->rank = rank;
  c->nRanks = nranks;
  *context = c;
  *eActivationMask = kActivationMask;
  if (logfn)
    logfn(LogInfo, LogInit, __FILE__, __LINE__, "collbench link profiler: rank %d/%d on %d node(s), communicator %lx",
          rank, nranks, nNodes, static_cast<unsigned long>(commId));
  return Success;
}

Result profStartEvent(void* context, void** eHandle, EventDescr* d) {
  *eHandle = nullptr;
  Context* c = static_cast<Context*>(context);
  if (!c || !d) return Success;
  switch (d->type) {
    case EventColl:
      countColl(c, d->coll.func, d->coll.count, d->coll.datatype, d->coll.algo, d->coll.proto, d->coll.nChannels);
      *eHandle = &c->collToken;
      break;
    case EventP2p:
      countColl(c, d->p2p.func, d->p2p.count, d->p2p.datatype, "p2p", "", d->p2p.nChannels);
      *eHandle = &c->collToken;
      break;
    case EventProxyOp: {
      OpSlot* op = c->ops.claim();
      if (!op) {
        add(c->droppedOps, 1);
        break;
      }
      op->link = findLink(c, d->proxyOp.peer, d->proxyOp.channelId, d->proxyOp.isSend);
      if (op->link) add(op->link->ops, 1);
      *eHandle = op;
      break;
    }
    case EventProxyStep: {
      const OpSlot* op = static_cast<const OpSlot*>(d->parentObj);
      if (!op || op->kind != KindOp || !op->link) break;
      StepSlot* s = c->steps.claim();
      if (!s) {
        add(c->droppedSteps, 1);
        break;
      }
      s->link = op->link;
      s->state = -1;
      s->bytes = 0;
      memset(s->ns, 0, sizeof s->ns);
      *eHandle = s;
      break;
    }
    case EventKernelCh: {
      int ch = d->kernelCh.channelId;
      if (ch >= kMaxChannels) break;
      KernelSlot* k = c->kernels.claim();
      if (!k) {
        add(c->droppedKernelCh, 1);
        break;
      }
      KernelChannel& kc = c->channels[ch];
      uint64_t start = d->kernelCh.pTimer;
      add(kc.kernels, 1);
      uint64_t first = kc.firstStart.load(std::memory_order_relaxed);
      while (start < first && !kc.firstStart.compare_exchange_weak(first, start, std::memory_order_relaxed)) {
      }
      kc.lastStart.store(start, std::memory_order_relaxed);
      k->channel = &kc;
      k->start = start;
      *eHandle = k;
      break;
    }
    default:
      break;
  }
  return Success;
}

void closeState(StepSlot* s, uint64_t now) {
  if (s->state >= 0 && now > s->lastNs) s->ns[s->state] += now - s->lastNs;
  s->lastNs = now;
}

Result profRecordEventState(void* eHandle, int eState, EventStateArgs* args) {
  if (!eHandle) return Success;
  uint8_t kind = *static_cast<uint8_t*>(eHandle);
  if (kind == KindStep) {
    int state = stepStateIndex(eState);
    if (state < 0) return Success;
    StepSlot* s = static_cast<StepSlot*>(eHandle);
    closeState(s, nowNs());
    s->state = static_cast<int8_t>(state);
    s->from[state] = s->lastNs;
    // NCCL sets the step's size just before SendWait (isend posted) and RecvFlushWait (data received).
    if (args && (state == CB_SEND_WAIT || state == CB_RECV_FLUSH_WAIT)) s->bytes = args->proxyStep.transSize;
  } else if (kind == KindKernelCh && eState == StateKernelChStop && args) {
    KernelSlot* k = static_cast<KernelSlot*>(eHandle);
    if (args->kernelCh.pTimer > k->start) add(k->channel->busyNs, args->kernelCh.pTimer - k->start);
  }
  return Success;
}

Result profStopEvent(void* eHandle) {
  if (!eHandle) return Success;
  switch (*static_cast<uint8_t*>(eHandle)) {
    case KindStep: {
      StepSlot* s = static_cast<StepSlot*>(eHandle);
      closeState(s, nowNs());
      Link* l = s->link;
      add(l->bytes, s->bytes);
      add(l->steps, 1);
      for (int i = 0; i < CB_STEP_STATES; ++i) {
        if (!s->ns[i]) continue;
        add(l->stateNs[i], s->ns[i]);
        uint64_t begin = s->from[i], end = s->from[i] + s->ns[i];
        uint64_t mark = l->stateEnd[i].load(std::memory_order_relaxed);
        if (end > mark) {
          add(l->stateWallNs[i], end - (begin > mark ? begin : mark));
          l->stateEnd[i].store(end, std::memory_order_relaxed);
        }
      }
      Pool<StepSlot, kStepSlots>::release(s);
      break;
    }
    case KindOp:
      Pool<OpSlot, kOpSlots>::release(static_cast<OpSlot*>(eHandle));
      break;
    case KindKernelCh:
      Pool<KernelSlot, kKernelSlots>::release(static_cast<KernelSlot*>(eHandle));
      break;
    default:
      break;  // the collective token: nothing to close
  }
  return Success;
}

Result profFinalize(void* context) {
  Context* c = static_cast<Context*>(context);
  if (!c) return Success;
  {
    std::lock_guard<std::mutex> lock(g_registry);
    for (auto& slot : g_comms)
      if (slot == c) slot = nullptr;
  }
  delete c;
  return Success;
}

// Version 6 passes a descriptor whose members we read sit where version 5 has them (pinned by the ABI test).
Result profStartEventV6(void* context, void** eHandle, EventDescr* d) {
  return profStartEvent(context, eHandle, d);
}

bool linkActive(Link& l) {
  return l.steps.load(std::memory_order_relaxed) || l.ops.load(std::memory_order_relaxed) ||
         l.bytes.load(std::memory_order_relaxed);
}

// Reads one communicator's collective kinds: the table in use when peeking; when resetting, the table just retired
// (its writers gone), which is then emptied.
int readColls(Context* c, bool reset, CollbenchCollRow* out, int cap, int n) {
  int a = c->activeColl.load(std::memory_order_seq_cst);
  CollTable& t = c->coll[a];
  if (reset) {
    c->activeColl.store(1 - a, std::memory_order_seq_cst);
    while (t.writers.load(std::memory_order_seq_cst) != 0) sched_yield();
  }
  for (CollKind& k : t.kinds) {
    if (k.state.load(std::memory_order_acquire) != 2) continue;
    uint64_t calls = take(k.calls, reset);
    if (calls && n < cap) {
      CollbenchCollRow& r = out[n];
      r = CollbenchCollRow{};
      r.commId = c->commId;
      r.rank = c->rank;
      r.nChannels = k.nChannels;
      r.count = k.count;
      r.calls = calls;
      memcpy(r.func, k.func, sizeof r.func);
      memcpy(r.datatype, k.datatype, sizeof r.datatype);
      memcpy(r.algo, k.algo, sizeof r.algo);
      memcpy(r.proto, k.proto, sizeof r.proto);
    }
    if (calls) ++n;
    if (reset) k.state.store(0, std::memory_order_release);
  }
  return n;
}

int countColls(Context* c) {
  int n = 0;
  for (CollKind& k : c->coll[c->activeColl.load(std::memory_order_seq_cst)].kinds)
    if (k.state.load(std::memory_order_acquire) == 2 && k.calls.load(std::memory_order_relaxed)) ++n;
  return n;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ProfilerTable ncclProfiler_v5 = {
    "collbench-links", profInit, profStartEvent, profStopEvent, profRecordEventState, profFinalize};
__attribute__((visibility("default"))) ProfilerTable ncclProfiler_v6 = {
    "collbench-links", profInit, profStartEventV6, profStopEvent, profRecordEventState, profFinalize};

__attribute__((visibility("default"))) int collbenchProfilerAbi(void) {
  return CB_PROFILER_ABI;
}

__attribute__((visibility("default"))) void collbenchProfilerSetClock(uint64_t (*clockNs)(void)) {
  g_clock.store(clockNs ? clockNs : monotonicNs, std::memory_order_relaxed);
}

__attribute__((visibility("default"))) int collbenchProfilerRead(int reset, CollbenchLinkRow* links, int linkCap,
                                                                 int* nLinks, CollbenchCollRow* colls, int collCap,
                                                                 int* nColls, CollbenchKernelChRow* channels,
                                                                 int channelCap, int* nChannels,
                                                                 CollbenchProfilerTotals* totals) {
  std::lock_guard<std::mutex> lock(g_registry);
  int needLinks = 0, needColls = 0, needChannels = 0;
  for (Context* c : g_comms) {
    if (!c) continue;
    for (Link& l : c->links)
      if (l.key.load(std::memory_order_acquire) && linkActive(l)) ++needLinks;
    needColls += countColls(c);
    for (KernelChannel& k : c->channels)
      if (k.kernels.load(std::memory_order_relaxed)) ++needChannels;
  }
  if (needLinks > linkCap || needColls > collCap || needChannels > channelCap) {
    *nLinks = needLinks;
    *nColls = needColls;
    *nChannels = needChannels;
    return -1;
  }
  bool r = reset != 0;
  int nl = 0, nc = 0, nk = 0;
  CollbenchProfilerTotals t{};
  for (Context* c : g_comms) {
    if (!c) continue;
    ++t.comms;
    for (Link& l : c->links) {
      uint64_t key = l.key.load(std::memory_order_acquire);
      if (!key || !linkActive(l) || nl >= linkCap) continue;
      CollbenchLinkRow& row = links[nl++];
      row = CollbenchLinkRow{};
      row.commId = c->commId;
      row.rank = c->rank;
      row.nRanks = c->nRanks;
      row.peer = static_cast<int32_t>(key & 0xffffffffu);
      row.channel = static_cast<int32_t>((key >> 32) & 0xffff);
      row.isSend = static_cast<int32_t>((key >> 48) & 1);
      row.bytes = take(l.bytes, r);
      row.steps = take(l.steps, r);
      row.ops = take(l.ops, r);
      for (int i = 0; i < CB_STEP_STATES; ++i) {
        row.stateNs[i] = take(l.stateNs[i], r);
        row.stateWallNs[i] = take(l.stateWallNs[i], r);
      }
    }
    nc = readColls(c, r, colls, collCap, nc);
    for (int ch = 0; ch < kMaxChannels; ++ch) {
      KernelChannel& k = c->channels[ch];
      if (!k.kernels.load(std::memory_order_relaxed) || nk >= channelCap) continue;
      CollbenchKernelChRow& row = channels[nk++];
      row = CollbenchKernelChRow{};
      row.commId = c->commId;
      row.rank = c->rank;
      row.channel = ch;
      row.kernels = take(k.kernels, r);
      row.firstStartNs = r ? k.firstStart.exchange(UINT64_MAX, std::memory_order_relaxed)
                           : k.firstStart.load(std::memory_order_relaxed);
      row.lastStartNs = take(k.lastStart, r);
      row.busyNs = take(k.busyNs, r);
    }
    t.droppedSteps += take(c->droppedSteps, r);
    t.droppedOps += take(c->droppedOps, r);
    t.droppedKernelCh += take(c->droppedKernelCh, r);
    t.droppedLinks += take(c->droppedLinks, r);
    t.droppedCollKinds += take(c->droppedCollKinds, r);
  }
  t.untrackedComms = g_untracked.load(std::memory_order_relaxed);
  *nLinks = nl;
  *nColls = nc < collCap ? nc : collCap;
  *nChannels = nk;
  if (totals) *totals = t;
  return 0;
}

}  // extern "C"

namespace {

void appendf(std::string& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& s, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) s.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}

// A name from NCCL as a JSON string body: NCCL's names are identifiers, anything else is dropped.
std::string jsonName(const char* s) {
  std::string out;
  for (; *s; ++s)
    if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') out += *s;
  return out;
}

void appendArray(std::string& s, const uint64_t* v, int n) {
  s += '[';
  for (int i = 0; i < n; ++i) appendf(s, "%s%" PRIu64, i ? "," : "", v[i]);
  s += ']';
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) char* collbenchProfilerReadJson(int reset) {
  try {
    std::vector<CollbenchLinkRow> links(static_cast<size_t>(kMaxComms) * 64);
    std::vector<CollbenchCollRow> colls(256);
    std::vector<CollbenchKernelChRow> channels(256);
    int nl = 0, nc = 0, nk = 0;
    CollbenchProfilerTotals t{};
    while (collbenchProfilerRead(reset, links.data(), static_cast<int>(links.size()), &nl, colls.data(),
                                 static_cast<int>(colls.size()), &nc, channels.data(),
                                 static_cast<int>(channels.size()), &nk, &t) != 0) {
      links.resize(static_cast<size_t>(nl) * 2 + 64);  // grown to what the failed read said, and some
      colls.resize(static_cast<size_t>(nc) * 2 + 64);
      channels.resize(static_cast<size_t>(nk) * 2 + 64);
    }
    std::vector<std::pair<uint64_t, int>> ranks;  // (commId, rank) in order of first appearance
    auto note = [&](uint64_t comm, int rank) {
      for (auto& r : ranks)
        if (r.first == comm && r.second == rank) return;
      ranks.emplace_back(comm, rank);
    };
    for (int i = 0; i < nl; ++i) note(links[i].commId, links[i].rank);
    for (int i = 0; i < nc; ++i) note(colls[i].commId, colls[i].rank);
    for (int i = 0; i < nk; ++i) note(channels[i].commId, channels[i].rank);
    std::string s = "{\"ranks\":[";
    for (size_t r = 0; r < ranks.size(); ++r) {
      uint64_t comm = ranks[r].first;
      int rank = ranks[r].second;
      appendf(s, "%s{\"rank\":%d,\"commId\":\"%" PRIx64 "\",\"links\":[", r ? "," : "", rank, comm);
      bool any = false;
      for (int i = 0; i < nl; ++i) {
        const CollbenchLinkRow& l = links[i];
        if (l.commId != comm || l.rank != rank) continue;
        appendf(s,
                "%s{\"peer\":%d,\"channel\":%d,\"isSend\":%d,\"bytes\":%" PRIu64 ",\"steps\":%" PRIu64
                ",\"ops\":%" PRIu64 ",\"stateNs\":",
                any ? "," : "", l.peer, l.channel, l.isSend, l.bytes, l.steps, l.ops);
        appendArray(s, l.stateNs, CB_STEP_STATES);
        s += ",\"stateWallNs\":";
        appendArray(s, l.stateWallNs, CB_STEP_STATES);
        s += '}';
        any = true;
      }
      s += "],\"colls\":[";
      any = false;
      for (int i = 0; i < nc; ++i) {
        const CollbenchCollRow& c = colls[i];
        if (c.commId != comm || c.rank != rank) continue;
        appendf(s,
                "%s{\"func\":\"%s\",\"count\":%" PRIu64
                ",\"datatype\":\"%s\",\"algo\":\"%s\",\"proto\":\"%s\","
                "\"nChannels\":%d,\"calls\":%" PRIu64 "}",
                any ? "," : "", jsonName(c.func).c_str(), c.count, jsonName(c.datatype).c_str(),
                jsonName(c.algo).c_str(), jsonName(c.proto).c_str(), c.nChannels, c.calls);
        any = true;
      }
      s += "],\"kernelChannels\":[";
      any = false;
      for (int i = 0; i < nk; ++i) {
        const CollbenchKernelChRow& k = channels[i];
        if (k.commId != comm || k.rank != rank) continue;
        appendf(s,
                "%s{\"channel\":%d,\"kernels\":%" PRIu64 ",\"firstStartNs\":%" PRIu64 ",\"lastStartNs\":%" PRIu64
                ",\"busyNs\":%" PRIu64 "}",
                any ? "," : "", k.channel, k.kernels, k.firstStartNs, k.lastStartNs, k.busyNs);
        any = true;
      }
      s += "]}";
    }
    appendf(s,
            "],\"totals\":{\"droppedSteps\":%" PRIu64 ",\"droppedOps\":%" PRIu64 ",\"droppedKernelCh\":%" PRIu64
            ",\"droppedLinks\":%" PRIu64 ",\"droppedCollKinds\":%" PRIu64 ",\"comms\":%d,\"untrackedComms\":%d}}",
            t.droppedSteps, t.droppedOps, t.droppedKernelCh, t.droppedLinks, t.droppedCollKinds, t.comms,
            t.untrackedComms);
    char* out = static_cast<char*>(malloc(s.size() + 1));
    if (out) memcpy(out, s.c_str(), s.size() + 1);
    return out;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

__attribute__((visibility("default"))) void collbenchProfilerFree(char* json) {
  free(json);
}

}  // extern "C"
