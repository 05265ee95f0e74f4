// Device arrivals (device_arrivals.h): reference marks with their host time, the gather of every rank's marks, and
// the COLLBENCH_TEST_GPU_DELAY test hook's parsing.
#include "device_arrivals.h"

#include <cstdlib>
#include <string>

#include "core/backend_errors.h"
#include "core/clock.h"

namespace collbench {
namespace {

// Rounds of reference marks: the first pays for waking the stream; the last one's window is the one kept.
constexpr int kReferenceRounds = 3;

}  // namespace

Status deviceDelayFromEnv(const Backend& backend, int iters, DeviceDelay* out) {
  *out = DeviceDelay{};
  const char* raw = std::getenv("COLLBENCH_TEST_GPU_DELAY");
  if (raw == nullptr || *raw == '\0') return Status::Ok();
  const std::string text = raw;
  const auto bad = [&](const std::string& why) {
    return badSpec("COLLBENCH_TEST_GPU_DELAY='" + text + "': " + why +
                       " (expected MICROS:ITERATION[:RANK], ITERATION a number or 'all', e.g. 500:5 or 1500:all:1)",
                   "deviceDelayFromEnv");
  };
  const size_t a = text.find(':');
  if (a == std::string::npos) return bad("no iteration");
  const size_t b = text.find(':', a + 1);
  const std::string us = text.substr(0, a),
                    it = text.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  const std::string rk = b == std::string::npos ? "0" : text.substr(b + 1);
  char* end = nullptr;
  const double micros = std::strtod(us.c_str(), &end);
  if (us.empty() || *end != '\0' || !(micros > 0) || micros > 1e7) return bad("MICROS must be a number in (0, 1e7]");
  int iter = DeviceDelay::kAll;
  if (it != "all") {
    const long v = std::strtol(it.c_str(), &end, 10);
    if (it.empty() || *end != '\0' || v < 0 || v >= iters)
      return bad("ITERATION must be 'all' or 0.." + std::to_string(iters - 1) + " (-n)");
    iter = static_cast<int>(v);
  }
  const long rank = std::strtol(rk.c_str(), &end, 10);
  if (rk.empty() || *end != '\0' || rank < 0 || rank >= backend.nranks())
    return bad("RANK must be 0.." + std::to_string(backend.nranks() - 1));
  out->iter = iter;
  out->micros = micros;
  const long local = rank - backend.rank();
  out->local = local >= 0 && local < backend.localRanks() ? static_cast<int>(local) : -1;
  return Status::Ok();
}

Status DeviceArrivals::begin(Backend& backend) {
  const int locals = backend.localRanks();
  refs_.assign(2 * static_cast<size_t>(locals), 0.0);
  for (int i = 0; i < locals; ++i) {
    for (int round = 0; round < kReferenceRounds; ++round) {
      const double before = clockMicros();
      CB_TRY(backend.arrivalReference(i));  // recorded on the idle stream and waited for
      const double after = clockMicros();
      refs_[2 * i] = (before + after) / 2;
      refs_[2 * i + 1] = (after - before) / 2;
    }
  }
  return Status::Ok();
}

Status DeviceArrivals::gather(Backend& backend, int iters, int stride, HalfResult* result) const {
  const int locals = backend.localRanks();
  std::vector<double> mine(static_cast<size_t>(locals) * iters);
  for (int l = 0; l < locals; ++l)
    for (int i = 0; i < iters; ++i) {
      double seconds = 0;
      CB_TRY(backend.markSinceReference(l, stride * i, &seconds));
      mine[static_cast<size_t>(l) * iters + i] = seconds * 1e6;
    }
  CB_TRY(backend.gather(mine.data(), static_cast<int>(mine.size()), &result->arrivalUs));
  CB_TRY(backend.gather(refs_.data(), static_cast<int>(refs_.size()), &result->deviceRefUs));
  result->arrivalIters = iters;
  return Status::Ok();
}

}  // namespace collbench
