// GlooBackend's collectives: nccl-tests' eleven collectives on Gloo's blocking collectives over host buffers, avg and
// mulsum emulated around sum as the MPI backend does, reduce_scatter and the legacy all_reduce algorithms on Gloo's
// legacy classes, and the timed loop's prepared ops. Every Gloo call runs inside CB_GLOO: no exception escapes.
#include "backends/gloo/gloo_backend.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#ifndef COLLBENCH_GLOO_NO_REDIS
#include <gloo/rendezvous/redis_store.h>
#endif
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "backends/gloo/gloo_types.h"
#include "core/backend_errors.h"
#include "core/op_checks.h"
#include "core/pattern.h"

namespace collbench {
namespace {

constexpr uint8_t kP2PSlotPrefix = 0x43;  // "C": sendrecv and hypercube point-to-point traffic

char* bytesAt(void* p, uint64_t elems, uint64_t ts) {
  return static_cast<char*>(p) + elems * ts;
}
const char* bytesAt(const void* p, uint64_t elems, uint64_t ts) {
  return static_cast<const char*>(p) + elems * ts;
}
uint8_t* bytePtr(const void* p) {
  return static_cast<uint8_t*>(const_cast<void*>(p));
}

// Legacy classes take `int` counts and keep `int` byte counts.
Status legacyCount(uint64_t count, uint64_t ts, const char* what, int* out) {
  if (count * ts > static_cast<uint64_t>(INT_MAX))
    return Status::Error("core", "CORE_COUNT_TOO_LARGE",
                         std::string(what) + ": " + std::to_string(count * ts) +
                             " bytes exceed INT_MAX, the largest buffer Gloo's legacy classes take",
                         CB_SITE(what));
  *out = static_cast<int>(count);
  return Status::Ok();
}

// ---- legacy reduction functions ------------------------------------------------------------

template <DType D, RedOp O, bool GlooHalf>
void legacyReduce(typename ElementOf<D>::type* x, const typename ElementOf<D>::type* y, size_t n) {
  reduceElements<D, O, GlooHalf>(x, x, y, n);
}

template <DType D, bool GlooHalf>
const gloo::ReductionFunction<typename ElementOf<D>::type>* legacyFunctionOf(RedOp op) {
  using RF = gloo::ReductionFunction<typename ElementOf<D>::type>;
  static const RF sum(gloo::SUM, &legacyReduce<D, RedOp::Sum, GlooHalf>);
  static const RF prod(gloo::PRODUCT, &legacyReduce<D, RedOp::Prod, GlooHalf>);
  static const RF max(gloo::MAX, &legacyReduce<D, RedOp::Max, GlooHalf>);
  static const RF min(gloo::MIN, &legacyReduce<D, RedOp::Min, GlooHalf>);
  switch (baseOp(op)) {
    case RedOp::Prod:
      return &prod;
    case RedOp::Max:
      return &max;
    case RedOp::Min:
      return &min;
    default:
      return &sum;
  }
}

// The legacy classes' ReductionFunction<T> for dtype D: the same element functions as the new API
// (gloo/math.h for native types, element_ops.h for raw storage types).
template <DType D>
const gloo::ReductionFunction<typename ElementOf<D>::type>* legacyFunction(RedOp op, bool glooHalf) {
  return glooHalf ? legacyFunctionOf<D, true>(op) : legacyFunctionOf<D, false>(op);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Memory

Status GlooBackend::scaledInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace,
                                uint64_t scratchOffset, const void** out) {
  const int scalar = pattern::mulSumScalar(config_.rank);  // 1 on even ranks, 2 on odd
  if (scalar == 1) return Status::Ok();
  if (scaleInPlace) {
    glooScaleElements(a.dtype, input, const_cast<void*>(input), elems, scalar);
    return Status::Ok();
  }
  CB_TRY(ensureScratch(scratchOffset + elems * dtypeSize(a.dtype)));
  void* dst = static_cast<char*>(scratch_.ptr) + scratchOffset;
  glooScaleElements(a.dtype, input, dst, elems, scalar);
  *out = dst;
  return Status::Ok();
}

Status GlooBackend::legacyAlgorithm(LegacyKind kind, DType dtype, RedOp op, void* ptr, uint64_t count,
                                    gloo::Algorithm** out) {
  const RedOp base = baseOp(op);
  for (LegacyEntry& e : legacyCache_) {
    if (e.kind == kind && e.dtype == dtype && e.op == base && e.ptr == ptr && e.count == count) {
      *out = e.algorithm.get();
      return Status::Ok();
    }
  }
  // A new shape (another size, type or op): the old objects will not be used again.
  if (!legacyCache_.empty()) {
    const LegacyEntry& last = legacyCache_.back();
    if (last.kind != kind || last.dtype != dtype || last.op != base || last.count != count) dropLegacyAlgorithms();
  }
  CB_TRY(legacyContext());
  int n = 0;
  CB_TRY(legacyCount(count, dtypeSize(dtype), "gloo legacy algorithm", &n));
  std::unique_ptr<gloo::Algorithm> algo;
  CB_TRY(dispatchDType(dtype, [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::value;
    using T = typename ElementOf<D>::type;
    const std::vector<T*> ptrs{static_cast<T*>(ptr)};
    const auto* fn = legacyFunction<D>(op, config_.glooFloat16);
    CB_GLOO("gloo legacy algorithm constructor", {
      switch (kind) {
        case LegacyKind::Ring:
          algo.reset(new gloo::AllreduceRing<T>(legacy_, ptrs, n, fn));
          break;
        case LegacyKind::RingChunked:
          algo.reset(new gloo::AllreduceRingChunked<T>(legacy_, ptrs, n, fn));
          break;
        case LegacyKind::HalvingDoubling:
          algo.reset(new gloo::AllreduceHalvingDoubling<T>(legacy_, ptrs, n, fn));
          break;
        case LegacyKind::Bcube:
          algo.reset(new gloo::AllreduceBcube<T>(legacy_, ptrs, n, fn));
          break;
        case LegacyKind::ReduceScatter: {
          const std::vector<int> recvElems(config_.size, n / config_.size);
          algo.reset(new gloo::ReduceScatterHalvingDoubling<T>(legacy_, ptrs, n, recvElems, fn));
          break;
        }
      }
    });
    return Status::Ok();
  }));
  *out = algo.get();
  legacyCache_.push_back(LegacyEntry{kind, dtype, base, ptr, count, std::move(algo)});
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Prepared ops (the timed loop)

Status GlooBackend::plan(PlannedPath path) {
  *planning_ = path;
  return Status::Ok();
}

Status GlooBackend::prepareSeries(const OpSeries& series) {
  if (series.args == nullptr || series.nLocal != 1)
    return badSpec("GlooBackend drives one rank per process: a series needs exactly one op",
                   "GlooBackend::prepareSeries");
  // enqueue()'s own checks, with every region widened by the largest shift; no Gloo call, no data moved.
  PlannedPath path = PlannedPath::Enqueue;
  planning_ = &path;
  regionShift_ = series.maxShiftBytes;
  const Status s = enqueue(series.args[0]);
  planning_ = nullptr;
  regionShift_ = 0;
  plannedPath_ = PlannedPath::Enqueue;
  CB_TRY(s);
  plannedArgs_ = series.args[0];
  runArgs_ = plannedArgs_;
  plannedCall_ = nullptr;
  if (path == PlannedPath::Call) {
    switch (plannedArgs_.coll) {
      case Coll::AllReduce:
        plannedCall_ = &GlooBackend::allReduceCall;
        break;
      case Coll::AllGather:
        plannedCall_ = &GlooBackend::allGatherCall;
        break;
      case Coll::Broadcast:
        plannedCall_ = &GlooBackend::broadcastCall;
        break;
      case Coll::AllToAll:
        plannedCall_ = &GlooBackend::allToAllCall;
        break;
      case Coll::Gather:
        plannedCall_ = &GlooBackend::gatherCall;
        break;
      case Coll::ReduceScatter:
        plannedCall_ = &GlooBackend::reduceScatterCall;
        break;
      case Coll::SendRecv:
        plannedCall_ = &GlooBackend::sendRecvCall;
        break;
      default:
        path = PlannedPath::Enqueue;
        break;
    }
  }
  plannedPath_ = path;
  return Status::Ok();
}

bool GlooBackend::runPrepared(uint64_t shiftBytes) {
  if (plannedPath_ == PlannedPath::Nothing) return true;
  runArgs_.send = static_cast<const char*>(plannedArgs_.send) + shiftBytes;
  runArgs_.recv = static_cast<char*>(plannedArgs_.recv) + shiftBytes;
  // A group's op goes through enqueue(), which puts the group's context in place while it runs.
  if (plannedPath_ == PlannedPath::Call && runArgs_.group < 0) return preparedTracked((this->*plannedCall_)(runArgs_));
  return preparedOk(enqueue(runArgs_));
}

// ---------------------------------------------------------------------------------------------
// Collectives

Status GlooBackend::enqueue(const OpArgs& a) {
  CB_TRY(alive("enqueue"));
  if (a.group < 0) return enqueueOn(a);
  CB_TRY(checkGroupIndex(a.group, groups_.size(), "GlooBackend::enqueue"));
  const std::shared_ptr<gloo::Context>& ctx = groups_[static_cast<size_t>(a.group)];
  if (!ctx)
    return badSpec("rank " + std::to_string(config_.rank) + " is not in process group " + std::to_string(a.group),
                   "GlooBackend::enqueue");
  if (config_.algo >= GlooAlgo::LegacyRing && (a.coll == Coll::AllReduce || a.coll == Coll::ReduceScatter))
    return badSpec(std::string("--gloo-algo ") + glooAlgoName(config_.algo) +
                       " runs on the world only (Gloo's legacy classes), not on process group " +
                       std::to_string(a.group),
                   "GlooBackend::enqueue");
  // The op sees the group as its world for as long as it runs.
  struct Restore {
    GlooBackend* b;
    std::shared_ptr<gloo::Context> data;
    int rank, size;
    ~Restore() {
      b->data_ = std::move(data);
      b->config_.rank = rank;
      b->config_.size = size;
    }
  } restore{this, data_, config_.rank, config_.size};
  data_ = ctx;
  config_.rank = ctx->rank;
  config_.size = ctx->size;
  return enqueueOn(a);
}

Status GlooBackend::createGroups(const std::vector<std::vector<int>>& groups) {
  CB_TRY(alive("createGroups"));
  closeGroups();
  CB_TRY(checkGroups(groups, config_.size, "GlooBackend::createGroups"));
  for (const std::vector<int>& ranks : groups) {
    const int mine = groupRank(ranks, config_.rank);
    const std::string prefix = "group" + std::to_string(groupsMade_++);
    groups_.emplace_back();
    if (mine < 0) continue;
    auto c = std::make_shared<gloo::rendezvous::Context>(mine, static_cast<int>(ranks.size()));
    c->setTimeout(std::chrono::milliseconds(config_.timeoutMs));
    CB_GLOO("gloo::rendezvous::Context::connectFullMesh (process group " + std::to_string(groups_.size() - 1) + " of " +
                std::to_string(ranks.size()) + " ranks, as its rank " + std::to_string(mine) + ")",
            {
              gloo::rendezvous::PrefixStore store(prefix, *runStore_);
              c->connectFullMesh(store, device_);
            });
    groups_.back() = c;
  }
  return Status::Ok();
}

Status GlooBackend::enqueueOn(const OpArgs& a) {
  CB_TRY(checkOpArgs(a, config_.size, "GlooBackend::enqueue"));
  switch (a.coll) {  // one member function per line of core/collectives.def
#define CB_COLL(Enum, name, method, ...) \
  case Coll::Enum:                       \
    return track(method(a));
#include "core/collectives.def"
#undef CB_COLL
  }
  return badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), "GlooBackend::enqueue");
}

Status GlooBackend::allReduce(const OpArgs& a) {
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::allreduce"));
  switch (config_.algo) {
    case GlooAlgo::LegacyRing:
    case GlooAlgo::LegacyRingChunked:
    case GlooAlgo::LegacyHalvingDoubling:
    case GlooAlgo::LegacyBcube:
      if (planning_) return Status::Ok();  // Generic: copies and the cached algorithm object
      return allReduceLegacy(a);
    default:
      break;
  }
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(a.op != RedOp::MulSum && a.op != RedOp::Avg ? PlannedPath::Call : PlannedPath::Enqueue);
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, a.inPlace, 0, &src));
  CB_TRY(dataAllreduce(a, a.inPlace ? nullptr : src, a.recv, a.count, "gloo::allreduce"));
  if (a.op == RedOp::Avg) glooDivideElements(a.dtype, a.recv, a.count, config_.size);
  return Status::Ok();
}

