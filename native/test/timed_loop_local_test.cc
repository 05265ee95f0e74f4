// The timed loop's NCCL paths (core/timed_loop.cc: several ranks per process, async completion, -I device
// marks, -G capture/replay, per-rank checks) on a small real backend: L ranks in host memory whose ops run
// when waited for, one virtual device tick each (all_reduce, all_gather). Prints failures and
// "N checks, N failures"; exits 1 on any failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/data_check.h"
#include "core/element_ops.h"
#include "core/timed_loop.h"

using namespace collbench;

namespace {

int gChecks = 0, gFailures = 0;
void expect(bool ok, const std::string& what) {
  ++gChecks;
  if (!ok && gFailures++ < 40) std::printf("FAIL %s\n", what.c_str());
}

class LoopbackBackend : public Backend {
 public:
  explicit LoopbackBackend(int locals) : locals_(locals), send_(locals), recv_(locals), ticks_(locals, 0) {}

  int rank() const override { return 0; }
  int nranks() const override { return locals_; }
  int localRanks() const override { return locals_; }

  Status allocate(uint64_t s, uint64_t r) override {
    for (int i = 0; i < locals_; ++i) {
      send_[i].assign(s, 0);
      recv_[i].assign(r, 0);
    }
    return Status::Ok();
  }
  void* buffer(BufId which) override { return localBuffer(0, which); }
  void* localBuffer(int local, BufId which) override { return (which == BufId::Send ? send_ : recv_)[local].data(); }

  Status enqueue(const OpArgs&) override { return Status::Error("test", "SINGLE", "use enqueueAll", "test"); }
  Status enqueueAll(const OpArgs* args, int n) override {
    if (n != locals_) return Status::Error("test", "COUNT", "wrong number of local ops", "test");
    for (int i = 0; i < n; ++i)
      if (args[i].local != i) return Status::Error("test", "ORDER", "local ops out of order", "test");
    std::vector<OpArgs> op(args, args + n);
    ++enqueued;
    if (capturing_)
      graph_.push_back(op);
    else
      pending_.push_back(op);
    return Status::Ok();
  }
  Status groupStart() override {
    ++groupDepth;
    ++groups;
    return Status::Ok();
  }
  Status groupEnd() override {
    --groupDepth;
    return Status::Ok();
  }
  Status waitAll() override {
    if (capturing_) return Status::Ok();
    for (auto& op : pending_) run(op);
    pending_.clear();
    return Status::Ok();
  }
  Status barrier() override {
    ++barriers;
    return Status::Ok();
  }
  Status allreduce(double*, int, Combine) override { return Status::Ok(); }
  Status gather(const double* mine, int n, std::vector<double>* atRoot) override {
    atRoot->assign(mine, mine + n);
    return Status::Ok();
  }
  Status gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) override {
    *atRoot = {mine};
    return Status::Ok();
  }
  Status zero(BufId w, uint64_t o, uint64_t b) override { return localZero(0, w, o, b); }
  Status fill(DType t, RedOp op, uint64_t s, const std::vector<Segment>& g) override {
    return localFill(0, t, op, s, g);
  }
  Status check(DType t, RedOp op, uint64_t s, const std::vector<Segment>& g, CheckOutcome* o) override {
    return localCheck(0, t, op, s, g, o);
  }
  Status localZero(int local, BufId w, uint64_t off, uint64_t bytes) override {
    std::memset(static_cast<char*>(localBuffer(local, w)) + off, 0, bytes);
    return Status::Ok();
  }
  Status localFill(int local, DType t, RedOp op, uint64_t seed, const std::vector<Segment>& segs) override {
    CB_TRY(waitAll());  // data writes are ordered after earlier ops, as on a stream
    return hostFill(send_[local].data(), recv_[local].data(), t, op, locals_, seed, segs);
  }
  Status localCheck(int local, DType t, RedOp op, uint64_t seed, const std::vector<Segment>& segs,
                    CheckOutcome* out) override {
    if (local == corruptLocal && corruptIndex < recv_[local].size() / 4)
      reinterpret_cast<float*>(recv_[local].data())[corruptIndex] += 1.0f;
    return hostCheck(recv_[local].data(), send_[local].data(), t, op, locals_, seed, segs, out);
  }

