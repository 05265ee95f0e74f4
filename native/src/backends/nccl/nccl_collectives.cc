// NcclBackend's collectives (nccl_backend.h): nccl-tests' eleven collectives enqueued on NCCL
// (docs/nccl-tests-contract.md, "Formulas": in-place layouts, PreMulSum per call, grouped send/recv fallbacks where the
// library lacks a call, hypercube rounds), NCCL groups, and nccl-tests' polled completion wait (-T).
#include "backends/nccl/nccl_backend.h"

#include <chrono>
#include <string>
#include <thread>

#include "backends/nccl/nccl_internal.h"
#include "core/backend_errors.h"
#include "core/minifloat.h"
#include "core/op_checks.h"
#include "core/pattern.h"

namespace collbench {

using ncclapi::Result;

namespace {

ncclapi::DataType ncclType(DType t) {
  return static_cast<ncclapi::DataType>(static_cast<int>(t));
}

char* at(void* p, uint64_t elems, uint64_t ts) {
  return static_cast<char*>(p) + elems * ts;
}
const char* at(const void* p, uint64_t elems, uint64_t ts) {
  return static_cast<const char*>(p) + elems * ts;
}

// nccl-tests' PreMulSum scalar (1 on even ranks, 2 on odd) as raw bits of the dtype.
uint64_t mulSumScalarBits(DType t, int groupRank) {
  const int s = pattern::mulSumScalar(groupRank);
  return dtypeIsFloat(t) ? encodeFromDouble(t, static_cast<double>(s)) : static_cast<uint64_t>(s);
}

// The collective's own NCCL call, where this library has one (nullptr: none, or a library too old for it: the caller
// emulates it with a send/recv group, or it is hypercube's rounds). issue() and runPrepared() both call through it.
const char* libraryCallName(const ncclapi::Api& api, Coll coll) {
  switch (coll) {
    case Coll::AllReduce:
      return "ncclAllReduce";
    case Coll::AllGather:
      return "ncclAllGather";
    case Coll::ReduceScatter:
      return "ncclReduceScatter";
    case Coll::Broadcast:
      return "ncclBroadcast";
    case Coll::Reduce:
      return "ncclReduce";
    case Coll::AllToAll:
      return api.AlltoAll != nullptr ? "ncclAlltoAll" : nullptr;
    case Coll::Gather:
      return api.Gather != nullptr ? "ncclGather" : nullptr;
    case Coll::Scatter:
      return api.Scatter != nullptr ? "ncclScatter" : nullptr;
    case Coll::AllToAllV:
    case Coll::SendRecv:
    case Coll::HyperCube:
      return nullptr;
  }  // no default: a collective of core/collectives.def without its case here fails the build (-Wswitch -Werror)
  return nullptr;
}

// Makes that call (only for a collective libraryCallName() names).
Result libraryCall(const ncclapi::Api& api, Coll coll, const void* send, void* recv, size_t count, ncclapi::DataType dt,
                   int op, int root, ncclapi::Comm comm, cudaStream_t stream) {
  switch (coll) {
    case Coll::AllReduce:
      return api.AllReduce(send, recv, count, dt, op, comm, stream);
    case Coll::AllGather:
      return api.AllGather(send, recv, count, dt, comm, stream);
    case Coll::ReduceScatter:
      return api.ReduceScatter(send, recv, count, dt, op, comm, stream);
    case Coll::Broadcast:
      return api.Broadcast(send, recv, count, dt, root, comm, stream);
    case Coll::Reduce:
      return api.Reduce(send, recv, count, dt, op, root, comm, stream);
    case Coll::AllToAll:
      return api.AlltoAll(send, recv, count, dt, comm, stream);
    case Coll::Gather:
      return api.Gather(send, recv, count, dt, root, comm, stream);
    case Coll::Scatter:
      return api.Scatter(send, recv, count, dt, root, comm, stream);
    case Coll::AllToAllV:
    case Coll::SendRecv:
    case Coll::HyperCube:
      break;
  }
  return ncclapi::InvalidUsage;
}

// sendrecv's ring shift (nccl-tests' SendRecvRunColl): send to rank+1, receive from rank-1.
int ringNext(int me, int n) {
  return (me + 1) % n;
}
int ringPrev(int me, int n) {
  return (me - 1 + n) % n;
}

}  // namespace

// -------------------------------------------------------------------------------------------------
// Collectives

Status NcclBackend::enqueue(const OpArgs& args) {
  if (localCount_ != 1)
    return badSpec("this process drives " + std::to_string(localCount_) + " ranks: enqueue them together",
                   "NcclBackend::enqueue");
  return enqueueAll(&args, 1);
}

Status NcclBackend::enqueueAll(const OpArgs* args, int n) {
  if (n != localCount_)
    return badSpec("got ops for " + std::to_string(n) + " of " + std::to_string(localCount_) + " local ranks",
                   "NcclBackend::enqueueAll");
  for (int i = 0; i < n; ++i)
    if (args[i].local != i) return badSpec("ops must come in local-rank order", "NcclBackend::enqueueAll");
  if (args[0].group >= 0) {
    // A group's op (one local rank: createGroups() refuses more): the group's communicator, rank and size while
    // it is issued.
    CB_TRY(checkGroupIndex(args[0].group, subGroups_.size(), "NcclBackend::enqueueAll"));
    const SubGroup& g = subGroups_[static_cast<size_t>(args[0].group)];
    if (g.comm == nullptr)
      return badSpec("rank " + std::to_string(rank()) + " is not in process group " + std::to_string(args[0].group),
                     "NcclBackend::enqueueAll");
    if (locals_[0].data == nullptr)
      return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("NcclBackend::issue"));
    struct Restore {
      NcclBackend* b;
      ncclapi::Comm data;
      int rank, size;
      ~Restore() {
        b->locals_[0].data = data;
        b->devices_[0].groupRank = rank;
        b->groupSize_ = size;
      }
    } restore{this, locals_[0].data, devices_[0].groupRank, groupSize_};
    locals_[0].data = g.comm;
    devices_[0].groupRank = g.rank;
    groupSize_ = g.size;
    return args[0].coll == Coll::HyperCube ? issueHyperCube(args, n) : issue(args[0]);
  }
  if (args[0].coll == Coll::HyperCube) return issueHyperCube(args, n);
  if (n == 1) return issue(args[0]);
  // nccl-tests: a thread driving several GPUs issues their ops inside one group.
  CB_NCCL(lib_->api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < n && first.ok; ++i) first = issue(args[i]);
  const Result r = lib_->api.GroupEnd();
  if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclGroupEnd", nullptr);
  return first;
}

