// The shared timed loop (timed_loop.h), as nccl-tests' BenchTime: untimed op and barrier, host monotonic clock over
// n·m(·G) ops, buffer rotation, -z 0..3, -I samples (device events where the backend has them), -G capture and replay,
// -a combination, -c check rounds; every local rank of the process per op.
#include "timed_loop.h"

#include "clock.h"
#include "device_arrivals.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace collbench {
namespace {

std::atomic<int64_t> g_iteration{-1};  // loopIteration()
inline void setIteration(int64_t i) {
  g_iteration.store(i, std::memory_order_relaxed);
}

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pointers for one op: in-place layouts send from the recv buffer; -u shifts both; rotation
// (nccl-tests: shift = B·(opIndex mod floor(maxBytes/B))) moves small messages through the buffer.
struct OpPointers {
  char* send;
  char* recv;
};

OpPointers basePointers(Backend& backend, const HalfSpec& spec, int local) {
  const uint64_t ts = dtypeSize(spec.dtype);
  char* sendBuf = static_cast<char*>(backend.localBuffer(local, spec.inPlace ? BufId::Recv : BufId::Send));
  char* recvBuf = static_cast<char*>(backend.localBuffer(local, BufId::Recv));
  const uint64_t unalign = spec.unalignElems * ts;
  return {sendBuf + spec.sendOffset * ts + unalign, recvBuf + spec.recvOffset * ts + unalign};
}

uint64_t rotationSlots(const HalfSpec& spec) {
  if (spec.rotateBytes == 0 || spec.maxBytes < spec.rotateBytes) return 1;
  return spec.maxBytes / spec.rotateBytes;
}

// The local ranks of one row-half: their specs, base pointers and reusable op arguments.
struct Ranks {
  std::vector<const HalfSpec*> specs;
  std::vector<OpPointers> base;
  std::vector<OpArgs> args;
  const HalfSpec& first() const { return *specs[0]; }
  int size() const { return static_cast<int>(specs.size()); }
};

Status badSpec(const std::string& message) {
  return Status::Error("core", "CORE_BAD_SPEC", message, CB_SITE("benchHalf"));
}

Status makeRanks(Backend& backend, const std::vector<const HalfSpec*>& specs, Ranks* out) {
  const int n = static_cast<int>(specs.size());
  if (n < 1 || n != backend.localRanks())
    return badSpec("got " + std::to_string(n) + " row-half specs for " + std::to_string(backend.localRanks()) +
                   " local ranks");
  const HalfSpec& a = *specs[0];
  for (const HalfSpec* s : specs) {
    // Everything that drives the loop itself must agree; layouts and data are per rank.
    if (s->coll != a.coll || s->dtype != a.dtype || s->iters != a.iters || s->aggIters != a.aggIters ||
        s->blocking != a.blocking || s->perIter != a.perIter || s->checkRounds != a.checkRounds ||
        s->rotateBytes != a.rotateBytes || s->maxBytes != a.maxBytes || s->graphLaunches != a.graphLaunches ||
        s->unalignElems != a.unalignElems || s->checkSeed != a.checkSeed || s->average != a.average ||
        s->arrivals != a.arrivals)
      return badSpec("the local ranks' row-half specs disagree on the loop parameters");
  }
  out->specs = specs;
  out->base.resize(n);
  out->args.resize(n);
  for (int i = 0; i < n; ++i) {
    const HalfSpec& s = *specs[i];
    out->base[i] = basePointers(backend, s, i);
    out->args[i] = OpArgs{s.coll,    s.dtype,  s.op, s.root, out->base[i].send, out->base[i].recv, s.count,
                          s.inPlace, &s.peers, i,    s.group};
  }
  return Status::Ok();
}

// Hands the backend the series of ops a loop issues (`ops` of them, rotated from shift 0): it checks
// them all and resolves their arguments now, so that runAt() in the timed region only calls the library.
Status prepareOps(Backend& backend, const Ranks& ranks, uint64_t ops) {
  const HalfSpec& spec = ranks.first();
  const uint64_t used = std::max<uint64_t>(1, std::min(rotationSlots(spec), ops));
  OpSeries series;
  series.args = ranks.args.data();
  series.nLocal = ranks.size();
  series.maxShiftBytes = spec.rotateBytes * (used - 1);
  return backend.prepareSeries(series);
}

// One prepared op (every local rank) at `shiftBytes`; a Status only on failure.
inline Status runAt(Backend& backend, uint64_t shiftBytes) {
  if (backend.runPrepared(shiftBytes)) return Status::Ok();
  return backend.preparedStatus();
}

// Iterations [0, iters) of one prepared op each, nothing else between them but the buffer rotation and the
// iteration number the watchdog reads: warm-ups, and timed loops with one op per iteration and no per-op
// wait, clock or mark (benchRanks' other cases). False on the first failure (backend.preparedStatus()).
inline bool runSeries(Backend& backend, int iters, uint64_t rotateBytes, uint64_t slots) {
  uint64_t slot = 0;  // i mod slots
  for (int i = 0; i < iters; ++i) {
    setIteration(i);
    if (!backend.runPrepared(rotateBytes * slot)) return false;
    if (++slot == slots) slot = 0;
  }
  return true;
}

// A spec's segments as the backend fills and checks them: moved by -u, and spanning its process group's ranks.
std::vector<Segment> shiftedSegments(const std::vector<Segment>& segs, const HalfSpec& spec) {
  std::vector<Segment> out(segs);
  for (Segment& s : out) {
    s.offset += spec.unalignElems;
    if (spec.groupSize > 0) s.nranks = spec.groupSize;
  }
  return out;
}

// Zero the part of each recv buffer that fill/expect segments touch, then write the inputs.
Status prepareData(Backend& backend, const Ranks& ranks, uint64_t seed) {
  for (int i = 0; i < ranks.size(); ++i) {
    const HalfSpec& spec = *ranks.specs[i];
    const uint64_t ts = dtypeSize(spec.dtype);
    uint64_t recvEnd = 0;
    for (const auto* list : {&spec.fill, &spec.expect})
      for (const Segment& s : *list)
        if (s.buf == BufId::Recv) recvEnd = std::max(recvEnd, s.offset + s.count);
    if (recvEnd > 0) CB_TRY(backend.localZero(i, BufId::Recv, spec.unalignElems * ts, recvEnd * ts));
    CB_TRY(backend.localFill(i, spec.dtype, spec.op, seed, shiftedSegments(spec.fill, spec)));
  }
  return Status::Ok();
}

constexpr uint64_t kTimingDataSeed = 99;  // nccl-tests initialises timed data with seed 99

// One checked op: pattern data written, the op run once (captured and launched with -G), completed.
Status checkMember(Backend& backend, Ranks& ranks, const HalfSpec& spec) {
  CB_TRY(prepareData(backend, ranks, spec.checkSeed));
  // nccl-tests: with -G the check op too is captured into a graph and launched once.
  if (spec.graphLaunches > 0) CB_TRY(backend.captureBegin());
  CB_TRY(runAt(backend, 0));
  if (spec.graphLaunches > 0) {
    CB_TRY(backend.captureEnd());
    CB_TRY(backend.graphLaunch(1));
  }
  return backend.waitAll();
}

// A rank outside the op's process group (HalfSpec::member false) runs and checks nothing, but joins the combines.
Status runCheck(Backend& backend, Ranks& ranks, HalfResult* result) {
  const HalfSpec& spec = ranks.first();
  result->checked = true;
  for (int round = 0; round < spec.checkRounds; ++round) {
    if (spec.member) CB_TRY(checkMember(backend, ranks, spec));
    // This process: total wrong count, ranks with wrong elements, the lowest such rank's first one.
    double counts[2] = {0, 0};
    std::string mine;
    for (int i = 0; spec.member && i < ranks.size(); ++i) {
      // nccl-tests: with -G the check op too is captured into a graph and launched once.

      const HalfSpec& s = *ranks.specs[i];
      CheckOutcome local;
      CB_TRY(backend.localCheck(i, s.dtype, s.op, s.checkSeed, shiftedSegments(s.expect, s), &local));
      counts[0] += static_cast<double>(local.wrong);
      if (local.wrong > 0) counts[1] += 1;
      if (mine.empty() && local.haveFirst)
        mine = std::to_string(backend.rank() + i) + '\n' + std::to_string(local.firstIndex) + '\n' + local.expected +
               '\n' + local.got;
    }
    CB_TRY(backend.allreduce(counts, 2, Combine::Sum));
    result->wrong = counts[0];
    result->ranksWithWrong = static_cast<int>(counts[1]);
    if (counts[0] == 0) continue;
    // Name the first wrong element of the lowest rank that has one.
    std::vector<std::string> all;
    CB_TRY(backend.gatherStrings(mine, &all));
    for (const std::string& text : all) {
      if (text.empty()) continue;
      const size_t a = text.find('\n'), b = text.find('\n', a + 1), c = text.find('\n', b + 1);
      result->firstWrong.rank = std::stoi(text.substr(0, a));
      result->firstWrong.index = std::stoull(text.substr(a + 1, b - a - 1));
      result->firstWrong.expected = text.substr(b + 1, c - b - 1);
      result->firstWrong.got = text.substr(c + 1);
      break;
    }
    break;  // nccl-tests: a round with wrong elements stops further rounds
  }
  return Status::Ok();
}

// -I: one row of samples per process (the max over its ranks), gathered to rank 0; per iteration
// the max over processes (nccl-tests: "i_* uses max over process rows").
Status collectIterations(Backend& backend, const std::vector<double>& samples, HalfResult* result) {
  std::vector<double> all;
  CB_TRY(backend.gather(samples.data(), static_cast<int>(samples.size()), &all));
  if (backend.rank() != 0) return Status::Ok();
  const size_t n = samples.size();
  result->perRankIterUs = all;
  result->iterUs.assign(n, 0.0);
  for (size_t r = 0; r * n < all.size(); ++r)
    for (size_t i = 0; i < n; ++i) result->iterUs[i] = std::max(result->iterUs[i], all[r * n + i]);
  return Status::Ok();
}

Status warmupRanks(Backend& backend, Ranks& ranks, int iters) {
  const HalfSpec& spec = ranks.first();
  const uint64_t slots = rotationSlots(spec);
  if (iters <= 0) return backend.waitAll();
  CB_TRY(prepareOps(backend, ranks, static_cast<uint64_t>(iters)));
  if (!runSeries(backend, iters, spec.rotateBytes, slots)) return backend.preparedStatus();
  return backend.waitAll();
}

Status benchRanks(Backend& backend, Ranks& ranks, HalfResult* result) {
  const HalfSpec& spec = ranks.first();
  if (spec.iters < 1 || spec.aggIters < 1 || spec.blocking < 0 || spec.blocking > 3 || spec.graphLaunches < 0)
    return badSpec("iters and agg iters must be >= 1, blocking 0..3, graph launches >= 0");
  const int n = spec.iters, m = spec.aggIters, graphs = spec.graphLaunches;
  if (graphs > 0 && !backend.graphs()) return badSpec("this backend cannot capture graphs (-G)");
  if (graphs > 0 && (spec.blocking == 3 || spec.perIter))
    return badSpec("graph replay (-G) cannot be combined with -z 3 or -I");
  *result = HalfResult{};
  const uint64_t slots = rotationSlots(spec);

  // Every op below (untimed, timed, check) is one of this series: checked and resolved here, once.
  setIteration(-1);
  CB_TRY(prepareOps(backend, ranks, static_cast<uint64_t>(n) * m));
  if (spec.checkRounds > 0) CB_TRY(prepareData(backend, ranks, kTimingDataSeed));
  CB_TRY(runAt(backend, 0));  // one untimed op
  CB_TRY(backend.waitAll());
  CB_TRY(backend.barrier());

  // -I on a backend with device timers: marks k = iteration boundaries (n + 1, shared as in
  // nccl-tests), or start/stop pairs 2i, 2i+1 with -z 3. Otherwise the host clock below.
  const bool deviceTimer = spec.perIter && backend.deviceTimer();
  if (deviceTimer) CB_TRY(backend.timerMarks(spec.blocking == 3 ? 2 * n : n + 1));
  // While a graph is being captured nothing runs, so there is nothing to wait for per op.
  const bool waitPerOp = spec.blocking > 0 && graphs == 0;

  std::vector<double> iterSeconds(spec.perIter ? n : 0);
  // Arrival of this process at each iteration (one clock read per iteration, kept in a preallocated table and
  // gathered after the row): with one process nobody waits for anybody, and a replayed graph has no arrivals.
  // A backend with device marks enqueues ahead of its devices (-z 0), so its host clock says nothing: its arrivals are
  // the -I marks, placed on the host clock by a reference mark per stream (core/device_arrivals.h); none without -I.
  const bool onDevice = spec.arrivals && deviceTimer && backend.deviceArrivals() && graphs == 0;
  const bool arrivals = onDevice || (spec.arrivals && !backend.deviceArrivals() &&
                                     backend.nranks() > backend.localRanks() && graphs == 0);
  DeviceArrivals device;
  DeviceDelay delay;  // the COLLBENCH_TEST_GPU_DELAY test hook
  if (onDevice) {
    CB_TRY(deviceDelayFromEnv(backend, n, &delay));
    CB_TRY(device.begin(backend));
  }
  std::vector<Clock::time_point> arrivalAt(arrivals ? n : 0);
  // The clock per iteration only where it is used: -I on the host clock, -z 3, arrivals (-I with device timers:
  // events).
  const bool stampIter = (spec.perIter && !deviceTimer) || spec.blocking == 3 || arrivals;
  double blockedSeconds = 0;  // -z 3: sum of the pre-barrier part of each iteration
  if (graphs > 0) CB_TRY(backend.captureBegin());
  const uint64_t rotate = spec.rotateBytes;
  uint64_t slot = 0;  // op index mod slots: the buffer rotation
  // The common case (-m 1, -z 0, no -I, no arrivals, no -G) runs nothing but the ops: the general loop below
  // kept its flags and counters live across each op's call (40 instructions per op, Gloo at 1 rank).
  const bool bare = m == 1 && !stampIter && !deviceTimer && !waitPerOp && graphs == 0;
  auto t0 = Clock::now();
  auto iterStart = t0;
  if (bare && !runSeries(backend, n, rotate, slots)) return backend.preparedStatus();
  for (int iter = 0; !bare && iter < n; ++iter) {
    setIteration(iter);
    if (stampIter) iterStart = Clock::now();
    if (arrivals) arrivalAt[iter] = iterStart;
    if (onDevice && delay.due(iter)) CB_TRY(backend.delayStream(delay.local, delay.micros));
    if (m > 1) CB_TRY(backend.groupStart());
    if (deviceTimer) CB_TRY(backend.timerMark(spec.blocking == 3 ? 2 * iter : iter));
    for (int a = 0; a < m; ++a) {
      if (!backend.runPrepared(rotate * slot)) return backend.preparedStatus();
      if (++slot == slots) slot = 0;
      if (waitPerOp) {
        CB_TRY(backend.waitAll());
        if (spec.blocking == 1) CB_TRY(backend.barrier());
      }
    }
    if (m > 1) CB_TRY(backend.groupEnd());
    if (spec.blocking == 3) {
      if (deviceTimer) CB_TRY(backend.timerMark(2 * iter + 1));
      CB_TRY(backend.waitAll());
      const double s = secondsSince(iterStart);
      blockedSeconds += s;
      if (spec.perIter && !deviceTimer) iterSeconds[iter] = s;
      CB_TRY(backend.barrier());
    } else if (spec.perIter && !deviceTimer) {
      // Host clock: an iteration ends when the next one starts (nccl-tests' shared boundary
      // events); the last one ends at completion below.
      if (iter > 0) iterSeconds[iter - 1] = std::chrono::duration<double>(iterStart - t0).count();
    }
  }
  setIteration(n);
  if (deviceTimer && spec.blocking != 3) CB_TRY(backend.timerMark(n));
  if (graphs > 0) {
    // nccl-tests: end capture, instantiate, barrier, restart the clock, replay -G times.
    CB_TRY(backend.captureEnd());
    CB_TRY(backend.barrier());
    t0 = Clock::now();
    CB_TRY(backend.graphLaunch(graphs));
  }
  const double ops = static_cast<double>(n) * m * std::max(graphs, 1);
  const double cpuSeconds = spec.blocking == 3 ? blockedSeconds : secondsSince(t0);
  CB_TRY(backend.waitAll());
  const auto tEnd = Clock::now();
  const double seconds = spec.blocking == 3 ? blockedSeconds : std::chrono::duration<double>(tEnd - t0).count();
  if (deviceTimer) {
    for (int i = 0; i < n; ++i) {
      if (spec.blocking == 3)
        CB_TRY(backend.timerElapsed(2 * i, 2 * i + 1, &iterSeconds[i]));
      else
        CB_TRY(backend.timerElapsed(i, i + 1, &iterSeconds[i]));
    }
  } else if (spec.perIter && spec.blocking != 3) {
    // iterSeconds[i] currently holds the start offset of iteration i+1; turn offsets into durations.
    std::vector<double> ends(n);
    for (int i = 0; i + 1 < n; ++i) ends[i] = iterSeconds[i];
    ends[n - 1] = std::chrono::duration<double>(tEnd - t0).count();
    double prev = 0;
    for (int i = 0; i < n; ++i) {
      iterSeconds[i] = ends[i] - prev;
      prev = ends[i];
    }
  }

  double timeUs = seconds * 1e6 / ops;
  result->cpuTimeUs = cpuSeconds * 1e6 / ops;
  if (spec.average != Combine::Rank0) CB_TRY(backend.allreduce(&timeUs, 1, spec.average));
  result->timeUs = timeUs;

  if (spec.perIter) {
    std::vector<double> samplesUs(n);
    for (int i = 0; i < n; ++i) samplesUs[i] = iterSeconds[i] * 1e6 / m;
    CB_TRY(collectIterations(backend, samplesUs, result));
  }
  if (arrivals) {
    std::vector<double> mine(n);
    for (int i = 0; i < n; ++i) mine[i] = clockMicros(arrivalAt[i]);
    CB_TRY(backend.gather(mine.data(), n, onDevice ? &result->enqueueUs : &result->arrivalUs));
    result->arrivalIters = n;
    if (onDevice) CB_TRY(device.gather(backend, n, spec.blocking == 3 ? 2 : 1, result));
  }
  CB_TRY(backend.barrier());

  if (spec.checkRounds > 0) CB_TRY(runCheck(backend, ranks, result));
  return Status::Ok();
}

// Busy until `micros` have passed since `from` (a stand-in for compute: it keeps the core, as compute would).
void spinUntil(Clock::time_point from, double micros) {
  const auto until =
      from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(micros));
  while (Clock::now() < until) {
  }
}