Status GlooBackend::allReduceCall(const OpArgs& a) {
  return dataAllreduce(a, a.inPlace ? nullptr : a.send, a.recv, a.count, "gloo::allreduce");
}

Status GlooBackend::dataAllreduce(const OpArgs& a, const void* input, void* output, uint64_t count, const char* what) {
  const auto algorithm = config_.algo == GlooAlgo::Ring    ? gloo::AllreduceOptions::Algorithm::RING
                         : config_.algo == GlooAlgo::Bcube ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                           : gloo::AllreduceOptions::Algorithm::UNSPECIFIED;
  return dispatchDType(a.dtype, [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::value;
    using T = typename ElementOf<D>::type;
    CB_GLOO(what, {
      auto& opts = kept_.make<gloo::AllreduceOptions>(data_);
      if (input != nullptr) opts.setInput<T>(static_cast<T*>(const_cast<void*>(input)), count);
      opts.setOutput<T>(static_cast<T*>(output), count);
      opts.setAlgorithm(algorithm);
      opts.setReduceFunction(reduceFunction<D>(a.op, config_.glooFloat16));
      opts.setTag(kTag);
      gloo::allreduce(opts);
    });
    return Status::Ok();
  });
}

Status GlooBackend::allReduceLegacy(const OpArgs& a) {
  // Legacy classes reduce in place: out of place, the (scaled) input is first copied to recv.
  if (a.count == 0) return Status::Ok();
  const uint64_t bytes = a.count * dtypeSize(a.dtype);
  if (a.op == RedOp::MulSum && pattern::mulSumScalar(config_.rank) != 1) {
    glooScaleElements(a.dtype, a.send, a.recv, a.count, pattern::mulSumScalar(config_.rank));
  } else if (!a.inPlace) {
    std::memcpy(a.recv, a.send, bytes);
  }
  LegacyKind kind = LegacyKind::Ring;
  switch (config_.algo) {
    case GlooAlgo::LegacyRingChunked:
      kind = LegacyKind::RingChunked;
      break;
    case GlooAlgo::LegacyHalvingDoubling:
      kind = LegacyKind::HalvingDoubling;
      break;
    case GlooAlgo::LegacyBcube:
      kind = LegacyKind::Bcube;
      break;
    default:
      break;
  }
  gloo::Algorithm* algo = nullptr;
  CB_TRY(legacyAlgorithm(kind, a.dtype, a.op, a.recv, a.count, &algo));
  CB_GLOO(std::string("gloo::Allreduce") +
              (kind == LegacyKind::Ring              ? "Ring"
               : kind == LegacyKind::RingChunked     ? "RingChunked"
               : kind == LegacyKind::HalvingDoubling ? "HalvingDoubling"
                                                     : "Bcube") +
              "::run",
          algo->run());
  if (a.op == RedOp::Avg) glooDivideElements(a.dtype, a.recv, a.count, config_.size);
  return Status::Ok();
}