  // Device timer: a mark records each rank's tick count when the ops before it have run; one op is
  // one millisecond. Rank 1 is twice as slow, so max-over-ranks is visible.
  bool deviceTimer() const override { return true; }
  Status timerMarks(int count) override {
    marks_.assign(count, std::vector<long>(locals_, -1));
    ++timerPrepared;
    return Status::Ok();
  }
  Status timerMark(int k) override {
    if (capturing_) return Status::Error("test", "MARK_IN_CAPTURE", "mark during capture", "test");
    pending_.push_back({});  // a marker op: runs in order with the others
    markAt_.push_back({k, pending_.size() - 1});
    return Status::Ok();
  }
  Status timerElapsed(int from, int to, double* seconds) override {
    double worst = 0;
    for (int i = 0; i < locals_; ++i) worst = std::max(worst, double(marks_[to][i] - marks_[from][i]) * 1e-3);
    *seconds = worst;
    return Status::Ok();
  }

  // Device arrivals: the reference is the rank's tick count when recorded (after the ops before it have run); a mark
  // since it is ticks in ms; a device delay adds its µs, rounded to ticks, to that rank's clock when it runs.
  bool deviceArrivals() const override { return arrivalsOn; }
  Status arrivalReference(int local) override {
    CB_TRY(waitAll());
    if (refTick_.empty()) refTick_.assign(locals_, 0);
    refTick_[local] = ticks_[local];
    ++references;
    return Status::Ok();
  }
  Status markSinceReference(int local, int k, double* seconds) override {
    *seconds = double(marks_[k][local] - refTick_[local]) * 1e-3;
    return Status::Ok();
  }
  Status delayStream(int local, double micros) override {
    pending_.push_back({});
    delayAt_.push_back({local, static_cast<long>(micros / 1000), pending_.size() - 1});
    return Status::Ok();
  }

  bool graphs() const override { return true; }
  Status captureBegin() override {
    capturing_ = true;
    graph_.clear();
    ++captures;
    return Status::Ok();
  }
  Status captureEnd() override {
    capturing_ = false;
    return Status::Ok();
  }
  Status graphLaunch(int times) override {
    for (int t = 0; t < times; ++t)
      for (auto& op : graph_) pending_.push_back(op);
    launched += times;
    return Status::Ok();
  }

  int groupDepth = 0, groups = 0, barriers = 0, enqueued = 0, executed = 0, captures = 0, launched = 0,
      timerPrepared = 0;
  int corruptLocal = -1, references = 0;
  bool arrivalsOn = false;
  uint64_t corruptIndex = 0;

 private:
  void run(std::vector<OpArgs>& op) {
    if (op.empty()) {  // a timer mark or a device delay
      for (auto it = delayAt_.begin(); it != delayAt_.end(); ++it) {
        if (&pending_[it->slot] == &op) {
          ticks_[it->local] += it->ticks;
          delayAt_.erase(it);
          return;
        }
      }
      for (auto it = markAt_.begin(); it != markAt_.end(); ++it) {
        if (&pending_[it->second] == &op) {
          for (int i = 0; i < locals_; ++i) marks_[it->first][i] = ticks_[i];
          markAt_.erase(it);
          break;
        }
      }
      return;
    }
    ++executed;
    for (int i = 0; i < locals_; ++i) ticks_[i] += (i == 1 ? 2 : 1);
    const OpArgs& a = op[0];
    const uint64_t ts = dtypeSize(a.dtype);
    if (a.coll == Coll::AllReduce) {
      std::vector<unsigned char> acc(a.count * ts);
      for (uint64_t e = 0; e < a.count; ++e) {
        uint64_t v = loadBits(op[0].send, a.dtype, e);
        for (int i = 1; i < locals_; ++i) v = applyOp(a.dtype, a.op, v, loadBits(op[i].send, a.dtype, e));
        storeBits(acc.data(), a.dtype, e, v);
      }
      for (int i = 0; i < locals_; ++i) std::memcpy(op[i].recv, acc.data(), acc.size());
    } else if (a.coll == Coll::AllGather) {
      std::vector<unsigned char> all(a.count * ts * locals_);
      for (int i = 0; i < locals_; ++i) std::memcpy(all.data() + i * a.count * ts, op[i].send, a.count * ts);
      for (int i = 0; i < locals_; ++i) std::memcpy(op[i].recv, all.data(), all.size());
    }
  }

