// Implementation of the shared timed loop (see timed_loop.h). Mirrors nccl-tests' BenchTime:
// untimed op + barrier, host monotonic clock from the first enqueue to completion divided by n·m,
// buffer rotation by op index, -z 0..3, -I per-iteration samples, -a combination, -c check rounds.
#include "timed_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace collbench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pointers for one op: in-place layouts send from the recv buffer; -u shifts both; rotation
// (nccl-tests: shift = B·(opIndex mod floor(maxBytes/B))) moves small messages through the buffer.
struct OpPointers {
  char* send;
  char* recv;
};

OpPointers basePointers(Backend& backend, const HalfSpec& spec) {
  const uint64_t ts = dtypeSize(spec.dtype);
  char* sendBuf = static_cast<char*>(backend.buffer(spec.inPlace ? BufId::Recv : BufId::Send));
  char* recvBuf = static_cast<char*>(backend.buffer(BufId::Recv));
  const uint64_t unalign = spec.unalignElems * ts;
  return {sendBuf + spec.sendOffset * ts + unalign, recvBuf + spec.recvOffset * ts + unalign};
}

uint64_t rotationSlots(const HalfSpec& spec) {
  if (spec.rotateBytes == 0 || spec.maxBytes < spec.rotateBytes) return 1;
  return spec.maxBytes / spec.rotateBytes;
}

Status enqueueAt(Backend& backend, const HalfSpec& spec, const OpPointers& base, uint64_t shiftBytes) {
  OpArgs args{spec.coll,  spec.dtype,         spec.op,    spec.root,   base.send + shiftBytes,
              base.recv + shiftBytes, spec.count, spec.inPlace, &spec.peers};
  return backend.enqueue(args);
}

std::vector<Segment> shiftedSegments(const std::vector<Segment>& segs, uint64_t unalignElems) {
  std::vector<Segment> out(segs);
  for (Segment& s : out) s.offset += unalignElems;
  return out;
}

// Zero the part of the recv buffer that fill/expect segments touch, then write the inputs.
Status prepareData(Backend& backend, const HalfSpec& spec, uint64_t seed) {
  const uint64_t ts = dtypeSize(spec.dtype);
  uint64_t recvEnd = 0;
  for (const auto* list : {&spec.fill, &spec.expect})
    for (const Segment& s : *list)
      if (s.buf == BufId::Recv) recvEnd = std::max(recvEnd, s.offset + s.count);
  if (recvEnd > 0) CB_TRY(backend.zero(BufId::Recv, spec.unalignElems * ts, recvEnd * ts));
  return backend.fill(spec.dtype, spec.op, seed, shiftedSegments(spec.fill, spec.unalignElems));
}

constexpr uint64_t kTimingDataSeed = 99;  // nccl-tests initialises timed data with seed 99

Status runCheck(Backend& backend, const HalfSpec& spec, const OpPointers& base, HalfResult* result) {
  result->checked = true;
  for (int round = 0; round < spec.checkRounds; ++round) {
    CB_TRY(prepareData(backend, spec, spec.checkSeed));
    CB_TRY(enqueueAt(backend, spec, base, 0));
    CB_TRY(backend.waitAll());
    CheckOutcome local;
    CB_TRY(backend.check(spec.dtype, spec.op, spec.checkSeed,
                         shiftedSegments(spec.expect, spec.unalignElems), &local));
    double counts[2] = {static_cast<double>(local.wrong), local.wrong > 0 ? 1.0 : 0.0};
    CB_TRY(backend.allreduce(counts, 2, Combine::Sum));
    result->wrong = counts[0];
    result->ranksWithWrong = static_cast<int>(counts[1]);
    if (counts[0] == 0) continue;
    // Name the first wrong element of the lowest rank that has one.
    std::string mine;
    if (local.haveFirst)
      mine = std::to_string(local.firstIndex) + '\n' + local.expected + '\n' + local.got;
    std::vector<std::string> all;
    CB_TRY(backend.gatherStrings(mine, &all));
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r].empty()) continue;
      const size_t a = all[r].find('\n'), b = all[r].find('\n', a + 1);
      result->firstWrong.rank = static_cast<int>(r);
      result->firstWrong.index = std::stoull(all[r].substr(0, a));
      result->firstWrong.expected = all[r].substr(a + 1, b - a - 1);
      result->firstWrong.got = all[r].substr(b + 1);
      break;
    }
    break;  // nccl-tests: a round with wrong elements stops further rounds
  }
  return Status::Ok();
}

