// MpiBackend's collectives: nccl-tests' eleven collectives mapped onto blocking MPI calls over host buffers
// (docs/nccl-tests-contract.md, "Formulas", in-place layouts included), avg and mulsum emulated around MPI_SUM, and the
// prepared ops of the timed loop. Every MPI return code goes through CB_MPI (mpi_types.h) into a Status.
#include "backends/mpi/mpi_backend.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/mpi/mpi_types.h"
#include "core/backend_errors.h"
#include "core/op_checks.h"
#include "core/pattern.h"

namespace collbench {
namespace {

constexpr int kTag = 0x4342;  // "CB": point-to-point traffic of sendrecv and hypercube

// The largest piece of a split op: INT_MAX rounded down to 4096 elements, so every piece but the last starts
// page- and cache-line-aligned like the whole buffer.
constexpr uint64_t kMaxPiece = static_cast<uint64_t>(INT_MAX) & ~uint64_t{4095};

// Runs call(byteOffset, n) once with the whole count when it fits an int (the usual case: one MPI call, as
// before), else over ceil(count / kMaxPiece) nearly equal pieces of at most kMaxPiece elements, in order,
// stopping at the first error. Why pieces and not one call on a contiguous derived datatype: the reductions
// use user-defined MPI_Ops (half, bfloat16, f8, the saturating small-int sum fix) that dispatch on the
// predefined datatype they are given, MPI's predefined ops are defined on predefined datatypes only, and a
// count that is not a multiple of the block would need a second call anyway. Element-wise collectives are
// exactly the same operation when split, so the result and its check are unchanged; the timed op is then
// several library calls, one after the other.
template <class Call>
int forPieces(uint64_t count, uint64_t ts, Call&& call) {
  if (count <= static_cast<uint64_t>(INT_MAX)) return call(uint64_t{0}, static_cast<int>(count));
  const uint64_t pieces = (count + kMaxPiece - 1) / kMaxPiece;
  const uint64_t per = ((count + pieces - 1) / pieces + 4095) & ~uint64_t{4095};  // <= kMaxPiece
  for (uint64_t off = 0; off < count; off += per) {
    const int rc = call(off * ts, static_cast<int>(std::min(per, count - off)));
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// A buffer argument `bytes` further on; MPI_IN_PLACE stays MPI_IN_PLACE.
const void* piece(const void* p, uint64_t bytes) {
  return p == MPI_IN_PLACE ? p : static_cast<const char*>(p) + bytes;
}
void* piece(void* p, uint64_t bytes) {
  return p == MPI_IN_PLACE ? p : static_cast<char*>(p) + bytes;
}

#define CB_MPI_AT(rc_expr, name)                                                                  \
  do {                                                                                            \
    const int cb_mpi_rc_ = (rc_expr);                                                             \
    if (cb_mpi_rc_ != MPI_SUCCESS) return ::collbench::mpiErrorStatus(cb_mpi_rc_, CB_SITE(name)); \
  } while (0)

char* bytesAt(void* p, uint64_t elems, uint64_t ts) {
  return static_cast<char*>(p) + elems * ts;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Memory

Status MpiBackend::reduceInput(const OpArgs& a, const void* input, uint64_t elems, bool scaleInPlace,
                               const void** out) {
  *out = input;
  if (a.op != RedOp::MulSum) return Status::Ok();
  const int scalar = pattern::mulSumScalar(rank_);  // 1 on even ranks, 2 on odd
  if (scalar == 1) return Status::Ok();             // x·1 = x exactly, for every dtype
  if (scaleInPlace) {
    scaleElements(a.dtype, input, const_cast<void*>(input), elems, scalar);
    return Status::Ok();
  }
  CB_TRY(ensureScratch(elems * dtypeSize(a.dtype)));
  scaleElements(a.dtype, input, scratch_.ptr, elems, scalar);
  *out = scratch_.ptr;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Collectives

Status MpiBackend::enqueue(const OpArgs& a) {
  CB_TRY(alive("enqueue"));
  if (a.group < 0) return enqueueOn(a);
  CB_TRY(checkGroupIndex(a.group, groups_.size(), "MpiBackend::enqueue"));
  const Group& g = groups_[static_cast<size_t>(a.group)];
  if (g.comm == MPI_COMM_NULL)
    return badSpec("rank " + std::to_string(rank_) + " is not in process group " + std::to_string(a.group),
                   "MpiBackend::enqueue");
  // The op sees the group as its world for as long as it runs (and plan() records the group's communicator).
  struct Restore {
    MpiBackend* b;
    MPI_Comm comm;
    int rank, size;
    ~Restore() {
      b->comm_ = comm;
      b->rank_ = rank;
      b->size_ = size;
    }
  } restore{this, comm_, rank_, size_};
  comm_ = g.comm;
  rank_ = g.rank;
  size_ = g.size;
  return enqueueOn(a);
}

Status MpiBackend::createGroups(const std::vector<std::vector<int>>& groups) {
  CB_TRY(alive("createGroups"));
  CB_TRY(freeGroups());
  CB_TRY(checkGroups(groups, size_, "MpiBackend::createGroups"));
  for (const std::vector<int>& ranks : groups) {
    const int mine = groupRank(ranks, rank_);
    Group g;
    // Collective over the data communicator: every rank, every group, in the list's order (as torch's new_group).
    CB_MPI_AT(MPI_Comm_split(comm_, mine < 0 ? MPI_UNDEFINED : 0, mine, &g.comm), "MPI_Comm_split");
    groups_.push_back(g);  // kept before any check below, so freeGroups() frees it on error
    if (g.comm == MPI_COMM_NULL) continue;
    CB_MPI_AT(MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    CB_MPI_AT(MPI_Comm_rank(g.comm, &groups_.back().rank), "MPI_Comm_rank");
    CB_MPI_AT(MPI_Comm_size(g.comm, &groups_.back().size), "MPI_Comm_size");
    if (groups_.back().rank != mine || groups_.back().size != static_cast<int>(ranks.size()))
      return Status::Error("mpi", "MPI_GROUP_MISMATCH",
                           "rank " + std::to_string(rank_) + ": MPI_Comm_split made process group " +
                               std::to_string(groups_.size() - 1) + " rank " + std::to_string(groups_.back().rank) +
                               " of " + std::to_string(groups_.back().size) + ", expected rank " +
                               std::to_string(mine) + " of " + std::to_string(ranks.size()),
                           CB_SITE("MpiBackend::createGroups"));
  }
  return Status::Ok();
}

Status MpiBackend::freeGroups() {
  Status first = Status::Ok();
  for (Group& g : groups_) {
    if (g.comm == MPI_COMM_NULL) continue;
    const int rc = MPI_Comm_free(&g.comm);
    if (rc != MPI_SUCCESS && first.ok) first = mpiErrorStatus(rc, CB_SITE("MPI_Comm_free (process group)"));
    g.comm = MPI_COMM_NULL;
  }
  groups_.clear();
  return first;
}

Status MpiBackend::enqueueOn(const OpArgs& a) {
  CB_TRY(checkOpArgs(a, size_, "MpiBackend::enqueue"));
  switch (a.coll) {  // one member function per line of core/collectives.def
#define CB_COLL(Enum, name, method, ...) \
  case Coll::Enum:                       \
    return method(a);
#include "core/collectives.def"
#undef CB_COLL
  }
  return badSpec("unknown collective " + std::to_string(static_cast<int>(a.coll)), "MpiBackend::enqueue");
}

// ---------------------------------------------------------------------------------------------
// Prepared ops (the timed loop)

Status MpiBackend::plan(Planned::Call call, const void* send, void* recv, uint64_t count, MPI_Datatype type, MPI_Op op,
                        int root) {
  Planned& p = *planning_;
  p.call = call;
  p.sendInPlace = send == MPI_IN_PLACE;
  p.recvInPlace = recv == MPI_IN_PLACE;
  p.send = p.sendInPlace ? nullptr : static_cast<const char*>(send);
  p.recv = p.recvInPlace ? nullptr : static_cast<char*>(recv);
  p.count = count;
  p.ts = dtypeSize(plannedDtype_);
  p.type = type;
  p.op = op;
  p.root = root;
  p.comm = comm_;
  return Status::Ok();
}

Status MpiBackend::prepareSeries(const OpSeries& series) {
  if (series.args == nullptr || series.nLocal != 1)
    return badSpec("MpiBackend drives one rank per process: a series needs exactly one op",
                   "MpiBackend::prepareSeries");
  // enqueue()'s own checks, with every region widened by the largest shift; no MPI call, no data moved.
  Planned p;
  planning_ = &p;
  plannedDtype_ = series.args[0].dtype;
  regionShift_ = series.maxShiftBytes;
  const Status s = enqueue(series.args[0]);
  planning_ = nullptr;
  regionShift_ = 0;
  planned_ = Planned{};  // Generic until this series is known to be valid
  CB_TRY(s);
  plannedArgs_ = series.args[0];
  planned_ = p;
  bcastCopied_ = false;
  bcastCopyBytes_ = p.call == Planned::Call::BcastFromSend ? series.maxShiftBytes + p.count * p.ts : 0;
  return Status::Ok();
}

Status MpiBackend::allocate(uint64_t sendBytes, uint64_t recvBytes) {
  bcastCopied_ = false;
  return HostMemoryBackend::allocate(sendBytes, recvBytes);
}

Status MpiBackend::zero(BufId which, uint64_t offsetBytes, uint64_t bytes) {
  bcastCopied_ = false;
  return HostMemoryBackend::zero(which, offsetBytes, bytes);
}

Status MpiBackend::fill(DType dtype, RedOp op, uint64_t seed, const std::vector<Segment>& segs) {
  bcastCopied_ = false;
  return HostMemoryBackend::fill(dtype, op, seed, segs);
}

bool MpiBackend::runPrepared(uint64_t shiftBytes) {
  const Planned& p = planned_;
  const void* send = p.sendInPlace ? MPI_IN_PLACE : p.send + shiftBytes;
  void* recv = p.recvInPlace ? MPI_IN_PLACE : p.recv + shiftBytes;
  int rc = MPI_SUCCESS;
  const char* what = "";
  switch (p.call) {
    case Planned::Call::Generic: {
      OpArgs a = plannedArgs_;
      a.send = static_cast<const char*>(a.send) + shiftBytes;
      a.recv = static_cast<char*>(a.recv) + shiftBytes;
      return preparedOk(enqueue(a));
    }
    case Planned::Call::Allreduce:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Allreduce(piece(send, o), piece(recv, o), n, p.type, p.op, p.comm);
      });
      what = "MPI_Allreduce";
      break;
    case Planned::Call::Allgather:
      rc = MPI_Allgather(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.comm);
      what = "MPI_Allgather";
      break;
    case Planned::Call::ReduceScatterBlock:
      rc = MPI_Reduce_scatter_block(send, recv, p.intCount(), p.type, p.op, p.comm);
      what = "MPI_Reduce_scatter_block";
      break;
    case Planned::Call::BcastFromSend:
      if (!bcastCopied_) {  // the series' first op (untimed): every shift's region at once
        std::memmove(p.recv, p.send, bcastCopyBytes_);
        bcastCopied_ = true;
      }
      [[fallthrough]];
    case Planned::Call::Bcast:
      rc = forPieces(p.count, p.ts,
                     [&](uint64_t o, int n) { return MPI_Bcast(piece(recv, o), n, p.type, p.root, p.comm); });
      what = "MPI_Bcast";
      break;
    case Planned::Call::Reduce:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Reduce(piece(send, o), piece(recv, o), n, p.type, p.op, p.root, p.comm);
      });
      what = "MPI_Reduce";
      break;
    case Planned::Call::Alltoall:
      rc = MPI_Alltoall(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.comm);
      what = "MPI_Alltoall";
      break;
    case Planned::Call::Alltoallv:
      rc = MPI_Alltoallv(send, plannedV_[0].data(), plannedV_[1].data(), p.type, recv, plannedV_[2].data(),
                         plannedV_[3].data(), p.type, p.comm);
      what = "MPI_Alltoallv";
      break;
    case Planned::Call::Gather:
      rc = MPI_Gather(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.root, p.comm);
      what = "MPI_Gather";
      break;
    case Planned::Call::Scatter:
      rc = MPI_Scatter(send, p.intCount(), p.type, recv, p.intCount(), p.type, p.root, p.comm);
      what = "MPI_Scatter";
      break;
    case Planned::Call::Sendrecv:
      // Pieces in order: MPI's non-overtaking rule matches each piece with the peer's piece of the same rank.
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Sendrecv(piece(send, o), n, p.type, p.next, kTag, piece(recv, o), n, p.type, p.prev, kTag, p.comm,
                            MPI_STATUS_IGNORE);
      });
      what = "MPI_Sendrecv";
      break;
    case Planned::Call::SendrecvReplace:
      rc = forPieces(p.count, p.ts, [&](uint64_t o, int n) {
        return MPI_Sendrecv_replace(piece(recv, o), n, p.type, p.next, kTag, p.prev, kTag, p.comm, MPI_STATUS_IGNORE);
      });
      what = "MPI_Sendrecv_replace";
      break;
  }
  if (rc == MPI_SUCCESS) return true;
  return preparedFail(mpiErrorStatus(rc, CB_SITE(what)));
}

Status MpiBackend::allReduce(const OpArgs& a) {
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Allreduce"));
  if (planning_) {
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg) return Status::Ok();  // Generic
    return plan(Planned::Call::Allreduce, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, a.count, mpiDatatype(a.dtype),
                mpiReduceOp(a.dtype, a.op));
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, a.inPlace, &src));
  const void* from = a.inPlace ? MPI_IN_PLACE : src;
  CB_MPI_AT(forPieces(a.count, dtypeSize(a.dtype),
                      [&](uint64_t o, int n) {
                        return MPI_Allreduce(piece(from, o), piece(a.recv, o), n, mpiDatatype(a.dtype),
                                             mpiReduceOp(a.dtype, a.op), comm_);
                      }),
            "MPI_Allreduce");
  if (a.op == RedOp::Avg) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::allGather(const OpArgs& a) {
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count * size_, "recv"));
  // In place, this rank's chunk already sits at recv + rank·count (nccl-tests' layout).
  CB_TRY(checkInPlace(a, rank_, "MPI_Allgather"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  if (planning_) return plan(Planned::Call::Allgather, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL);
  CB_MPI(MPI_Allgather(a.inPlace ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_));
  return Status::Ok();
}

Status MpiBackend::reduceScatter(const OpArgs& a) {
  const uint64_t ts = dtypeSize(a.dtype), total = a.count * size_;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, total, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  const MPI_Op op = mpiReduceOp(a.dtype, a.op);
  CB_TRY(checkInPlace(a, rank_, "MPI_Reduce_scatter_block"));
  if (planning_) {
    // Generic: avg, mulsum, and in place on ranks > 0 (the result moves to the slice afterwards).
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg || (a.inPlace && a.recv != a.send)) return Status::Ok();
    return plan(Planned::Call::ReduceScatterBlock, a.inPlace ? MPI_IN_PLACE : a.send,
                a.inPlace ? const_cast<void*>(a.send) : a.recv, n, t, op);
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, total, a.inPlace, &src));
  if (a.inPlace) {
    // nccl-tests' in-place layout: send = the full recv buffer, recv = its slice at rank·count.
    // MPI_IN_PLACE leaves the result at the start of the full buffer, so move it to the slice.
    void* full = const_cast<void*>(a.send);
    CB_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, full, n, t, op, comm_));
    if (a.recv != full) std::memmove(a.recv, full, a.count * ts);
  } else {
    CB_MPI(MPI_Reduce_scatter_block(src, a.recv, n, t, op, comm_));
  }
  if (a.op == RedOp::Avg) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::broadcast(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  if (isRoot) CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Bcast"));
  if (planning_) {
    // The root's send bytes go to its recv buffer first (BcastFromSend: once for the series, runPrepared()).
    return plan(isRoot && a.send != a.recv ? Planned::Call::BcastFromSend : Planned::Call::Bcast, a.send, a.recv,
                a.count, mpiDatatype(a.dtype), MPI_OP_NULL, a.root);
  }
  // ncclBroadcast sends from the root's send buffer; MPI_Bcast works in one buffer.
  if (isRoot && a.send != a.recv) std::memmove(a.recv, a.send, a.count * dtypeSize(a.dtype));
  CB_MPI_AT(
      forPieces(a.count, dtypeSize(a.dtype),
                [&](uint64_t o, int n) { return MPI_Bcast(piece(a.recv, o), n, mpiDatatype(a.dtype), a.root, comm_); }),
      "MPI_Bcast");
  return Status::Ok();
}

