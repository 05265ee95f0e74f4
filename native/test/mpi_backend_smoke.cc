// Native smoke test of MpiBackend (run under mpirun, any rank count): every collective out-of-place
// and in-place through fill -> enqueue -> check, with segments built here by hand the way the
// TypeScript descriptors build them (docs/nccl-tests-contract.md, "Formulas" for layouts, "Checks" for data), plus the
// control plane and error paths. Prints each failure; exits non-zero if any rank saw one.
//   mpicxx -std=c++17 -O2 -DOMPI_SKIP_MPICXX=1 -I native/src native/test/mpi_backend_smoke.cc
//     native/src/backends/mpi/*.cc native/src/core/data_check.cc -o /tmp/mpi_smoke   (one line)
//   mpirun --allow-run-as-root --oversubscribe -np 4 /tmp/mpi_smoke
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/mpi/mpi_backend.h"
#include "backends/mpi/mpi_types.h"

using namespace collbench;

namespace {

const char* const kColl[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",   "alltoall",
                             "alltoallv",  "gather",     "scatter",        "sendrecv",  "hypercube"};
const char* const kOp[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
const char* const kType[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                             "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};

struct Ctx {
  MpiBackend* b = nullptr;
  int rank = 0, n = 1;
  int failures = 0, cases = 0;
  int group = -1;  // a createGroups() group the cases run on (rank and n are then the group's); -1: the world
};

void fail(Ctx& c, const std::string& what) {
  std::fprintf(stderr, "[rank %d/%d] FAIL %s\n", c.rank, c.n, what.c_str());
  ++c.failures;
}

Segment seg(BufId buf, SegKind kind, uint64_t offset, uint64_t count, uint64_t indexBase, uint64_t stream,
            int rank = 0) {
  Segment s;
  s.buf = buf;
  s.kind = kind;
  s.offset = offset;
  s.count = count;
  s.indexBase = indexBase;
  s.stream = stream;
  s.rank = rank;
  return s;
}

// alltoallv element count from rank i to rank j: uneven, some zero, asymmetric like nccl-tests'
// generated matrix; or symmetric (then in-place is plain MPI_IN_PLACE, else staged in scratch).
uint64_t a2avCount(int i, int j, uint64_t b, bool symmetric) {
  return symmetric ? ((i + j) % 3) * b / 2 + 1 : ((i + 2 * j) % 3) * b / 2 + (i == j ? 0 : 1);
}

// One rank's view of one collective: buffer sizes, in-place offsets, fill and expected segments.
struct Layout {
  uint64_t sendElems = 0, recvElems = 0, sendOff = 0, recvOff = 0;
  std::vector<Segment> fill, expect;
  PeerCounts peers;
};

Layout layoutOf(Coll coll, int r, int n, int root, bool ip, uint64_t count, bool symmetric) {
  Layout L;
  const uint64_t b = count, c = count;
  const BufId in = ip ? BufId::Recv : BufId::Send;
  const SegKind RI = SegKind::ReduceInput, RO = SegKind::ReduceOutput, CP = SegKind::Copy, Z = SegKind::Zero;
  const BufId R = BufId::Recv;
  switch (coll) {
    case Coll::AllReduce:
      L.sendElems = L.recvElems = c;
      L.fill = {seg(in, RI, 0, c, 0, 0, r)};
      L.expect = {seg(R, RO, 0, c, 0, 0)};
      break;
    case Coll::Reduce:
      L.sendElems = L.recvElems = c;
      L.fill = {seg(in, RI, 0, c, 0, 0, r)};
      if (r == root)
        L.expect = {seg(R, RO, 0, c, 0, 0)};
      else if (ip)
        L.expect = {seg(R, RI, 0, c, 0, 0, r)};  // own input, unscaled (mulsum)
      else
        L.expect = {seg(R, Z, 0, c, 0, 0)};
      break;
    case Coll::ReduceScatter:
      L.sendElems = b * n;
      L.recvElems = ip ? b * n : b;
      L.recvOff = ip ? r * b : 0;
      L.fill = {seg(in, RI, 0, b * n, 0, 0, r)};
      L.expect = {seg(R, RO, L.recvOff, b, r * b, 0)};
      break;
    case Coll::AllGather:
    case Coll::HyperCube:
      L.sendElems = b;
      L.recvElems = b * n;
      L.sendOff = ip ? r * b : 0;
      L.fill = {seg(in, CP, L.sendOff, b, 0, r)};
      for (int j = 0; j < n; ++j) L.expect.push_back(seg(R, CP, j * b, b, 0, j));
      break;
    case Coll::Broadcast:
      L.sendElems = L.recvElems = c;
      if (r == root) L.fill = {seg(in, CP, 0, c, 0, 0)};
      L.expect = {seg(R, CP, 0, c, 0, 0)};
      break;
    case Coll::AllToAll:
      // MPI_IN_PLACE alltoall is well defined (the recv buffer is the input), so it is checked too.
      L.sendElems = L.recvElems = b * n;
      L.fill = {seg(in, CP, 0, b * n, 0, r)};
      for (int j = 0; j < n; ++j) L.expect.push_back(seg(R, CP, j * b, b, r * b, j));
      break;
    case Coll::AllToAllV: {
      PeerCounts& p = L.peers;
      p.sendCounts.resize(n);
      p.sendDispls.resize(n);
      p.recvCounts.resize(n);
      p.recvDispls.resize(n);
      uint64_t so = 0, ro = 0;
      for (int j = 0; j < n; ++j) {
        p.sendDispls[j] = so;
        so += p.sendCounts[j] = a2avCount(r, j, b, symmetric);
        p.recvDispls[j] = ro;
        ro += p.recvCounts[j] = a2avCount(j, r, b, symmetric);
      }
      L.sendElems = so;
      L.recvElems = ro;
      L.fill = {seg(BufId::Send, CP, 0, so, 0, r)};
      for (int s = 0; s < n; ++s) {  // my segment in source s's stream starts at its displacement
        uint64_t srcDispl = 0;
        for (int j = 0; j < r; ++j) srcDispl += a2avCount(s, j, b, symmetric);
        L.expect.push_back(seg(R, CP, p.recvDispls[s], p.recvCounts[s], srcDispl, s));
      }
      if (ip) {  // both layouts in the recv buffer: the exchange is still well defined, so checked
        L.recvElems = std::max(so, ro);
        L.fill = {seg(R, CP, 0, so, 0, r)};
      }
      break;
    }
    case Coll::Gather:
      L.sendElems = b;
      L.recvElems = b * n;
      L.sendOff = ip ? r * b : 0;
      L.fill = {seg(in, CP, L.sendOff, b, r * b, 0)};
      if (r == root)
        L.expect = {seg(R, CP, 0, b * n, 0, 0)};
      else if (ip)
        L.expect = {seg(R, Z, 0, r * b, 0, 0), seg(R, CP, r * b, b, r * b, 0),
                    seg(R, Z, (r + 1) * b, (n - r - 1) * b, 0, 0)};
      else
        L.expect = {seg(R, Z, 0, b * n, 0, 0)};
      break;
    case Coll::Scatter:
      L.sendElems = b * n;
      L.recvElems = ip ? b * n : b;
      L.recvOff = ip ? r * b : 0;
      if (r == root) L.fill = {seg(in, CP, 0, b * n, 0, 0)};
      L.expect = {seg(R, CP, L.recvOff, b, r * b, 0)};
      break;
    case Coll::SendRecv: {
      // In place is MPI_Sendrecv_replace, well defined in MPI: checked too.
      const int prev = (r - 1 + n) % n;
      L.sendElems = L.recvElems = c;
      L.fill = {seg(in, CP, 0, c, r * c, 0)};
      L.expect = {seg(R, CP, 0, c, prev * c, 0)};
      break;
    }
  }
  return L;
}

std::vector<Segment> shifted(std::vector<Segment> segs, uint64_t u, int groupSize = 0) {
  for (Segment& s : segs) {
    s.offset += u;
    s.nranks = groupSize;  // a group's case: its data spans the group's ranks
  }
  return segs;
}

// fill -> enqueue -> check for one case; returns this rank's wrong count (or fails on a Status).
void runCase(Ctx& c, Coll coll, DType dt, RedOp op, bool ip, int root, uint64_t count, uint64_t u,
             bool symmetric = false, bool expectWrong = false) {
  const uint64_t ts = dtypeSize(dt);
  const Layout L = layoutOf(coll, c.rank, c.n, root, ip, count, symmetric);
  char label[160];
  std::snprintf(label, sizeof label, "%s%s %s %s %s root %d count %llu unalign %llu", kColl[int(coll)],
                symmetric ? " (symmetric)" : "", kType[int(dt)], kOp[int(op)], ip ? "in-place" : "out-of-place", root,
                static_cast<unsigned long long>(count), static_cast<unsigned long long>(u));
  ++c.cases;
  auto bad = [&](const char* step, const Status& s) {
    fail(c, std::string(label) + ": " + step + " -> " + s.backend() + " " + s.code() + " " + s.message() + " @ " +
                s.site());
  };
  Status s = c.b->allocate((L.sendElems + u) * ts, (L.recvElems + u) * ts);
  if (!s.ok) return bad("allocate", s);
  s = c.b->zero(BufId::Recv, 0, (L.recvElems + u) * ts);
  if (!s.ok) return bad("zero", s);
  const uint64_t seed = 7 + count;
  const int span = c.group >= 0 ? c.n : 0;
  s = c.b->fill(dt, op, seed, shifted(L.fill, u, span));
  if (!s.ok) return bad("fill", s);
  char* sendBase = static_cast<char*>(c.b->buffer(ip ? BufId::Recv : BufId::Send));
  char* recvBase = static_cast<char*>(c.b->buffer(BufId::Recv));
  OpArgs a{coll, dt, op, root, sendBase + (L.sendOff + u) * ts, recvBase + (L.recvOff + u) * ts, count, ip, &L.peers};
  a.group = c.group;
  s = c.b->enqueue(a);
  if (!s.ok) return bad("enqueue", s);
  s = c.b->waitAll();
  if (!s.ok) return bad("waitAll", s);
  CheckOutcome out;
  s = c.b->check(dt, op, seed, shifted(L.expect, u, span), &out);
  if (!s.ok) return bad("check", s);
  if (expectWrong && out.wrong == 0) fail(c, std::string(label) + ": expected wrong elements, got none");
  if (!expectWrong && out.wrong > 0)
    fail(c, std::string(label) + ": " + std::to_string(out.wrong) + " wrong, first at " +
                std::to_string(out.firstIndex) + " expected " + out.expected + " got " + out.got);
}

bool isReducing(Coll coll) {
  return coll == Coll::AllReduce || coll == Coll::Reduce || coll == Coll::ReduceScatter;
}

void runCollectives(Ctx& c) {
  // The init probe must agree with what MPI_SUM on uint8 really does in a collective: saturating
  // (Open MPI 4.1 op/avx) shows wrong elements, wrapping shows none. One rank adds nothing.
  runCase(c, Coll::AllReduce, DType::Uint8, RedOp::Sum, false, -1, 70000, 0, false,
          c.b->smallIntSumSaturates() && c.n > 1);
  // Then the rest with wrapping 8-bit sums, so every other check must be exact.
  if (c.b->smallIntSumSaturates()) c.b->setWrappingSmallIntSum(true);
  const DType types[] = {DType::Float32, DType::Float16, DType::Int32, DType::Bfloat16,
                         DType::F8e4m3,  DType::Float64, DType::Uint8, DType::Int8};
  // 13: odd, so chunks are unaligned; 70000: large enough for MPI's segmented/pipelined algorithms.
  const uint64_t counts[] = {0, 13, 70000};
  for (int ci = 0; ci < kCollCount; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    if (coll == Coll::HyperCube && (c.n & (c.n - 1)) != 0) continue;
    const bool rooted =
        coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather || coll == Coll::Scatter;
    for (DType dt : types) {
      const int nOps = isReducing(coll) ? kRedOpCount : 1;
      for (int o = 0; o < nOps; ++o)
        for (uint64_t count : counts)
          for (int ip = 0; ip < 2; ++ip)
            for (int root : {0, c.n - 1}) {
              if (!rooted && root != 0) continue;
              if (rooted && c.n == 1 && root != 0) continue;
              runCase(c, coll, dt, static_cast<RedOp>(o), ip != 0, rooted ? root : -1, count, 0);
              if (count == 13) runCase(c, coll, dt, static_cast<RedOp>(o), ip != 0, rooted ? root : -1, count, 3);
              if (coll == Coll::AllToAllV) runCase(c, coll, dt, RedOp::Sum, ip != 0, -1, count, 0, true);
            }
    }
  }
}

void expectCode(Ctx& c, const char* what, const Status& s, const char* code) {
  ++c.cases;
  if (s.ok)
    fail(c, std::string(what) + ": expected " + code + ", got Ok");
  else if (s.code() != code)
    fail(c, std::string(what) + ": expected " + code + ", got " + s.code() + " " + s.message());
}

// A failing MPI call must come back as a Status (MPI_ERRORS_RETURN) with the class name as code.
Status badMpiCall() {
  int x = 0;
  CB_MPI(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD));
  return Status::Ok();
}

void runErrors(Ctx& c) {
  {
    const Status s = badMpiCall();
    expectCode(c, "MPI_Send count -1", s, "MPI_ERR_COUNT");
    if (!s.ok && (s.backend() != "mpi" || s.site().find(" MPI_Send") == std::string::npos || s.message().empty()))
      fail(c, "MPI error status fields: backend '" + s.backend() + "' site '" + s.site() + "' message '" + s.message() +
                  "'");
  }
  expectCode(c, "mpiErrorStatus(MPI_ERR_TRUNCATE)", mpiErrorStatus(MPI_ERR_TRUNCATE, "x"), "MPI_ERR_TRUNCATE");
  (void)c.b->allocate(64, 64);
  void* s = c.b->buffer(BufId::Send);
  void* r = c.b->buffer(BufId::Recv);
  // all_gather is not split: a count above INT_MAX is refused; all_reduce splits it (here: past the buffer end).
  OpArgs a{Coll::AllGather, DType::Float32, RedOp::Sum, -1, s, r, (1ull << 31), false, nullptr};
  expectCode(c, "all_gather count 2^31", c.b->enqueue(a), "CORE_COUNT_TOO_LARGE");
  a.coll = Coll::AllReduce;
  expectCode(c, "all_reduce count 2^31 (split) past the buffer end", c.b->enqueue(a), "CORE_BAD_SPEC");
  a.count = 17;  // 68 bytes > 64
  expectCode(c, "all_reduce past the buffer end", c.b->enqueue(a), "CORE_BAD_SPEC");
  a.coll = Coll::AllToAllV;
  a.count = 0;
  expectCode(c, "alltoallv without peers", c.b->enqueue(a), "CORE_BAD_SPEC");
  PeerCounts p;
  p.sendCounts.assign(c.n, 0);
  p.sendDispls.assign(c.n, 0);
  p.recvCounts.assign(c.n, 0);
  p.recvDispls.assign(c.n, 0);
  p.sendDispls[0] = 1ull << 32;
  a.peers = &p;
  expectCode(c, "alltoallv displacement 2^32", c.b->enqueue(a), "CORE_COUNT_TOO_LARGE");
  a.coll = Coll::Reduce;
  a.root = c.n;
  expectCode(c, "reduce root out of range", c.b->enqueue(a), "CORE_BAD_SPEC");
  if ((c.n & (c.n - 1)) != 0) {
    a.coll = Coll::HyperCube;
    expectCode(c, "hypercube on a non-power-of-two", c.b->enqueue(a), "CORE_BAD_SPEC");
  }
  // In place with send and recv in different buffers: every collective refuses it with its layout rule's message
  // (core/op_checks.cc checkInPlace, from collectives.def's in-place column; the Gloo backend calls the same check).
  PeerCounts ones;
  for (int k = 0; k < c.n; ++k) {
    ones.sendCounts.push_back(1);
    ones.sendDispls.push_back(static_cast<uint64_t>(k));
    ones.recvCounts.push_back(1);
    ones.recvDispls.push_back(static_cast<uint64_t>(k));
  }
  for (int ci = 0; ci < kCollCount; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    if (coll == Coll::HyperCube && (c.n & (c.n - 1)) != 0) continue;  // refused earlier, above
    const OpArgs ip{coll, DType::Float32, RedOp::Sum, 0, s, r, 1, true, &ones};
    const std::string what = std::string(kCollNames[ci].name) + " in place with send and recv apart";
    const Status st = c.b->enqueue(ip);
    expectCode(c, what.c_str(), st, "CORE_BAD_SPEC");
    if (!st.ok && st.message().rfind(std::string(kCollNames[ci].name) + " in-place needs ", 0) != 0)
      fail(c, what + ": message '" + st.message() + "'");
  }
  expectCode(c, "zero past the end", c.b->zero(BufId::Recv, 60, 8), "CORE_BAD_SPEC");
  expectCode(c, "fill past the end",
             c.b->fill(DType::Float32, RedOp::Sum, 1, {seg(BufId::Send, SegKind::Copy, 10, 7, 0, 0)}), "CORE_BAD_SPEC");
}

void runControl(Ctx& c) {
  const int n = c.n, r = c.rank;
  auto expectNear = [&](const char* what, double got, double want) {
    ++c.cases;
    if (got != want) fail(c, std::string(what) + ": got " + std::to_string(got) + " want " + std::to_string(want));
  };
  const Combine modes[] = {Combine::Rank0, Combine::Mean, Combine::Min, Combine::Max, Combine::Sum};
  const char* names[] = {"Rank0", "Mean", "Min", "Max", "Sum"};
  for (int m = 0; m < 5; ++m) {
    double v[2] = {double(r + 1), -double(r + 1)};
    const Status s = c.b->allreduce(v, 2, modes[m]);
    if (!s.ok) {
      fail(c, std::string("allreduce ") + names[m] + ": " + s.code());
      continue;
    }
    const double sum = n * (n + 1) / 2.0;
    const double want[5][2] = {{1, -1}, {sum / n, -sum / n}, {1, -double(n)}, {double(n), -1}, {sum, -sum}};
    expectNear(names[m], v[0], want[m][0]);
    expectNear(names[m], v[1], want[m][1]);
  }
  const double mine[3] = {double(r), double(10 * r), double(100 * r)};
  std::vector<double> all;
  Status s = c.b->gather(mine, 3, &all);
  if (!s.ok)
    fail(c, "gather: " + s.code());
  else if (r == 0) {
    ++c.cases;
    bool good = all.size() == size_t(3 * n);
    for (int q = 0; good && q < n; ++q) good = all[3 * q] == q && all[3 * q + 1] == 10 * q && all[3 * q + 2] == 100 * q;
    if (!good) fail(c, "gather: wrong values at rank 0");
  } else if (!all.empty())
    fail(c, "gather: non-root received values");
  const std::string str = r == 1 ? std::string() : "rank-" + std::string(r, 'x') + "\n" + std::to_string(r);
  std::vector<std::string> strs;
  s = c.b->gatherStrings(str, &strs);
  if (!s.ok)
    fail(c, "gatherStrings: " + s.code());
  else if (r == 0) {
    ++c.cases;
    bool good = strs.size() == size_t(n);
    for (int q = 0; good && q < n; ++q)
      good = strs[q] == (q == 1 ? std::string() : "rank-" + std::string(q, 'x') + "\n" + std::to_string(q));
    if (!good) fail(c, "gatherStrings: wrong strings at rank 0");
  }
  s = c.b->barrier();
  if (!s.ok) fail(c, "barrier: " + s.code());

  ++c.cases;
  if (c.b->localSize() != n || c.b->localRank() != r)  // the smoke test runs on one node
    fail(c, "localRank/localSize " + std::to_string(c.b->localRank()) + "/" + std::to_string(c.b->localSize()));
  ++c.cases;
  if (c.b->threadLevel() < MPI_THREAD_SERIALIZED) fail(c, "thread level below SERIALIZED");
  ++c.cases;
  const std::string shortV = MpiBackend::libraryVersionShort();
  if (shortV.rfind("Open MPI ", 0) != 0 || shortV.find(',') != std::string::npos)
    fail(c, "short library version '" + shortV + "' from '" + MpiBackend::libraryVersion() + "'");
  ++c.cases;
  if (MpiBackend::shortenLibraryVersion("MPICH Version:\t4.0.2\nMPICH Release date: x") != "MPICH 4.0.2" ||
      MpiBackend::shortenLibraryVersion("Open MPI v5.0.3, package: Open MPI x") != "Open MPI 5.0.3")
    fail(c, "shortenLibraryVersion");
  ++c.cases;
  if (c.b->processorName().empty()) fail(c, "empty processor name");
}

}  // namespace

// A prepared out-of-place broadcast (BcastFromSend): MPI_Bcast sends from the root's recv buffer, so the root copies
// its send regions there once per series (every shift the series uses) and after each write through the backend, never
// per op: a send buffer changed behind the backend's back is not seen, a zero() through it is.
void runBroadcastCopy(Ctx& c) {
  const uint64_t count = 13, ts = sizeof(float), bytes = count * ts;
  for (int root : {0, c.n - 1}) {
    char label[64];
    std::snprintf(label, sizeof label, "prepared broadcast root %d", root);
    ++c.cases;
    auto bad = [&](const char* step, const Status& s) {
      fail(c, std::string(label) + ": " + step + " -> " + s.code() + " " + s.message());
    };
    Status s = c.b->allocate(2 * bytes, 2 * bytes);
    if (!s.ok) return bad("allocate", s);
    float* send = static_cast<float*>(c.b->buffer(BufId::Send));
    float* recv = static_cast<float*>(c.b->buffer(BufId::Recv));
    for (uint64_t i = 0; i < 2 * count; ++i) send[i] = static_cast<float>(i + 1);
    OpArgs a{Coll::Broadcast, DType::Float32, RedOp::Sum, root, send, recv, count, false, nullptr};
    OpSeries series;
    series.args = &a;
    series.maxShiftBytes = bytes;  // two shifts: 0 and one op's bytes
    if (!(s = c.b->prepareSeries(series)).ok) return bad("prepareSeries", s);
    if (!c.b->runPrepared(0)) return bad("runPrepared(0)", c.b->preparedStatus());
    // The root's send changes behind the backend: the op at the second shift still sends what the first op copied.
    if (c.rank == root)
      for (uint64_t i = 0; i < 2 * count; ++i) send[i] = -1.0f;
    if (!c.b->runPrepared(bytes)) return bad("runPrepared(shift)", c.b->preparedStatus());
    for (uint64_t i = 0; i < 2 * count; ++i)
      if (recv[i] != static_cast<float>(i + 1))
        return fail(c, std::string(label) + ": element " + std::to_string(i) + " is " + std::to_string(recv[i]) +
                           ", expected " + std::to_string(i + 1) + " (copied once, before the first op)");
    // A write through the backend (zero, as prepareData does) makes the root copy again at the next op.
    if (!(s = c.b->zero(BufId::Send, 0, 2 * bytes)).ok) return bad("zero", s);
    if (!c.b->runPrepared(0)) return bad("runPrepared after zero", c.b->preparedStatus());
    for (uint64_t i = 0; i < count; ++i)
      if (recv[i] != 0.0f)
        return fail(c, std::string(label) + ": after zero(), element " + std::to_string(i) + " is " +
                           std::to_string(recv[i]) + ", expected 0 (copied again)");
  }
}

// Process groups (Backend::createGroups, MPI_Comm_split): bad lists refused; then even ranks, odd ranks and the world
// in reverse order (group rank i = global n-1-i: all_gather's blocks land in group order), every collective checked on
// each group by its members with the group's own layout and data, and refused to a rank outside it.
void runGroups(Ctx& c) {
  expectCode(c, "createGroups with a rank twice", c.b->createGroups({{0, 0}}), "CORE_BAD_SPEC");
  expectCode(c, "createGroups with a rank outside the job", c.b->createGroups({{c.n}}), "CORE_BAD_SPEC");
  expectCode(c, "createGroups with an empty group", c.b->createGroups({{}}), "CORE_BAD_SPEC");
  std::vector<std::vector<int>> groups(3);
  for (int r = 0; r < c.n; ++r) groups[r % 2].push_back(r);
  for (int r = c.n - 1; r >= 0; --r) groups[2].push_back(r);
  if (groups[1].empty()) groups[1] = {0};  // one rank: every group is the world
  const Status made = c.b->createGroups(groups);
  ++c.cases;
  if (!made.ok) return fail(c, "createGroups: " + made.code() + " " + made.message());
  (void)c.b->allocate(64, 64);
  OpArgs outside{Coll::AllReduce, DType::Float32, RedOp::Sum, -1, c.b->buffer(BufId::Send), c.b->buffer(BufId::Recv), 4,
                 false,           nullptr};
  outside.group = 3;
  expectCode(c, "an op on a group never created", c.b->enqueue(outside), "CORE_BAD_SPEC");
  for (int g = 0; g < 3; ++g) {
    Ctx v = c;
    v.group = g;
    v.failures = v.cases = 0;
    const auto& ranks = groups[static_cast<size_t>(g)];
    v.n = static_cast<int>(ranks.size());
    v.rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), c.rank) - ranks.begin());
    if (v.rank == v.n) {
      outside.group = g;
      expectCode(c, "an op on a group this rank is not in", c.b->enqueue(outside), "CORE_BAD_SPEC");
      continue;
    }
    for (int ci = 0; ci < kCollCount; ++ci) {
      const Coll coll = static_cast<Coll>(ci);
      if (coll == Coll::HyperCube && (v.n & (v.n - 1)) != 0) continue;
      const bool rooted =
          coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::Gather || coll == Coll::Scatter;
      for (DType dt : {DType::Float32, DType::Bfloat16})
        for (RedOp op : {RedOp::Sum, RedOp::MulSum}) {
          if (op != RedOp::Sum && !isReducing(coll)) continue;
          runCase(v, coll, dt, op, false, rooted ? v.n - 1 : -1, 13, 0);
        }
    }
    c.failures += v.failures;
    c.cases += v.cases;
  }
}