  int locals_;
  std::vector<std::vector<unsigned char>> send_, recv_;
  std::vector<std::vector<OpArgs>> pending_, graph_;
  std::vector<std::pair<int, size_t>> markAt_;
  std::vector<std::vector<long>> marks_;
  std::vector<long> ticks_, refTick_;
  struct Delay {
    int local;
    long ticks;
    size_t slot;
  };
  std::vector<Delay> delayAt_;
  bool capturing_ = false;
};

// nccl-tests' all_reduce layout for rank r of n: input segment in send (or recv in place), output in recv.
HalfSpec allReduceSpec(int r, uint64_t count, bool inPlace) {
  HalfSpec s;
  s.coll = Coll::AllReduce;
  s.dtype = DType::Float32;
  s.op = RedOp::Sum;
  s.inPlace = inPlace;
  s.count = count;
  s.rotateBytes = count * 4;
  s.maxBytes = count * 4 * 4;  // four rotation slots
  Segment in;
  in.buf = inPlace ? BufId::Recv : BufId::Send;
  in.kind = SegKind::ReduceInput;
  in.count = count;
  in.rank = r;
  s.fill = {in};
  Segment out;
  out.buf = BufId::Recv;
  out.kind = SegKind::ReduceOutput;
  out.count = count;
  s.expect = {out};
  s.iters = 4;
  s.aggIters = 2;
  s.checkRounds = 1;
  s.checkSeed = 7;
  return s;
}

std::vector<const HalfSpec*> ptrs(const std::vector<HalfSpec>& v) {
  std::vector<const HalfSpec*> p;
  for (const HalfSpec& s : v) p.push_back(&s);
  return p;
}

void testCorrectAndAsync(int L, bool inPlace) {
  const std::string tag = "L=" + std::to_string(L) + (inPlace ? " in-place" : " out-of-place");
  LoopbackBackend b(L);
  b.allocate(4096, 4096);
  std::vector<HalfSpec> specs;
  for (int r = 0; r < L; ++r) specs.push_back(allReduceSpec(r, 100, inPlace));
  Status s = warmupLocal(b, ptrs(specs), 3);
  expect(s.ok && b.executed == 3, tag + " warm-up runs 3 ops on every rank: " + s.message());
  HalfResult res;
  s = benchLocal(b, ptrs(specs), &res);
  expect(s.ok, tag + " benchLocal: " + s.message());
  expect(res.checked && res.wrong == 0 && res.ranksWithWrong == 0, tag + " every rank's output is correct");
  // 3 warm-up + 1 untimed + n*m timed + 1 check
  expect(b.executed == 3 + 1 + 4 * 2 + 1, tag + " ops executed: " + std::to_string(b.executed));
  expect(b.groups == 4 && b.groupDepth == 0, tag + " one group per iteration with -m 2, balanced");
  expect(res.timeUs > 0 && res.cpuTimeUs > 0, tag + " times measured");
}

void testWrongElementNamesTheRank() {
  LoopbackBackend b(3);
  b.allocate(4096, 4096);
  std::vector<HalfSpec> specs;
  for (int r = 0; r < 3; ++r) specs.push_back(allReduceSpec(r, 64, false));
  b.corruptLocal = 2;
  b.corruptIndex = 5;
  HalfResult res;
  Status s = benchLocal(b, ptrs(specs), &res);
  expect(s.ok, "corrupt: benchLocal ok");
  expect(res.wrong == 1 && res.ranksWithWrong == 1, "corrupt: one wrong element on one rank, got " +
                                                        std::to_string(res.wrong) + " on " +
                                                        std::to_string(res.ranksWithWrong));
  expect(res.firstWrong.rank == 2 && res.firstWrong.index == 5,
         "corrupt: first wrong names local rank 2, index 5; got rank " + std::to_string(res.firstWrong.rank) +
             " index " + std::to_string(res.firstWrong.index));
  expect(!res.firstWrong.expected.empty() && res.firstWrong.expected != res.firstWrong.got, "corrupt: values shown");
}

