// GlooBackend: bring-up (rendezvous stores, contexts), life cycle, memory and the control plane of the Gloo backend
// (its collectives are in gloo_collectives.cc, as the NCCL backend splits them). Every Gloo call runs inside CB_GLOO
// (gloo_types.h): no exception crosses this file's boundary.
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

// ---- stores --------------------------------------------------------------------------------

#ifndef COLLBENCH_GLOO_NO_REDIS
// libgloo's RedisStore connects but never authenticates, so a server started with --requirepass answers every
// command with NOAUTH deep inside the rendezvous. This subclass uses the store's own connection (redis_, protected
// in RedisStore) right after it is made: AUTH with the password when one is given, else a PING, so a wrong or
// missing password fails here with one message naming the store (the password itself is never in a message).
class AuthRedisStore : public gloo::rendezvous::RedisStore {
 public:
  AuthRedisStore(const std::string& host, int port, const std::string& password, const std::string& name)
      : RedisStore(host, port) {
    void* raw = password.empty() ? redisCommand(redis_, "PING")
                                 : redisCommand(redis_, "AUTH %b", password.data(), password.size());
    redisReply* reply = static_cast<redisReply*>(raw);
    if (reply == nullptr)
      throw std::runtime_error("Redis store " + name + ": " + (password.empty() ? "PING" : "AUTH") +
                               " failed: " + (redis_->errstr[0] != '\0' ? redis_->errstr : "no reply"));
    const bool refused = reply->type == REDIS_REPLY_ERROR;
    const std::string text = refused && reply->str != nullptr ? std::string(reply->str, reply->len) : "";
    freeReplyObject(reply);
    if (!refused) return;
    if (password.empty())
      throw std::runtime_error("Redis store " + name + " needs a password (" + text +
                               "): set COLLBENCH_GLOO_REDIS_PASSWORD (or REDISCLI_AUTH) in the environment");
    throw std::runtime_error("Redis store " + name + " refused the password from COLLBENCH_GLOO_REDIS_PASSWORD or " +
                             "REDISCLI_AUTH (" + text + ")");
  }
};
#endif