int main() {
  std::unique_ptr<MpiBackend> backend;
  Status s = MpiBackend::create(&backend);
  if (!s.ok) {
    std::fprintf(stderr, "create: %s %s %s @ %s\n", s.backend().c_str(), s.code().c_str(), s.message().c_str(),
                 s.site().c_str());
    return 2;
  }
  Ctx c;
  c.b = backend.get();
  c.rank = backend->rank();
  c.n = backend->nranks();
  if (c.rank == 0)
    std::printf("mpi_backend_smoke: %d ranks, %s (%s), thread level %s%s\n", c.n,
                MpiBackend::libraryVersionShort().c_str(), backend->processorName().c_str(),
                threadLevelName(backend->threadLevel()),
                backend->smallIntSumSaturates() ? ", MPI_SUM saturates int8/uint8 (ompi#8045)" : "");
  runCollectives(c);
  runBroadcastCopy(c);
  runErrors(c);
  runControl(c);
  runGroups(c);

  double totals[2] = {double(c.failures), double(c.cases)};
  s = backend->allreduce(totals, 2, Combine::Sum);
  if (!s.ok) totals[0] += 1;
  if (c.rank == 0) std::printf("mpi_backend_smoke: %d ranks: %.0f checks, %.0f failures\n", c.n, totals[1], totals[0]);
  s = backend->finalize();
  const Status again = backend->finalize();
  if (!s.ok || !again.ok) {
    std::fprintf(stderr, "finalize: %s %s\n", s.code().c_str(), again.code().c_str());
    return 1;
  }
  return totals[0] == 0 ? 0 : 1;
}