void testDeviceTimer(int blocking) {
  const std::string tag = "-I -z " + std::to_string(blocking);
  LoopbackBackend b(2);
  b.allocate(4096, 4096);
  std::vector<HalfSpec> specs;
  for (int r = 0; r < 2; ++r) {
    specs.push_back(allReduceSpec(r, 32, false));
    specs.back().perIter = true;
    specs.back().blocking = blocking;
  }
  HalfResult res;
  Status s = benchLocal(b, ptrs(specs), &res);
  expect(s.ok, tag + " ok: " + s.message());
  expect(b.timerPrepared == 1, tag + " marks prepared once");
  expect(res.iterUs.size() == 4, tag + " one sample per iteration");
  // Per iteration m = 2 ops; the slower rank takes 2 ticks (ms) per op: 4 ms per iteration / m = 2000 us.
  bool all = true;
  for (double v : res.iterUs) all = all && std::fabs(v - 2000.0) < 1e-6;
  expect(all, tag + " samples = max over ranks of device time / m (2000 us each), got " +
                  (res.iterUs.empty() ? std::string("none") : std::to_string(res.iterUs[0])));
  expect(res.perRankIterUs.size() == 4, tag + " one process row");
}

void testGraphReplay() {
  LoopbackBackend b(2);
  b.allocate(4096, 4096);
  std::vector<HalfSpec> specs;
  for (int r = 0; r < 2; ++r) {
    specs.push_back(allReduceSpec(r, 32, true));
    specs.back().graphLaunches = 3;
  }
  HalfResult res;
  Status s = benchLocal(b, ptrs(specs), &res);
  expect(s.ok, "-G ok: " + s.message());
  // 1 untimed + (n*m captured, replayed 3 times) + check op captured and launched once.
  expect(b.executed == 1 + 4 * 2 * 3 + 1, "-G: ops executed " + std::to_string(b.executed));
  expect(b.captures == 2 && b.launched == 3 + 1, "-G: two captures (timed, check), 3 + 1 launches");
  expect(res.wrong == 0 && res.checked, "-G: check op through a graph is correct");

  // -G with -I or -z 3 is refused by the loop (resolve refuses it earlier on the command line).
  specs[0].perIter = specs[1].perIter = true;
  s = benchLocal(b, ptrs(specs), &res);
  expect(!s.ok && s.code() == "CORE_BAD_SPEC", "-G -I refused");
}

void testAllGatherAndMismatch() {
  LoopbackBackend b(4);
  b.allocate(8192, 8192);
  std::vector<HalfSpec> specs;
  const uint64_t c = 16;
  for (int r = 0; r < 4; ++r) {
    HalfSpec s;
    s.coll = Coll::AllGather;
    s.dtype = DType::Float32;
    s.count = c;
    s.rotateBytes = c * 4 * 4;
    s.maxBytes = c * 4 * 4;
    Segment in;
    in.buf = BufId::Send;
    in.kind = SegKind::Copy;
    in.count = c;
    in.stream = r;
    s.fill = {in};
    for (int j = 0; j < 4; ++j) {
      Segment out;
      out.buf = BufId::Recv;
      out.kind = SegKind::Copy;
      out.offset = j * c;
      out.count = c;
      out.stream = j;
      s.expect.push_back(out);
    }
    s.iters = 2;
    s.checkRounds = 2;
    s.checkSeed = 3;
    specs.push_back(s);
  }
  HalfResult res;
  Status st = benchLocal(b, ptrs(specs), &res);
  expect(st.ok && res.wrong == 0, "all_gather over 4 local ranks correct: " + st.message());
  specs[3].iters = 3;
  st = benchLocal(b, ptrs(specs), &res);
  expect(!st.ok && st.code() == "CORE_BAD_SPEC", "local specs that disagree on -n are refused");
  specs.pop_back();
  st = benchLocal(b, ptrs(specs), &res);
  expect(!st.ok && st.code() == "CORE_BAD_SPEC", "one spec per local rank is required");
}