Status GlooBackend::allGather(const OpArgs& a) {
  const uint64_t n = config_.size;
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count * n, "recv"));
  // In place, this rank's chunk already sits at recv + rank·count (nccl-tests' layout), which is
  // what Gloo's allgather expects when no input is given.
  CB_TRY(checkInPlace(a, config_.rank, "gloo::allgather"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return allGatherCall(a);
}

Status GlooBackend::allGatherCall(const OpArgs& a) {
  const uint64_t ts = dtypeSize(a.dtype), n = config_.size;
  CB_GLOO("gloo::allgather", {
    auto& opts = kept_.make<gloo::AllgatherOptions>(data_);
    if (!a.inPlace) opts.setInput<uint8_t>(bytePtr(a.send), a.count * ts);
    opts.setOutput<uint8_t>(bytePtr(a.recv), a.count * ts * n);
    opts.setTag(kTag);
    gloo::allgather(opts);
  });
  return Status::Ok();
}

Status GlooBackend::reduceScatter(const OpArgs& a) {
  const uint64_t total = a.count * config_.size;
  CB_TRY(region(a, a.send, total, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo reduce_scatter"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return reduceScatterCall(a);
}

Status GlooBackend::reduceScatterCall(const OpArgs& a) {
  const uint64_t ts = dtypeSize(a.dtype), total = a.count * config_.size;
  if (config_.algo == GlooAlgo::LegacyHalvingDoubling) return reduceScatterLegacy(a);
  // Gloo's new API has no reduce-scatter. As PyTorch's ProcessGroupGloo does it: an all-reduce of
  // the whole input (into a copy), then this rank's block. In place the full buffer is the recv
  // buffer, which may be overwritten, and the block already sits at recv.
  // Out of place: scratch = [mulsum-scaled input | all-reduce output].
  void* work = const_cast<void*>(a.send);
  const uint64_t offset = a.op == RedOp::MulSum ? (total * ts + 63) / 64 * 64 : 0;
  if (!a.inPlace) {
    CB_TRY(ensureScratch(offset + total * ts));
    work = static_cast<char*>(scratch_.ptr) + offset;
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, total, a.inPlace, 0, &src));
  CB_TRY(dataAllreduce(a, a.inPlace ? nullptr : src, work, total, "gloo::allreduce (reduce_scatter)"));
  const char* block = bytesAt(work, a.count * config_.rank, ts);
  if (block != a.recv) std::memcpy(a.recv, block, a.count * ts);
  if (a.op == RedOp::Avg) glooDivideElements(a.dtype, a.recv, a.count, config_.size);
  return Status::Ok();
}

Status GlooBackend::reduceScatterLegacy(const OpArgs& a) {
  // Gloo's one reduce-scatter class, ReduceScatterHalvingDoubling (legacy API, legacy context): it
  // reduces in place over the full buffer and leaves this rank's block at its start.
  const uint64_t ts = dtypeSize(a.dtype), total = a.count * config_.size;
  void* work = nullptr;
  if (a.inPlace) {
    // The full buffer is the recv buffer: overwriting it is allowed; mulsum scales it in place.
    work = const_cast<void*>(a.send);
    const void* unused = nullptr;
    CB_TRY(reduceInput(a, a.send, total, true, 0, &unused));
  } else {
    // The send buffer must stay unchanged: work on a (scaled) copy in the scratch buffer.
    CB_TRY(ensureScratch(total * ts));
    work = scratch_.ptr;
    const int scalar = a.op == RedOp::MulSum ? pattern::mulSumScalar(config_.rank) : 1;
    if (scalar != 1)
      glooScaleElements(a.dtype, a.send, work, total, scalar);
    else
      std::memcpy(work, a.send, total * ts);
  }
  gloo::Algorithm* algo = nullptr;
  CB_TRY(legacyAlgorithm(LegacyKind::ReduceScatter, a.dtype, a.op, work, total, &algo));
  CB_GLOO("gloo::ReduceScatterHalvingDoubling::run", algo->run());
  if (a.recv != work) std::memmove(a.recv, work, a.count * ts);
  if (a.op == RedOp::Avg) glooDivideElements(a.dtype, a.recv, a.count, config_.size);
  return Status::Ok();
}

Status GlooBackend::broadcast(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  if (isRoot) CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::broadcast"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return broadcastCall(a);
}

Status GlooBackend::broadcastCall(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  const uint64_t bytes = a.count * dtypeSize(a.dtype);
  CB_GLOO("gloo::broadcast", {
    auto& opts = kept_.make<gloo::BroadcastOptions>(data_);
    // ncclBroadcast sends from the root's send buffer: Gloo takes it as the root's input.
    if (isRoot && a.send != a.recv) opts.setInput<uint8_t>(bytePtr(a.send), bytes);
    opts.setOutput<uint8_t>(bytePtr(a.recv), bytes);
    opts.setRoot(a.root);
    opts.setTag(kTag);
    gloo::broadcast(opts);
  });
  return Status::Ok();
}

Status GlooBackend::reduce(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  const uint64_t ts = dtypeSize(a.dtype), bytes = a.count * ts;
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::reduce"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return Status::Ok();  // Generic: non-roots reduce into the scratch buffer
  // Gloo's ring reduce writes partial results into every rank's output, but a non-root's recv
  // buffer must stay unchanged (nccl-tests checks it): non-roots reduce into the scratch buffer,
  // after the (mulsum-scaled) input region.
  const uint64_t outOffset = (bytes + 63) / 64 * 64;
  if (!isRoot || a.op == RedOp::MulSum) CB_TRY(ensureScratch(2 * outOffset));
  const bool rootInPlace = a.inPlace && isRoot;
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, rootInPlace, 0, &src));
  void* dst = isRoot ? a.recv : static_cast<char*>(scratch_.ptr) + outOffset;
  CB_TRY(dispatchDType(a.dtype, [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::value;
    using T = typename ElementOf<D>::type;
    CB_GLOO("gloo::reduce", {
      auto& opts = kept_.make<gloo::ReduceOptions>(data_);
      if (!rootInPlace) opts.setInput<T>(static_cast<T*>(const_cast<void*>(src)), a.count);
      opts.setOutput<T>(static_cast<T*>(dst), a.count);
      opts.setRoot(a.root);
      opts.setReduceFunction(reduceFunction<D>(a.op, config_.glooFloat16));
      opts.setTag(kTag);
      gloo::reduce(opts);
    });
    return Status::Ok();
  }));
  if (a.op == RedOp::Avg && isRoot) glooDivideElements(a.dtype, a.recv, a.count, config_.size);
  return Status::Ok();
}