Status NcclBackend::sendRecvGroup(const OpArgs& a, const char* call) {
  const ncclapi::Api& api = lib_->api;
  const Local& l = locals_[a.local];
  const ncclapi::DataType dt = ncclType(a.dtype);
  const uint64_t ts = dtypeSize(a.dtype), c = a.count;
  const int n = groupSize_, me = devices_[a.local].groupRank;
  CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  auto send = [&](const void* p, uint64_t count, int peer) {
    const Result r = api.Send(p, count, dt, peer, l.data, l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclSend", l.data);
  };
  auto recv = [&](void* p, uint64_t count, int peer) {
    const Result r = api.Recv(p, count, dt, peer, l.data, l.stream);
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, "ncclRecv", l.data);
  };
  switch (a.coll) {
    case Coll::AllToAll:  // every peer, self included (nccl-tests before ncclAlltoAll)
      for (int p = 0; p < n; ++p) {
        send(at(a.send, c * p, ts), c, p);
        recv(at(a.recv, c * p, ts), c, p);
      }
      break;
    case Coll::AllToAllV: {
      const PeerCounts& pc = *a.peers;
      for (int p = 0; p < n; ++p) {
        if (pc.sendCounts[p] > 0) send(at(a.send, pc.sendDispls[p], ts), pc.sendCounts[p], p);
        if (pc.recvCounts[p] > 0) recv(at(a.recv, pc.recvDispls[p], ts), pc.recvCounts[p], p);
      }
      break;
    }
    case Coll::Gather:  // everyone sends to the root, the root receives n chunks
      send(a.send, c, a.root);
      if (me == a.root)
        for (int p = 0; p < n; ++p) recv(at(a.recv, c * p, ts), c, p);
      break;
    case Coll::Scatter:  // the root sends n chunks, everyone receives one
      if (me == a.root)
        for (int p = 0; p < n; ++p) send(at(a.send, c * p, ts), c, p);
      recv(a.recv, c, a.root);
      break;
    case Coll::SendRecv:
      send(a.send, c, ringNext(me, n));
      recv(a.recv, c, ringPrev(me, n));
      break;
    default:
      first = badSpec(std::string(collName(a.coll)) + " is not a send/recv collective", call);
  }
  const Result r = api.GroupEnd();
  if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok) first = ncclStatus(r, call, l.data);
  return first;
}