Status makeStore(const GlooConfig& c, std::unique_ptr<gloo::rendezvous::Store>* out) {
  const std::string& s = c.store;
  if (s.empty()) {
    if (c.size != 1)
      return Status::Error(
          "gloo", "GLOO_NO_STORE",
          "a world of " + std::to_string(c.size) + " ranks needs a rendezvous store (file:DIR or redis://HOST:PORT)",
          CB_SITE("GlooBackend::create"));
    *out = std::make_unique<gloo::rendezvous::HashStore>();  // in-memory: a 1-rank world
    return Status::Ok();
  }
  if (s.rfind("file:", 0) == 0) {
    const std::string dir = s.substr(5);
    struct stat st {};
    if (dir.empty() || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::Error("gloo", "GLOO_STORE",
                           "FileStore directory '" + dir + "' does not exist or is not a directory",
                           CB_SITE("gloo::rendezvous::FileStore"));
    CB_GLOO("gloo::rendezvous::FileStore", *out = std::make_unique<gloo::rendezvous::FileStore>(dir));
    return Status::Ok();
  }
  if (s.rfind("redis://", 0) == 0) {
    const std::string hostPort = s.substr(8);
    const size_t colon = hostPort.rfind(':');
    const std::string host = colon == std::string::npos ? hostPort : hostPort.substr(0, colon);
    int port = 6379;
    if (colon != std::string::npos) {
      char* end = nullptr;
      const long p = std::strtol(hostPort.c_str() + colon + 1, &end, 10);
      if (end == nullptr || *end != '\0' || p < 1 || p > 65535)
        return Status::Error("gloo", "GLOO_STORE", "bad Redis port in '" + s + "'",
                             CB_SITE("gloo::rendezvous::RedisStore"));
      port = static_cast<int>(p);
    }
    if (host.empty())
      return Status::Error("gloo", "GLOO_STORE", "no Redis host in '" + s + "'",
                           CB_SITE("gloo::rendezvous::RedisStore"));
#ifdef COLLBENCH_GLOO_NO_REDIS
    (void)port;
    return Status::Error("gloo", "GLOO_STORE", "this build has no RedisStore (hiredis.h was not found)",
                         CB_SITE("gloo::rendezvous::RedisStore"));
#else
    CB_GLOO("gloo::rendezvous::RedisStore",
            *out = std::make_unique<AuthRedisStore>(host, port, c.storePassword, "redis://" + hostPort));
    return Status::Ok();
#endif
  }
  return Status::Error("gloo", "GLOO_STORE", "unknown store '" + s + "' (expected file:DIR or redis://HOST:PORT)",
                       CB_SITE("GlooBackend::create"));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names

bool parseGlooAlgo(const std::string& name, GlooAlgo* out) {
  for (int i = 0; i <= static_cast<int>(GlooAlgo::LegacyBcube); ++i) {
    if (name == glooAlgoName(static_cast<GlooAlgo>(i))) {
      *out = static_cast<GlooAlgo>(i);
      return true;
    }
  }
  return false;
}

const char* glooAlgoName(GlooAlgo a) {
  switch (a) {
    case GlooAlgo::Default:
      return "default";
    case GlooAlgo::Ring:
      return "ring";
    case GlooAlgo::Bcube:
      return "bcube";
    case GlooAlgo::LegacyRing:
      return "legacy_ring";
    case GlooAlgo::LegacyRingChunked:
      return "legacy_ring_chunked";
    case GlooAlgo::LegacyHalvingDoubling:
      return "legacy_halving_doubling";
    case GlooAlgo::LegacyBcube:
      return "legacy_bcube";
  }
  return "unknown";
}

std::string GlooBackend::libraryVersionShort() {
  return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH);
}

std::string GlooBackend::libraryVersion() {
  return libraryVersionShort() + " (tcp transport)";
}

// ---------------------------------------------------------------------------------------------
// Life cycle

Status GlooBackend::create(const GlooConfig& config, std::unique_ptr<GlooBackend>* out) {
  if (out == nullptr) return badSpec("GlooBackend::create needs an output pointer", "GlooBackend::create");
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size)
    return Status::Error(
        "gloo", "GLOO_BAD_RANK",
        "rank " + std::to_string(config.rank) + " is not in a world of " + std::to_string(config.size) + " ranks",
        CB_SITE("GlooBackend::create"));
  if (config.timeoutMs <= 0) return badSpec("the Gloo timeout must be positive", "GlooBackend::create");
  std::unique_ptr<GlooBackend> b(new GlooBackend(config));
  CB_TRY(makeStore(config, &b->baseStore_));
  CB_GLOO("gloo::rendezvous::PrefixStore",
          b->runStore_ = std::make_unique<gloo::rendezvous::PrefixStore>(config.runId, *b->baseStore_));

  gloo::transport::tcp::attr attr;
  if (!config.iface.empty())
    attr.iface = config.iface;
  else if (!config.hostname.empty())
    attr.hostname = config.hostname;
  CB_GLOO("gloo::transport::tcp::CreateDevice", b->device_ = gloo::transport::tcp::CreateDevice(attr));

  CB_TRY(b->connect("ctrl", &b->ctrl_));
  CB_TRY(b->connect("data", &b->data_));
  *out = std::move(b);
  return Status::Ok();
}

Status GlooBackend::connect(const char* name, std::shared_ptr<gloo::Context>* ctx) {
  auto c = std::make_shared<gloo::rendezvous::Context>(config_.rank, config_.size);
  // The bring-up's contexts (ctrl, data) connect under the shorter -T when one is given; their ops use timeoutMs.
  const bool bringUp = !ctrl_ || !data_;
  const int connectMs = bringUp && config_.connectTimeoutMs > 0 ? std::min(config_.connectTimeoutMs, config_.timeoutMs)
                                                                : config_.timeoutMs;
  c->setTimeout(std::chrono::milliseconds(connectMs));
  CB_GLOO(std::string("gloo::rendezvous::Context::connectFullMesh (") + name + " context)", {
    gloo::rendezvous::PrefixStore store(name, *runStore_);
    c->connectFullMesh(store, device_);
  });
  c->setTimeout(std::chrono::milliseconds(config_.timeoutMs));
  *ctx = c;
  return Status::Ok();
}