Status sequenceSteps(Backend& backend, std::vector<Ranks>& ops, const std::vector<double>& gapUs, int steps,
                     std::vector<double>* stepSeconds, double* gapSeconds) {
  const bool gaps = !gapUs.empty();
  for (int step = 0; step < steps; ++step) {
    if (stepSeconds) setIteration(step);
    const auto start = Clock::now();
    for (size_t k = 0; k < ops.size(); ++k) {
      if (gaps && gapUs[k] > 0) {
        const auto g = Clock::now();
        spinUntil(g, gapUs[k]);
        if (gapSeconds) *gapSeconds += secondsSince(g);
      }
      if (ops[k].first().member) CB_TRY(backend.enqueueAll(ops[k].args.data(), ops[k].size()));
    }
    CB_TRY(backend.waitAll());
    if (stepSeconds) (*stepSeconds)[step] = secondsSince(start);
  }
  return Status::Ok();
}

}  // namespace

int64_t loopIteration() {
  return g_iteration.load(std::memory_order_relaxed);
}

Status clockSamples(Backend& backend, int rounds, std::vector<double>* atRoot) {
  if (rounds < 1) return badSpec("clock samples need at least one round");
  std::vector<double> mine(rounds);
  for (int k = 0; k < rounds; ++k) {
    CB_TRY(backend.barrier());
    mine[k] = clockMicros(Clock::now());
  }
  return backend.gather(mine.data(), rounds, atRoot);
}