// What issue() and prepareSeries() check of an op before NCCL sees it.
Status NcclBackend::checkOp(const OpArgs& a) const {
  CB_TRY(checkLocalIndex(a.local));
  if (locals_[a.local].data == nullptr)
    return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("NcclBackend::issue"));
  CB_TRY(checkOpArgs(a, groupSize_, "NcclBackend::issue"));  // collective, datatype, op, root: as every backend
  const size_t n = static_cast<size_t>(groupSize_);
  if ((a.coll == Coll::AllToAllV) &&
      (a.peers == nullptr || a.peers->sendCounts.size() != n || a.peers->sendDispls.size() != n ||
       a.peers->recvCounts.size() != n || a.peers->recvDispls.size() != n))
    return badSpec("alltoallv needs " + std::to_string(n) + " send/recv counts and displacements", "ncclSend");
  return Status::Ok();
}

Status NcclBackend::issue(const OpArgs& a) {
  CB_TRY(checkOp(a));
  const ncclapi::Api& api = lib_->api;
  const Local& l = locals_[a.local];
  const ncclapi::DataType dt = ncclType(a.dtype);
  if (opt_.deviceImpl > 0) return issueDevice(a);
  const int me = devices_[a.local].groupRank;

  int op = static_cast<int>(a.op);
  bool premul = false;
  if (collReducing(a.coll) && a.op == RedOp::MulSum) {
    // nccl-tests: a PreMulSum op with a host-immediate scalar, created and destroyed around each call.
    if (api.RedOpCreatePreMulSum == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD", "mulsum needs ncclRedOpCreatePreMulSum (NCCL 2.11 or newer)",
                           CB_SITE("ncclRedOpCreatePreMulSum"));
    uint64_t scalar = mulSumScalarBits(a.dtype, me);
    CB_NCCL(api.RedOpCreatePreMulSum(&op, &scalar, dt, ncclapi::ScalarHostImmediate, l.data),
            "ncclRedOpCreatePreMulSum", l.data);
    premul = true;
  }
  Status s = Status::Ok();
  Result r = ncclapi::Success;
  const char* call = libraryCallName(api, a.coll);
  if (call != nullptr) {
    r = libraryCall(api, a.coll, a.send, a.recv, a.count, dt, op, a.root, l.data, l.stream);
  } else if (a.coll == Coll::HyperCube) {
    s = issueHyperCube(&a, 1);
  } else {  // alltoallv, sendrecv, and alltoall/gather/scatter where the library lacks them: one send/recv group
    s = sendRecvGroup(a, (std::string("ncclGroupEnd (") + collName(a.coll) + ")").c_str());
  }
  if (r != ncclapi::Success && r != ncclapi::InProgress && s.ok) s = ncclStatus(r, call, l.data);
  if (premul) {
    const Result d = api.RedOpDestroy(op, l.data);
    if (d != ncclapi::Success && s.ok) s = ncclStatus(d, "ncclRedOpDestroy", l.data);
  }
  return s;
}