Status GlooBackend::legacyContext() {
  if (legacy_) return Status::Ok();
  // Every rank gets here at the same op of the same plan, so this rendezvous always pairs up.
  return connect("legacy", &legacy_);
}

void GlooBackend::dropLegacyAlgorithms() {
  for (LegacyEntry& e : legacyCache_) {
    try {
      e.algorithm.reset();
    } catch (...) {  // ~Algorithm is noexcept(false); nothing useful to do with its error here
    }
  }
  legacyCache_.clear();
}

void GlooBackend::closeGroups() {
  for (auto& c : groups_) {
    (void)glooGuard(CB_SITE("gloo::Context::closeConnections (process group)"), [&]() {
      if (c) c->closeConnections();
      c.reset();
    });
  }
  groups_.clear();
}

GlooBackend::~GlooBackend() {
  dropLegacyAlgorithms();
  kept_.clear();
  groups_.clear();
  for (auto* c : {&legacy_, &data_, &ctrl_}) {
    try {
      c->reset();
    } catch (...) {
    }
  }
  device_.reset();
}

Status GlooBackend::finalize() {
  if (finalized_) return Status::Ok();
  finalized_ = true;
  Status s = Status::Ok();
  if (!failed_ && ctrl_) s = ctrlBarrier(CB_SITE("gloo::barrier (final)"));
  dropLegacyAlgorithms();
  kept_.clear();
  closeGroups();
  for (auto* c : {&legacy_, &data_, &ctrl_}) {
    const Status t = glooGuard(CB_SITE("gloo::Context::closeConnections"), [&]() {
      if (*c) (*c)->closeConnections();
      c->reset();
    });
    if (s.ok) s = t;
  }
  releaseBuffers();
  return s;
}

Status GlooBackend::alive(const char* what) const {
  if (finalized_)
    return Status::Error("gloo", "GLOO_FINALIZED", std::string("GlooBackend::") + what + " called after finalize()",
                         CB_SITE(std::string("GlooBackend::") + what));
  return Status::Ok();
}

Status GlooBackend::track(Status s) {
  if (!s.ok && s.backend() == "gloo") failed_ = true;
  return s;
}

bool GlooBackend::preparedTracked(Status s) {
  if (s.ok) return true;  // the timed path: `s` was built in place, nothing is copied or moved
  return preparedFail(track(std::move(s)));
}

std::string GlooBackend::deviceText() const {
  return device_ ? device_->str() : std::string();
}

// ---------------------------------------------------------------------------------------------
// Memory

Status GlooBackend::allocate(uint64_t sendBytes, uint64_t recvBytes) {
  dropLegacyAlgorithms();  // they hold pointers into the old buffers
  return HostMemoryBackend::allocate(sendBytes, recvBytes);
}

uint64_t GlooBackend::scratchReserve() const {
  // Twice the larger buffer once (reduce needs an input and an output region), so the timed loop
  // never reallocates.
  return 2 * std::max(send_.bytes, recv_.bytes) + 128;
}

// ---------------------------------------------------------------------------------------------
// Control plane (new API on its own context)

Status GlooBackend::ctrlBarrier(const std::string& site) {
  return glooGuard(site, [&]() {
    auto& opts = kept_.make<gloo::BarrierOptions>(ctrl_);
    opts.setTag(kTag);
    gloo::barrier(opts);
  });
}

Status GlooBackend::barrier() {
  CB_TRY(alive("barrier"));
  return track(ctrlBarrier(CB_SITE("gloo::barrier")));
}