Status GlooBackend::allToAll(const OpArgs& a) {
  const uint64_t n = config_.size;
  CB_TRY(region(a, a.send, a.count * n, "send"));
  CB_TRY(region(a, a.recv, a.count * n, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::alltoall"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return allToAllCall(a);
}

Status GlooBackend::allToAllCall(const OpArgs& a) {
  const uint64_t bytes = a.count * dtypeSize(a.dtype) * config_.size;
  // In place (not validated by nccl-tests: not a valid use) Gloo gets the same buffer twice, as
  // NCCL does.
  CB_GLOO("gloo::alltoall", {
    auto& opts = kept_.make<gloo::AlltoallOptions>(data_);
    opts.setInput<uint8_t>(bytePtr(a.send), bytes);
    opts.setOutput<uint8_t>(bytePtr(a.recv), bytes);
    opts.setTag(kTag);
    gloo::alltoall(opts);
  });
  return Status::Ok();
}

Status GlooBackend::allToAllV(const OpArgs& a) {
  const PeerCounts* p = a.peers;
  const size_t np = static_cast<size_t>(config_.size);
  if (p == nullptr || p->sendCounts.size() != np || p->sendDispls.size() != np || p->recvCounts.size() != np ||
      p->recvDispls.size() != np)
    return badSpec("alltoallv needs " + std::to_string(np) + " send/recv counts and displacements", "gloo::alltoallv");
  const uint64_t ts = dtypeSize(a.dtype);
  // Gloo's alltoallv takes per-rank counts only and packs the blocks back to back: the
  // displacements must be those prefix sums (they are, in nccl-tests' generated and matrix modes).
  std::vector<int64_t> sendBytes(np), recvBytes(np);
  uint64_t sendEnd = 0, recvEnd = 0;
  for (size_t i = 0; i < np; ++i) {
    if (p->sendDispls[i] != sendEnd || p->recvDispls[i] != recvEnd)
      return badSpec("alltoallv on gloo needs packed blocks (displacement = sum of earlier counts)", "gloo::alltoallv");
    sendEnd += p->sendCounts[i];
    recvEnd += p->recvCounts[i];
    sendBytes[i] = static_cast<int64_t>(p->sendCounts[i] * ts);
    recvBytes[i] = static_cast<int64_t>(p->recvCounts[i] * ts);
  }
  CB_TRY(region(a, a.send, sendEnd, "send"));
  CB_TRY(region(a, a.recv, recvEnd, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::alltoallv"));
  if (planning_) return Status::Ok();  // Generic: per-peer byte counts
  // Every rank takes part even with nothing to move: Gloo still exchanges empty messages.
  CB_GLOO("gloo::alltoallv", {
    auto& opts = kept_.make<gloo::AlltoallvOptions>(data_);
    opts.setInput<uint8_t>(bytePtr(a.send), sendBytes);
    opts.setOutput<uint8_t>(bytePtr(a.recv), recvBytes);
    opts.setTag(kTag);
    gloo::alltoallv(opts);
  });
  return Status::Ok();
}

Status GlooBackend::gatherColl(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count * config_.size, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::gather"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return gatherCall(a);
}

Status GlooBackend::gatherCall(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  const uint64_t bytes = a.count * dtypeSize(a.dtype);
  CB_GLOO("gloo::gather", {
    auto& opts = kept_.make<gloo::GatherOptions>(data_);
    opts.setInput<uint8_t>(bytePtr(a.send), bytes);
    if (isRoot) opts.setOutput<uint8_t>(bytePtr(a.recv), bytes * config_.size);
    opts.setRoot(a.root);
    opts.setTag(kTag);
    gloo::gather(opts);
  });
  return Status::Ok();
}

Status GlooBackend::scatter(const OpArgs& a) {
  const bool isRoot = config_.rank == a.root;
  const uint64_t ts = dtypeSize(a.dtype), bytes = a.count * ts;
  if (isRoot) CB_TRY(region(a, a.send, a.count * config_.size, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::scatter"));
  if (a.count == 0) return nothingToDo();
  if (planning_) return Status::Ok();  // Generic: the root's chunk list
  CB_GLOO("gloo::scatter", {
    auto& opts = kept_.make<gloo::ScatterOptions>(data_);
    if (isRoot) {
      std::vector<uint8_t*> chunks(config_.size);
      for (int r = 0; r < config_.size; ++r) chunks[r] = bytePtr(bytesAt(a.send, a.count * r, ts));
      opts.setInputs<uint8_t>(chunks, bytes);
    }
    opts.setOutput<uint8_t>(bytePtr(a.recv), bytes);
    opts.setRoot(a.root);
    opts.setTag(kTag);
    gloo::scatter(opts);
  });
  return Status::Ok();
}

Status GlooBackend::sendRecv(const OpArgs& a) {
  const uint64_t bytes = a.count * dtypeSize(a.dtype);
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, config_.rank, "gloo::UnboundBuffer"));
  if (bytes == 0) return nothingToDo();
  if (planning_) return plan(PlannedPath::Call);
  return sendRecvCall(a);
}

Status GlooBackend::sendRecvCall(const OpArgs& a) {
  const uint64_t bytes = a.count * dtypeSize(a.dtype);
  const int size = config_.size, rank = config_.rank;
  if (size == 1) {
    if (a.send != a.recv) std::memmove(a.recv, a.send, bytes);
    return Status::Ok();
  }
  const int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
  CB_GLOO("gloo::transport::UnboundBuffer send/recv", {
    auto& out = kept_.adopt(data_->createUnboundBuffer(const_cast<void*>(a.send), bytes));
    auto& in = kept_.adopt(data_->createUnboundBuffer(a.recv, bytes));
    const auto slot = gloo::Slot::build(kP2PSlotPrefix, 0);
    in.recv(prev, slot);
    out.send(next, slot);
    in.waitRecv();
    out.waitSend();
  });
  return Status::Ok();
}

Status GlooBackend::hyperCube(const OpArgs& a) {
  const int size = config_.size, rank = config_.rank;
  if ((size & (size - 1)) != 0)
    return badSpec("hypercube needs a power-of-two rank count, not " + std::to_string(size), "GlooBackend::hyperCube");
  const uint64_t ts = dtypeSize(a.dtype), b = a.count;
  CB_TRY(region(a, a.send, b, "send"));
  CB_TRY(region(a, a.recv, b * size, "recv"));
  char* mine = bytesAt(a.recv, b * rank, ts);
  CB_TRY(checkInPlace(a, config_.rank, "GlooBackend::hyperCube"));
  if (planning_) return Status::Ok();  // Generic: log2(nranks) rounds
  if (!a.inPlace && b > 0) {
    std::memmove(mine, a.send, b * ts);
  }
  if (b == 0 || size == 1) return Status::Ok();
  // nccl-tests' hypercube: after round `mask`, each rank holds the `2·mask` chunks of its subcube.
  CB_GLOO("gloo::transport::UnboundBuffer send/recv (hypercube)", {
    auto& buf = kept_.adopt(data_->createUnboundBuffer(a.recv, b * size * ts));
    uint32_t round = 0;
    for (int mask = 1; mask < size; mask <<= 1, ++round) {
      const int peer = rank ^ mask;
      const uint64_t sendChunk = static_cast<uint64_t>(rank & ~(mask - 1));
      const uint64_t recvChunk = static_cast<uint64_t>(peer & ~(mask - 1));
      const uint64_t n = b * mask * ts;
      const auto slot = gloo::Slot::build(kP2PSlotPrefix, 1 + round);
      buf.recv(peer, slot, recvChunk * b * ts, n);
      buf.send(peer, slot, sendChunk * b * ts, n);
      buf.waitRecv();
      buf.waitSend();
    }
  });
  return Status::Ok();
}

}  // namespace collbench
