// The Gloo backend: the Backend interface (core/backend.h) on Gloo collectives over host memory and TCP, with
// nccl-tests' semantics for all eleven collectives. Contexts are kept apart per API family: a legacy send shrinks its
// pairs' socket buffers and would slow the new API 1000× on a shared context.
#pragma once
#include <gloo/algorithm.h>
#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/gloo/kept_options.h"
#include "core/host_backend.h"

namespace collbench {

// all_reduce algorithms (--gloo-algo). The new API's UNSPECIFIED ("default") is ring in this Gloo.
// reduce_scatter (an all-reduce underneath, as PyTorch does it) takes default, ring and bcube, or
// legacy_halving_doubling for Gloo's legacy ReduceScatterHalvingDoubling class.
enum class GlooAlgo : int {
  Default = 0,
  Ring,
  Bcube,
  LegacyRing,
  LegacyRingChunked,
  LegacyHalvingDoubling,
  LegacyBcube,
};
// "default", "ring", "bcube", "legacy_ring", "legacy_ring_chunked", "legacy_halving_doubling",
// "legacy_bcube"; false for an unknown name.
bool parseGlooAlgo(const std::string& name, GlooAlgo* out);
const char* glooAlgoName(GlooAlgo a);

struct GlooConfig {
  int rank = 0;
  int size = 1;
  // Rendezvous store: "file:DIR" (an existing directory every rank sees) or
  // "redis://HOST:PORT" (RedisStore). Keys are prefixed with runId so runs never collide.
  std::string store;
  // Redis AUTH password for a redis:// store (from COLLBENCH_GLOO_REDIS_PASSWORD or REDISCLI_AUTH, never argv);
  // empty: none sent.
  std::string storePassword;
  std::string runId = "collbench";
  // TCP transport: bind to this interface (iface) or this address / host name (hostname).
  std::string iface;
  std::string hostname;
  GlooAlgo algo = GlooAlgo::Default;
  int timeoutMs = 30000;  // every Gloo wait (rendezvous, collectives) gives up after this
  // The bring-up's rendezvous (create) gives up after this instead, when it is shorter (-T); 0: timeoutMs.
  int connectTimeoutMs = 0;
  // Reduce float16 with gloo::float16's operators, as Gloo and PyTorch do (their copy assignment is
  // defective, see gloo_types.h); false: collbench's element_ops.h (COLLBENCH_GLOO_FLOAT16=collbench).
  bool glooFloat16 = true;
};

class GlooBackend : public HostMemoryBackend {
 public:
  // Creates the store, the TCP device and the control and data contexts (full-mesh rendezvous).
  static Status create(const GlooConfig& config, std::unique_ptr<GlooBackend>* out);
  ~GlooBackend() override;  // closes connections without a barrier (call finalize() first)

  GlooBackend(const GlooBackend&) = delete;
  GlooBackend& operator=(const GlooBackend&) = delete;

  // Final barrier (else a peer still sending fails with "Connection closed by peer"), then closes every
  // context. After a failed Gloo call the barrier is skipped: peers may be gone and would make it wait for
  // the timeout.
  Status finalize() override;
  bool finalized() const { return finalized_; }

  static std::string libraryVersion();       // "Gloo 0.5.0 (tcp transport)"
  static std::string libraryVersionShort();  // "Gloo 0.5.0"

  int rank() const override { return config_.rank; }
  int nranks() const override { return config_.size; }
  const GlooConfig& config() const { return config_; }
  std::string deviceText() const;  // the transport device as Gloo describes it (address, iface)

  // Drops the cached legacy algorithms (they hold pointers into the old buffers), then allocates.
  Status allocate(uint64_t sendBytes, uint64_t recvBytes) override;

  Status enqueue(const OpArgs& args) override;
  // One new-API context per group, over a PrefixStore of the run's store ("group<N>/", N counting every group this
  // backend made), connected full mesh among the group's ranks only: what torch's ProcessGroupGloo does for
  // new_group. Every rank walks the list in order; a non-member makes no context. The legacy algorithm classes
  // (--gloo-algo legacy_*) run on the world only: a group's all_reduce or reduce_scatter under them is refused.
  Status createGroups(const std::vector<std::vector<int>>& groups) override;
  // The series' op checked once (every shift at once) by enqueue()'s own code; all_reduce (new API),
  // all_gather, broadcast, alltoall and gather then run their Gloo call only. Ops with work around the
  // call (avg, mulsum, legacy algorithms, staging copies) keep enqueue().
  Status prepareSeries(const OpSeries& series) override;
  bool runPrepared(uint64_t shiftBytes) override;
  Status waitAll() override { return Status::Ok(); }  // every Gloo call here is blocking
  Status barrier() override;
  Status allreduce(double* values, int n, Combine how) override;
  Status gather(const double* mine, int n, std::vector<double>* atRoot) override;
  Status gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) override;

 private:
  static constexpr uint32_t kTag = 0;  // one op at a time per context: one tag is enough

  // Legacy algorithm objects own scratch memory and transport buffers bound to one pointer and
  // count, so they are built once per (kind, dtype, op, pointer, count) and reused: the timed
  // loop then measures run() only, as a Gloo user that keeps its algorithm objects would.
  enum class LegacyKind : int { Ring, RingChunked, HalvingDoubling, Bcube, ReduceScatter };
  struct LegacyEntry {
    LegacyKind kind;
    DType dtype;
    RedOp op;
    void* ptr;
    uint64_t count;
    std::unique_ptr<gloo::Algorithm> algorithm;
  };