Status MpiBackend::reduce(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Reduce"));
  // Only the root's in-place input is overwritten by the result; a non-root's must stay unchanged
  // (nccl-tests checks it), so its mulsum input is scaled into the scratch buffer.
  const bool rootInPlace = a.inPlace && isRoot;
  if (planning_) {
    if (a.op == RedOp::MulSum || a.op == RedOp::Avg) return Status::Ok();  // Generic
    return plan(Planned::Call::Reduce, rootInPlace ? MPI_IN_PLACE : a.send, a.recv, a.count, mpiDatatype(a.dtype),
                mpiReduceOp(a.dtype, a.op), a.root);
  }
  const void* src = nullptr;
  CB_TRY(reduceInput(a, a.send, a.count, rootInPlace, &src));
  const void* from = rootInPlace ? MPI_IN_PLACE : src;
  CB_MPI_AT(forPieces(a.count, dtypeSize(a.dtype),
                      [&](uint64_t o, int n) {
                        return MPI_Reduce(piece(from, o), piece(a.recv, o), n, mpiDatatype(a.dtype),
                                          mpiReduceOp(a.dtype, a.op), a.root, comm_);
                      }),
            "MPI_Reduce");
  if (a.op == RedOp::Avg && isRoot) divideElements(a.dtype, a.recv, a.count, size_);
  return Status::Ok();
}