// Device arrivals on 3 local ranks (rank 1 twice as slow), -n 4 -m 2: each rank's row is its ticks from the reference
// to each iteration's mark; COLLBENCH_TEST_GPU_DELAY=3000:2:2 puts 3 ticks on rank 2's stream before iteration 2.
std::vector<HalfSpec> arrivalSpecs(int locals, bool perIter, int blocking) {
  std::vector<HalfSpec> specs;
  for (int r = 0; r < locals; ++r) {
    specs.push_back(allReduceSpec(r, 32, false));
    specs.back().perIter = perIter;
    specs.back().blocking = blocking;
    specs.back().arrivals = true;
  }
  return specs;
}

void testDeviceArrivals(int blocking) {
  const std::string tag = "device arrivals -z " + std::to_string(blocking);
  for (bool delayed : {false, true}) {
    LoopbackBackend b(3);
    b.arrivalsOn = true;
    b.allocate(4096, 4096);
    std::vector<HalfSpec> specs = arrivalSpecs(3, true, blocking);
    if (delayed) setenv("COLLBENCH_TEST_GPU_DELAY", "3000:2:2", 1);
    HalfResult res;
    Status s = benchLocal(b, ptrs(specs), &res);
    unsetenv("COLLBENCH_TEST_GPU_DELAY");
    expect(s.ok, tag + " ok: " + s.message());
    expect(b.references == 3 * 3, tag + " three reference rounds per local rank, got " + std::to_string(b.references));
    expect(res.arrivalIters == 4 && res.arrivalUs.size() == 3 * 4, tag + " one row of 4 per rank");
    expect(res.deviceRefUs.size() == 3 * 2 && res.enqueueUs.size() == 4,
           tag + " references per rank, host row per process");
    bool ok = true;
    std::string got;
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < 4; ++i) {
        const double perOp = r == 1 ? 2.0 : 1.0;
        const double want = (i * 2 * perOp + (delayed && r == 2 && i >= 2 ? 3.0 : 0.0)) * 1000;
        ok = ok && std::fabs(res.arrivalUs[r * 4 + i] - want) < 1e-6;
        got += std::to_string(res.arrivalUs[r * 4 + i]) + " ";
      }
    expect(ok, tag + (delayed ? " delayed" : "") + ": arrival = ticks since the reference, got " + got);
  }
  // Without -I, or with the hook malformed: no device arrivals / a refusal naming the variable.
  LoopbackBackend b(2);
  b.arrivalsOn = true;
  b.allocate(4096, 4096);
  std::vector<HalfSpec> specs = arrivalSpecs(2, false, 0);
  HalfResult res;
  Status s = benchLocal(b, ptrs(specs), &res);
  expect(s.ok && res.arrivalIters == 0 && b.references == 0, "device arrivals need -I (its marks)");
  for (HalfSpec& sp : specs) sp.perIter = true;
  for (const char* bad : {"500", "x:1", "500:9", "500:1:7", "-3:all"}) {
    setenv("COLLBENCH_TEST_GPU_DELAY", bad, 1);
    s = benchLocal(b, ptrs(specs), &res);
    expect(!s.ok && s.code() == "CORE_BAD_SPEC" && s.message().find("COLLBENCH_TEST_GPU_DELAY") != std::string::npos,
           std::string("malformed hook refused: ") + bad);
  }
  unsetenv("COLLBENCH_TEST_GPU_DELAY");
}

}  // namespace

int main() {
  for (int L : {1, 2, 5})
    for (bool inPlace : {false, true}) testCorrectAndAsync(L, inPlace);
  testWrongElementNamesTheRank();
  for (int z : {0, 3}) testDeviceTimer(z);
  for (int z : {0, 3}) testDeviceArrivals(z);
  testGraphReplay();
  testAllGatherAndMismatch();
  std::printf("timed loop (local ranks): %d checks, %d failures\n", gChecks, gFailures);
  return gFailures == 0 ? 0 : 1;
}