Status collectIterations(Backend& backend, const HalfSpec& spec, const std::vector<double>& samples,
                         HalfResult* result) {
  std::vector<double> all;
  CB_TRY(backend.gather(samples.data(), static_cast<int>(samples.size()), &all));
  if (backend.rank() != 0) return Status::Ok();
  const size_t n = samples.size();
  result->perRankIterUs = all;
  result->iterUs.assign(n, 0.0);
  for (size_t r = 0; r * n < all.size(); ++r)
    for (size_t i = 0; i < n; ++i) result->iterUs[i] = std::max(result->iterUs[i], all[r * n + i]);
  (void)spec;
  return Status::Ok();
}

}  // namespace

Status warmup(Backend& backend, const HalfSpec& spec, int iters) {
  const OpPointers base = basePointers(backend, spec);
  const uint64_t slots = rotationSlots(spec);
  for (int i = 0; i < iters; ++i)
    CB_TRY(enqueueAt(backend, spec, base, spec.rotateBytes * (static_cast<uint64_t>(i) % slots)));
  return backend.waitAll();
}

Status benchHalf(Backend& backend, const HalfSpec& spec, HalfResult* result) {
  if (spec.iters < 1 || spec.aggIters < 1 || spec.blocking < 0 || spec.blocking > 3)
    return Status::Error("core", "CORE_BAD_SPEC", "iters and agg iters must be >= 1, blocking 0..3",
                         CB_SITE("benchHalf"));
  *result = HalfResult{};
  const OpPointers base = basePointers(backend, spec);
  const uint64_t slots = rotationSlots(spec);
  const int n = spec.iters, m = spec.aggIters;

  if (spec.checkRounds > 0) CB_TRY(prepareData(backend, spec, kTimingDataSeed));
  CB_TRY(enqueueAt(backend, spec, base, 0));  // one untimed op
  CB_TRY(backend.waitAll());
  CB_TRY(backend.barrier());

  std::vector<double> iterSeconds(spec.perIter ? n : 0);
  double blockedSeconds = 0;  // -z 3: sum of the pre-barrier part of each iteration
  const auto t0 = Clock::now();
  auto iterStart = t0;
  for (int iter = 0; iter < n; ++iter) {
    if (spec.perIter || spec.blocking == 3) iterStart = Clock::now();
    if (m > 1) CB_TRY(backend.groupStart());
    for (int a = 0; a < m; ++a) {
      const uint64_t opIndex = static_cast<uint64_t>(iter) * m + a;
      CB_TRY(enqueueAt(backend, spec, base, spec.rotateBytes * (opIndex % slots)));
      if (spec.blocking > 0) {
        CB_TRY(backend.waitAll());
        if (spec.blocking == 1) CB_TRY(backend.barrier());
      }
    }
    if (m > 1) CB_TRY(backend.groupEnd());
    if (spec.blocking == 3) {
      CB_TRY(backend.waitAll());
      const double s = secondsSince(iterStart);
      blockedSeconds += s;
      if (spec.perIter) iterSeconds[iter] = s;
      CB_TRY(backend.barrier());
    } else if (spec.perIter) {
      // Host clock: an iteration ends when the next one starts (nccl-tests' shared boundary
      // events); the last one ends at completion below.
      if (iter > 0) iterSeconds[iter - 1] = std::chrono::duration<double>(iterStart - t0).count();
    }
  }
  const double ops = static_cast<double>(n) * m;
  const double cpuSeconds = spec.blocking == 3 ? blockedSeconds : secondsSince(t0);
  CB_TRY(backend.waitAll());
  const auto tEnd = Clock::now();
  const double seconds = spec.blocking == 3 ? blockedSeconds
                                            : std::chrono::duration<double>(tEnd - t0).count();
  if (spec.perIter && spec.blocking != 3) {
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
    CB_TRY(collectIterations(backend, spec, samplesUs, result));
  }
  CB_TRY(backend.barrier());

  if (spec.checkRounds > 0) CB_TRY(runCheck(backend, spec, base, result));
  return Status::Ok();
}

}  // namespace collbench