Status GlooBackend::allreduce(double* values, int n, Combine how) {
  CB_TRY(alive("allreduce"));
  if (n <= 0) return Status::Ok();
  if (values == nullptr) return badSpec("allreduce of a null array", "GlooBackend::allreduce");
  if (config_.size == 1) return Status::Ok();
  using Fn = void (*)(void*, const void*, const void*, size_t);
  Fn fn = static_cast<Fn>(&gloo::sum<double>);
  switch (how) {
    case Combine::Rank0:
      return track(glooGuard(CB_SITE("gloo::broadcast (control)"), [&]() {
        auto& opts = kept_.make<gloo::BroadcastOptions>(ctrl_);
        opts.setOutput<double>(values, n);
        opts.setRoot(0);
        opts.setTag(kTag);
        gloo::broadcast(opts);
      }));
    case Combine::Min:
      fn = static_cast<Fn>(&gloo::min<double>);
      break;
    case Combine::Max:
      fn = static_cast<Fn>(&gloo::max<double>);
      break;
    case Combine::Mean:
    case Combine::Sum:
      break;
    default:
      return badSpec("unknown combine mode " + std::to_string(static_cast<int>(how)), "GlooBackend::allreduce");
  }
  CB_TRY(track(glooGuard(CB_SITE("gloo::allreduce (control)"), [&]() {
    auto& opts = kept_.make<gloo::AllreduceOptions>(ctrl_);
    opts.setOutput<double>(values, n);
    opts.setReduceFunction(fn);
    opts.setTag(kTag);
    gloo::allreduce(opts);
  })));
  if (how == Combine::Mean)
    for (int i = 0; i < n; ++i) values[i] /= config_.size;
  return Status::Ok();
}

template <typename T>
Status GlooBackend::ctrlGather(const std::string& site, T* in, size_t n, T* out, size_t outN) {
  return glooGuard(site, [&]() {
    auto& opts = kept_.make<gloo::GatherOptions>(ctrl_);
    opts.setInput<T>(in, n);
    if (config_.rank == 0) opts.setOutput<T>(out, outN);
    opts.setRoot(0);
    opts.setTag(kTag);
    gloo::gather(opts);
  });
}

Status GlooBackend::gather(const double* mine, int n, std::vector<double>* atRoot) {
  CB_TRY(alive("gather"));
  if (atRoot == nullptr || n < 0 || (n > 0 && mine == nullptr))
    return badSpec("gather needs a value array and an output vector", "GlooBackend::gather");
  atRoot->clear();
  if (config_.rank == 0) atRoot->resize(static_cast<size_t>(n) * config_.size);
  if (n == 0) return Status::Ok();
  if (config_.size == 1) {
    std::copy(mine, mine + n, atRoot->begin());
    return Status::Ok();
  }
  return track(
      ctrlGather(CB_SITE("gloo::gather (control)"), const_cast<double*>(mine), n, atRoot->data(), atRoot->size()));
}

Status GlooBackend::gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) {
  CB_TRY(alive("gatherStrings"));
  if (atRoot == nullptr) return badSpec("gatherStrings needs an output vector", "GlooBackend::gatherStrings");
  atRoot->clear();
  if (config_.size == 1) {
    atRoot->push_back(mine);
    return Status::Ok();
  }
  // Gloo's gather moves equal-sized blocks: pad every string to the longest one.
  double longest = static_cast<double>(mine.size());
  CB_TRY(allreduce(&longest, 1, Combine::Max));
  const size_t width = static_cast<size_t>(longest) + 1;
  std::vector<double> lengths;
  const double myLength = static_cast<double>(mine.size());
  CB_TRY(gather(&myLength, 1, &lengths));
  std::vector<char> block(width, '\0'), all(config_.rank == 0 ? width * config_.size : 0);
  std::memcpy(block.data(), mine.data(), mine.size());
  CB_TRY(track(ctrlGather(CB_SITE("gloo::gather (control strings)"), block.data(), width, all.data(), all.size())));
  if (config_.rank == 0)
    for (int r = 0; r < config_.size; ++r)
      atRoot->emplace_back(all.data() + r * width, static_cast<size_t>(lengths[r]));
  return Status::Ok();
}

}  // namespace collbench