Status MpiBackend::allToAll(const OpArgs& a) {
  const uint64_t total = a.count * size_;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, total, "send"));
  CB_TRY(region(a, a.recv, total, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Alltoall"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  if (planning_) return plan(Planned::Call::Alltoall, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL);
  CB_MPI(MPI_Alltoall(a.inPlace ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_));
  return Status::Ok();
}

Status MpiBackend::allToAllV(const OpArgs& a) {
  const PeerCounts* p = a.peers;
  const size_t np = static_cast<size_t>(size_);
  if (p == nullptr || p->sendCounts.size() != np || p->sendDispls.size() != np || p->recvCounts.size() != np ||
      p->recvDispls.size() != np)
    return badSpec("alltoallv needs " + std::to_string(size_) + " send/recv counts and displacements", "MPI_Alltoallv");
  const std::vector<uint64_t>* src[4] = {&p->sendCounts, &p->sendDispls, &p->recvCounts, &p->recvDispls};
  static const char* const kWhat[4] = {"send count", "send displacement", "recv count", "recv displacement"};
  for (int k = 0; k < 4; ++k) {
    vCounts_[k].resize(np);
    for (size_t i = 0; i < np; ++i) CB_TRY(toInt((*src[k])[i], kWhat[k], a.coll, &vCounts_[k][i]));
  }
  uint64_t sendEnd = 0, recvEnd = 0;  // int-sized terms: no overflow in uint64
  for (size_t i = 0; i < np; ++i) {
    sendEnd = std::max(sendEnd, p->sendDispls[i] + p->sendCounts[i]);
    recvEnd = std::max(recvEnd, p->recvDispls[i] + p->recvCounts[i]);
  }
  CB_TRY(region(a, a.send, sendEnd, "send"));
  CB_TRY(region(a, a.recv, recvEnd, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Alltoallv"));
  const void* sendArg = a.send;
  if (planning_) {
    const bool sameLayout = vCounts_[0] == vCounts_[2] && vCounts_[1] == vCounts_[3];
    if (a.inPlace && !sameLayout) return Status::Ok();  // Generic: the send region is staged per op
    for (int k = 0; k < 4; ++k) plannedV_[k] = vCounts_[k];
    return plan(Planned::Call::Alltoallv, a.inPlace ? MPI_IN_PLACE : a.send, a.recv, 0, mpiDatatype(a.dtype),
                MPI_OP_NULL);
  }
  if (a.inPlace) {
    // MPI_IN_PLACE alltoallv sends by the *recv* counts and displacements. That equals the requested
    // exchange only where this rank's send layout is its recv layout (a per-rank condition, so peers
    // never disagree); otherwise sizes mismatch (MPI_ERR_TRUNCATE; Open MPI 4.1 also corrupts its
    // heap). nccl-tests' generated matrix is asymmetric, so stage the send region in the scratch
    // buffer instead: a copy inside the timed op, but the exchange nccl-tests performs.
    if (vCounts_[0] == vCounts_[2] && vCounts_[1] == vCounts_[3]) {
      sendArg = MPI_IN_PLACE;
    } else {
      const uint64_t bytes = sendEnd * dtypeSize(a.dtype);
      CB_TRY(ensureScratch(bytes));
      if (bytes > 0) std::memcpy(scratch_.ptr, a.send, bytes);
      sendArg = scratch_.ptr;
    }
  }
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // Displacements are in elements: MPI counts them in extents of the datatype.
  CB_MPI(MPI_Alltoallv(sendArg, vCounts_[0].data(), vCounts_[1].data(), t, a.recv, vCounts_[2].data(),
                       vCounts_[3].data(), t, comm_));
  return Status::Ok();
}

Status MpiBackend::gatherColl(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  CB_TRY(region(a, a.send, a.count, "send"));
  if (isRoot) CB_TRY(region(a, a.recv, a.count * size_, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Gather"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // In place, the root's own chunk already sits at recv + root·count.
  if (planning_)
    return plan(Planned::Call::Gather, a.inPlace && isRoot ? MPI_IN_PLACE : a.send, a.recv, n, t, MPI_OP_NULL, a.root);
  CB_MPI(MPI_Gather(a.inPlace && isRoot ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, a.root, comm_));
  return Status::Ok();
}

Status MpiBackend::scatter(const OpArgs& a) {
  const bool isRoot = rank_ == a.root;
  int n = 0;
  CB_TRY(toInt(a.count, "count", a.coll, &n));
  if (isRoot) CB_TRY(region(a, a.send, a.count * size_, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  CB_TRY(checkInPlace(a, rank_, "MPI_Scatter"));
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // In place, the root's chunk is already at send + root·count = recv: MPI_IN_PLACE keeps it there.
  if (planning_)
    return plan(Planned::Call::Scatter, a.send, a.inPlace && isRoot ? MPI_IN_PLACE : a.recv, n, t, MPI_OP_NULL, a.root);
  CB_MPI(MPI_Scatter(a.send, n, t, a.inPlace && isRoot ? MPI_IN_PLACE : a.recv, n, t, a.root, comm_));
  return Status::Ok();
}

Status MpiBackend::sendRecv(const OpArgs& a) {
  CB_TRY(region(a, a.send, a.count, "send"));
  CB_TRY(region(a, a.recv, a.count, "recv"));
  const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
  const MPI_Datatype t = mpiDatatype(a.dtype);
  CB_TRY(checkInPlace(a, rank_, "MPI_Sendrecv_replace"));
  if (planning_) {
    CB_TRY(plan(a.inPlace ? Planned::Call::SendrecvReplace : Planned::Call::Sendrecv, a.send, a.recv, a.count, t,
                MPI_OP_NULL));
    planning_->next = next;
    planning_->prev = prev;
    return Status::Ok();
  }
  const uint64_t ts = dtypeSize(a.dtype);
  if (a.inPlace) {
    CB_MPI_AT(forPieces(a.count, ts,
                        [&](uint64_t o, int n) {
                          return MPI_Sendrecv_replace(piece(a.recv, o), n, t, next, kTag, prev, kTag, comm_,
                                                      MPI_STATUS_IGNORE);
                        }),
              "MPI_Sendrecv_replace");
  } else {
    CB_MPI_AT(forPieces(a.count, ts,
                        [&](uint64_t o, int n) {
                          return MPI_Sendrecv(piece(a.send, o), n, t, next, kTag, piece(a.recv, o), n, t, prev, kTag,
                                              comm_, MPI_STATUS_IGNORE);
                        }),
              "MPI_Sendrecv");
  }
  return Status::Ok();
}

Status MpiBackend::hyperCube(const OpArgs& a) {
  if ((size_ & (size_ - 1)) != 0)
    return badSpec("hypercube needs a power-of-two rank count, not " + std::to_string(size_), "MpiBackend::hyperCube");
  const uint64_t ts = dtypeSize(a.dtype), b = a.count;
  int unused = 0;
  CB_TRY(toInt(b * std::max(1, size_ / 2), "largest exchange (count*nranks/2)", a.coll, &unused));
  CB_TRY(region(a, a.send, b, "send"));
  CB_TRY(region(a, a.recv, b * size_, "recv"));
  char* recv = static_cast<char*>(a.recv);
  char* mine = bytesAt(recv, b * rank_, ts);
  CB_TRY(checkInPlace(a, rank_, "MpiBackend::hyperCube"));
  if (planning_) return Status::Ok();  // Generic: log2(nranks) rounds
  if (!a.inPlace) std::memmove(mine, a.send, b * ts);
  const MPI_Datatype t = mpiDatatype(a.dtype);
  // nccl-tests' hypercube: after round `mask`, each rank holds the `2·mask` chunks of its subcube.
  for (int mask = 1; mask < size_; mask <<= 1) {
    const int peer = rank_ ^ mask;
    const uint64_t sendChunk = static_cast<uint64_t>(rank_ & ~(mask - 1));
    const uint64_t recvChunk = static_cast<uint64_t>(peer & ~(mask - 1));
    const int n = static_cast<int>(b * mask);
    CB_MPI(MPI_Sendrecv(bytesAt(recv, sendChunk * b, ts), n, t, peer, kTag, bytesAt(recv, recvChunk * b, ts), n, t,
                        peer, kTag, comm_, MPI_STATUS_IGNORE));
  }
  return Status::Ok();
}

}  // namespace collbench