  explicit GlooBackend(const GlooConfig& config) : HostMemoryBackend("GlooBackend"), config_(config) {}
  Status alive(const char* what) const;
  // enqueue()'s body, on config_.rank, config_.size and data_ (the world's, or while a group's op runs the group's).
  Status enqueueOn(const OpArgs& a);
  void closeGroups();
  // Twice the larger buffer plus 128 bytes (reduce needs an input and an output region).
  uint64_t scratchReserve() const override;
  // Pointer Gloo reduces from: `input`, or for mulsum on odd ranks `input` scaled by 2 (in place
  // when `scaleInPlace`, else into the scratch buffer at byte offset `scratchOffset`).
  Status reduceInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace, uint64_t scratchOffset,
                     const void** out) {
    *out = input;
    if (a.op != RedOp::MulSum) return Status::Ok();  // inline: every op but mulsum passes its input as it is
    return scaledInput(a, input, elems, scaleInPlace, scratchOffset, out);
  }
  Status scaledInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace, uint64_t scratchOffset,
                     const void** out);
  // A new-API context named `name` (its store keys' prefix), connected full mesh with the timeout.
  Status connect(const char* name, std::shared_ptr<gloo::Context>* ctx);
  Status legacyContext();
  Status legacyAlgorithm(LegacyKind kind, DType dtype, RedOp op, void* ptr, uint64_t count, gloo::Algorithm** out);
  void dropLegacyAlgorithms();
  // Runs a data-plane call; a failure marks the backend failed (finalize then skips its barrier).
  Status track(Status s);
  // runPrepared()'s end: track() and preparedOk() for a failure only.
  bool preparedTracked(Status s);

  // gloo::allreduce on the data context with --gloo-algo's algorithm: `count` elements of a.dtype from
  // `input` (null: in place) into `output`, with a.op's reduce function; `what` names the call.
  Status dataAllreduce(const OpArgs& a, const void* input, void* output, uint64_t count, const char* what);
  // On the control context: a barrier, and a gather of `n` elements per rank to rank 0 (`out` there).
  Status ctrlBarrier(const std::string& site);
  template <typename T>
  Status ctrlGather(const std::string& site, T* in, size_t n, T* out, size_t outN);

  // What a prepared op does each time the timed loop runs it.
  enum class PlannedPath : uint8_t {
    Enqueue,  // the whole of enqueue(): copies, scratch, legacy algorithms (no plan() call)
    Call,     // one Gloo call (the op's ...Call())
    Nothing,  // an empty op (count 0): no Gloo call, as enqueue() makes none
  };
  // While prepareSeries() runs an op through enqueue(): the collectives stop after their checks and
  // record which path the op takes (plan(path)).
  Status plan(PlannedPath path);
  // An empty op: nothing to do, and while planning, nothing planned.
  Status nothingToDo() { return planning_ ? plan(PlannedPath::Nothing) : Status::Ok(); }
  // The Gloo call of a checked op (prepared ops and enqueue() alike).
  Status allReduceCall(const OpArgs& a);
  Status allGatherCall(const OpArgs& a);
  Status broadcastCall(const OpArgs& a);
  Status allToAllCall(const OpArgs& a);
  Status gatherCall(const OpArgs& a);
  Status reduceScatterCall(const OpArgs& a);
  Status sendRecvCall(const OpArgs& a);

  // One per line of core/collectives.def (allReduce, allGather, ..., gatherColl, ..., hyperCube), called by enqueue().
#define CB_COLL(Enum, name, method, ...) Status method(const OpArgs& a);
#include "core/collectives.def"
#undef CB_COLL
  Status allReduceLegacy(const OpArgs& a);
  Status reduceScatterLegacy(const OpArgs& a);

  GlooConfig config_;
  bool finalized_ = false;
  bool failed_ = false;
  std::unique_ptr<gloo::rendezvous::Store> baseStore_;
  std::unique_ptr<gloo::rendezvous::Store> runStore_;  // baseStore_ keys prefixed with the run id
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> ctrl_;    // new API: barrier, combines, gathers
  std::shared_ptr<gloo::Context> data_;    // new API: the measured collectives
  std::shared_ptr<gloo::Context> legacy_;  // legacy algorithm classes only (created on first use)
  // createGroups()': per group, this rank's context (null: not a member); groupsMade_ names their store prefixes.
  std::vector<std::shared_ptr<gloo::Context>> groups_;
  uint64_t groupsMade_ = 0;
  std::vector<LegacyEntry> legacyCache_;
  // Every new-API call's options and unbound buffers, kept a few calls longer (kept_options.h: destroyed as each
  // call returned, they waited for Gloo's device thread, up to a scheduler tick per op).
  KeptOptions kept_;

  PlannedPath* planning_ = nullptr;                 // non-null only inside prepareSeries()
  PlannedPath plannedPath_ = PlannedPath::Enqueue;  // the prepared series' op
  OpArgs plannedArgs_{};                            // its op at shift 0
  // PlannedPath::Call: the op's ...Call(), chosen once by prepareSeries(); runArgs_ is plannedArgs_ with
  // send and recv moved to the shift of the op in progress (only those two change per op).
  Status (GlooBackend::*plannedCall_)(const OpArgs&) = nullptr;
  OpArgs runArgs_{};

  // HostMemoryBackend's scratch_ here: mulsum's scaled input, reduce's non-root output (Gloo writes
  // partial sums into every rank's output), reduce_scatter's working copy.
};

}  // namespace collbench