// The timed loop's per-op path (core/backend.h, "Prepared ops"). The generic one (Backend::runPrepared) copies the args
// and runs enqueueAll's and issue()'s checks on every op; nccl-tests' startColl does nothing per op but the shift and
// the library call. So: the series is checked here once, and for one local rank and an op that is one NCCL call (or
// sendrecv's send + recv group) without a per-call PreMulSum, runPrepared() makes that call with the arguments
// resolved now. The rest (-D kernels, several local ranks, hypercube, alltoallv, mulsum, calls the library lacks) stays
// generic.
Status NcclBackend::prepareSeries(const OpSeries& series) {
  prepared_ = PreparedOp{};
  CB_TRY(Backend::prepareSeries(series));
  if (series.nLocal != localCount_)
    return badSpec(
        "got ops for " + std::to_string(series.nLocal) + " of " + std::to_string(localCount_) + " local ranks",
        "NcclBackend::prepareSeries");
  if (series.args[0].group >= 0) return Status::Ok();  // a group's op: the generic path, enqueueAll() checks it
  for (int i = 0; i < series.nLocal; ++i) {
    if (series.args[i].local != i) return badSpec("ops must come in local-rank order", "NcclBackend::prepareSeries");
    CB_TRY(checkOp(series.args[i]));
  }
  const OpArgs& a = series.args[0];
  const ncclapi::Api& api = lib_->api;
  // -D runs collbench's own device-API kernels (issueDevice), never the library call prepared below.
  if (localCount_ != 1 || opt_.deviceImpl > 0 || (collReducing(a.coll) && a.op == RedOp::MulSum)) return Status::Ok();
  PreparedOp p;
  p.call = libraryCallName(api, a.coll);
  if (p.call == nullptr && a.coll != Coll::SendRecv) return Status::Ok();
  const int n = groupSize_, me = devices_[0].groupRank;
  p.direct = true;
  p.coll = a.coll;
  p.send = static_cast<const char*>(a.send);
  p.recv = static_cast<char*>(a.recv);
  p.count = a.count;
  p.dt = ncclType(a.dtype);
  p.op = static_cast<int>(a.op);
  p.root = a.root;
  p.sendPeer = ringNext(me, n);
  p.recvPeer = ringPrev(me, n);
  prepared_ = p;
  return Status::Ok();
}

bool NcclBackend::runPrepared(uint64_t shiftBytes) {
  const PreparedOp& p = prepared_;
  if (!p.direct) return Backend::runPrepared(shiftBytes);
  const Local& l = locals_[0];
  if (l.data == nullptr)  // aborted by a failed wait since prepareSeries()
    return preparedFail(
        Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("NcclBackend::runPrepared")));
  const ncclapi::Api& api = lib_->api;
  const char* s = p.send + shiftBytes;
  char* r = p.recv + shiftBytes;
  Result res = ncclapi::Success;
  const char* call = p.call;
  if (p.coll != Coll::SendRecv) {
    res = libraryCall(api, p.coll, s, r, p.count, p.dt, p.op, p.root, l.data, l.stream);
  } else {
    // nccl-tests' SendRecvRunColl: one group of the send to rank+1 and the receive from rank-1.
    res = api.GroupStart();
    if (res != ncclapi::Success) return preparedFail(ncclStatus(res, "ncclGroupStart", nullptr));
    const Result sr = api.Send(s, p.count, p.dt, p.sendPeer, l.data, l.stream);
    const Result rr = api.Recv(r, p.count, p.dt, p.recvPeer, l.data, l.stream);
    res = api.GroupEnd();
    if (sr != ncclapi::Success && sr != ncclapi::InProgress) return preparedFail(ncclStatus(sr, "ncclSend", l.data));
    if (rr != ncclapi::Success && rr != ncclapi::InProgress) return preparedFail(ncclStatus(rr, "ncclRecv", l.data));
    call = "ncclGroupEnd (sendrecv)";
  }
  if (res == ncclapi::Success || res == ncclapi::InProgress) return true;
  return preparedFail(ncclStatus(res, call, l.data));
}