Status warmup(Backend& backend, const HalfSpec& spec, int iters) {
  return warmupLocal(backend, {&spec}, iters);
}

Status benchHalf(Backend& backend, const HalfSpec& spec, HalfResult* result) {
  return benchLocal(backend, {&spec}, result);
}

Status warmupLocal(Backend& backend, const std::vector<const HalfSpec*>& specs, int iters) {
  Ranks ranks;
  CB_TRY(makeRanks(backend, specs, &ranks));
  return warmupRanks(backend, ranks, iters);
}

Status benchSequence(Backend& backend, const std::vector<std::vector<const HalfSpec*>>& specs, const SequenceSpec& seq,
                     SequenceResult* result) {
  if (specs.empty()) return badSpec("a sequence needs at least one op");
  if (seq.iters < 1 || seq.warmupIters < 0) return badSpec("a sequence needs iters >= 1 and warm-up iters >= 0");
  if (!seq.gapUs.empty() && seq.gapUs.size() != specs.size())
    return badSpec("a sequence's gaps must be one per op (" + std::to_string(specs.size()) + "), got " +
                   std::to_string(seq.gapUs.size()));
  *result = SequenceResult{};
  std::vector<Ranks> ops(specs.size());
  size_t largest = specs.size();  // of the ops this rank issues (a rank may be in none of a replay's groups)
  uint64_t largestBytes = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    CB_TRY(makeRanks(backend, specs[k], &ops[k]));
    const uint64_t bytes = ops[k].first().count * dtypeSize(ops[k].first().dtype);
    if (ops[k].first().member && (largest == specs.size() || bytes >= largestBytes)) {
      largest = k;
      largestBytes = bytes;
    }
  }
  // Timed data as nccl-tests' (seed 99), written once by the largest op: every op reads a prefix of the same buffers.
  setIteration(-1);
  if (seq.check && largest < ops.size()) CB_TRY(prepareData(backend, ops[largest], kTimingDataSeed));
  CB_TRY(sequenceSteps(backend, ops, {}, seq.warmupIters, nullptr, nullptr));
  CB_TRY(backend.barrier());

  std::vector<double> stepSeconds(seq.iters);
  double gapSeconds = 0;
  CB_TRY(sequenceSteps(backend, ops, seq.gapUs, seq.iters, &stepSeconds, &gapSeconds));
  setIteration(seq.iters);
  result->gapUs = gapSeconds * 1e6 / seq.iters;
  std::vector<double> stepUs(seq.iters);
  for (int i = 0; i < seq.iters; ++i) stepUs[i] = stepSeconds[i] * 1e6;
  HalfResult gathered;
  CB_TRY(collectIterations(backend, stepUs, &gathered));
  result->stepUs = std::move(gathered.iterUs);
  CB_TRY(backend.barrier());

  if (!seq.check) return Status::Ok();
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].first().checkRounds < 1) continue;
    if (ops[k].first().member) CB_TRY(prepareOps(backend, ops[k], 1));
    HalfResult checked;
    CB_TRY(runCheck(backend, ops[k], &checked));
    result->wrong += checked.wrong;
    result->ranksWithWrong = std::max(result->ranksWithWrong, checked.ranksWithWrong);
    if (checked.wrong > 0 && result->firstWrongOp < 0) {
      result->firstWrongOp = static_cast<int>(k);
      result->firstWrong = checked.firstWrong;
    }
  }
  return Status::Ok();
}

Status benchLocal(Backend& backend, const std::vector<const HalfSpec*>& specs, HalfResult* result) {
  Ranks ranks;
  CB_TRY(makeRanks(backend, specs, &ranks));
  return benchRanks(backend, ranks, result);
}

}  // namespace collbench