// nccl-tests' hypercube: copy the own chunk, then log2(n) exchange rounds. Each round is one group
// over this process's ranks, so a round's sends read what the previous round received.
Status NcclBackend::issueHyperCube(const OpArgs* args, int count) {
  const ncclapi::Api& api = lib_->api;
  const int n = groupSize_;
  if ((n & (n - 1)) != 0)
    return badSpec("hypercube needs a power-of-two rank count, not " + std::to_string(n), "NcclBackend::hyperCube");
  for (int i = 0; i < count; ++i) {
    const OpArgs& a = args[i];
    CB_TRY(checkLocalIndex(a.local));
    const uint64_t ts = dtypeSize(a.dtype);
    char* mine = at(a.recv, a.count * devices_[a.local].groupRank, ts);
    CB_TRY(checkInPlace(a, devices_[a.local].groupRank, "NcclBackend::hyperCube"));
    if (!a.inPlace && a.count > 0) {
      if (opt_.streamNull) CB_TRY(setDevice(a.local));
      CB_CUDA(cudaMemcpyAsync(mine, a.send, a.count * ts, cudaMemcpyDeviceToDevice, locals_[a.local].stream),
              "cudaMemcpyAsync (hypercube own chunk)");
    }
  }
  for (int mask = 1; mask < n; mask <<= 1) {
    CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
    Status first = Status::Ok();
    for (int i = 0; i < count && first.ok; ++i) {
      const OpArgs& a = args[i];
      const Local& l = locals_[a.local];
      const uint64_t ts = dtypeSize(a.dtype), b = a.count;
      const int me = devices_[a.local].groupRank, peer = me ^ mask;
      const uint64_t sendChunk = static_cast<uint64_t>(me & ~(mask - 1));
      const uint64_t recvChunk = static_cast<uint64_t>(peer & ~(mask - 1));
      Result r = api.Send(at(a.recv, sendChunk * b, ts), b * mask, ncclType(a.dtype), peer, l.data, l.stream);
      if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "ncclSend (hypercube)", l.data);
      r = api.Recv(at(a.recv, recvChunk * b, ts), b * mask, ncclType(a.dtype), peer, l.data, l.stream);
      if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
        first = ncclStatus(r, "ncclRecv (hypercube)", l.data);
    }
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
      first = ncclStatus(r, "ncclGroupEnd (hypercube)", nullptr);
    CB_TRY(first);
  }
  return Status::Ok();
}

Status NcclBackend::groupStart() {
  CB_NCCL(lib_->api.GroupStart(), "ncclGroupStart", nullptr);
  ++groupDepth_;
  return Status::Ok();
}

Status NcclBackend::groupEnd() {
  const Result r = lib_->api.GroupEnd();
  if (groupDepth_ > 0) --groupDepth_;
  if (r != ncclapi::Success && r != ncclapi::InProgress) return ncclStatus(r, "ncclGroupEnd", nullptr);
  if (groupDepth_ == 0 && pendingBarrier_) {
    pendingBarrier_ = false;
    return barrier();
  }
  return Status::Ok();
}

// nccl-tests' completion wait: poll every stream; between polls check the communicators for
// asynchronous errors and the -T clock; abort the communicators on either.
Status NcclBackend::waitAll() {
  if (capturing_) return Status::Ok();  // a capture records, nothing runs yet
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (;;) {
    bool done = true;
    for (int i = 0; i < localCount_; ++i) {
      if (opt_.streamNull) CB_TRY(setDevice(i));
      const cudaError_t e = cudaStreamQuery(locals_[i].stream);
      if (e == cudaErrorNotReady) {
        done = false;
      } else if (e != cudaSuccess) {
        cudaGetLastError();
        return cudaStatus(e, "cudaStreamQuery");
      }
    }
    if (done) return Status::Ok();
    for (const Local& l : locals_) {
      // Without NCCL_TESTS_SPLIT data is world: ask once per poll, as nccl-tests does.
      for (ncclapi::Comm c : {l.data, l.world == l.data ? nullptr : l.world}) {
        if (c == nullptr) continue;
        Result async = ncclapi::Success;
        const Result r = lib_->api.CommGetAsyncError(c, &async);
        if (r != ncclapi::Success) return ncclStatus(r, "ncclCommGetAsyncError", c);
        if (async != ncclapi::Success && async != ncclapi::InProgress) {
          const Status s = ncclStatus(async, "asynchronous NCCL operation", c);
          return abortAll(s.message(), s.code());
        }
      }
    }
    if (abortRequested_.load())
      return abortAll("Test timeout: aborted by the watchdog while waiting for completion", "TIMEOUT");
    if (opt_.timeoutSec > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() > static_cast<double>(opt_.timeoutSec))
      return abortAll("Test timeout (" + std::to_string(opt_.timeoutSec) + "s) waiting for completion", "TIMEOUT");
    std::this_thread::yield();
  }
}

}  // namespace collbench
