// Entry point of collbench_gloo.node: the Gloo backend behind the shared N-API glue. init(config) checks every field
// of the world, rendezvous and transport that bench/backends/gloo.ts worked out, then connects; abort() ends this rank
// at once (Gloo has no job-wide abort).
#include <napi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "../backends/gloo/gloo_backend.h"
#include "addon_common.h"

namespace {

using collbench::Status;

// Never destroyed: orderly runs release everything in finalize(); on any other way out the OS closes
// the sockets, and no destructor runs Gloo teardown under a thread that may still be inside a Gloo wait.
collbench::addon::BackendSlot& gSlot = *new collbench::addon::BackendSlot;

collbench::GlooBackend* gloo() {
  return static_cast<collbench::GlooBackend*>(gSlot.backend.get());
}

int gLocalRank = 0, gLocalSize = 1;

// GLOO_BAD_CONFIG naming the field ("" for the config object itself).
Status badConfig(const std::string& field, const std::string& what) {
  return Status::Error("gloo", "GLOO_BAD_CONFIG",
                       field.empty() ? "the init config " + what : "init config field " + field + " " + what,
                       CB_SITE("addon_gloo init"));
}

// A required integer field in [min, 2^30].
Status intField(const Napi::Object& c, const char* field, int min, int* out) {
  const Napi::Value v = c.Get(field);
  if (!v.IsNumber()) return badConfig(field, "must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < min || d > (1 << 30))
    return badConfig(field,
                     "must be an integer from " + std::to_string(min) + " to 2^30, not " + v.ToString().Utf8Value());
  *out = static_cast<int>(d);
  return Status::Ok();
}

// A string field; `optional` ones may be missing (undefined): then *out stays "".
Status stringField(const Napi::Object& c, const char* field, bool optional, std::string* out) {
  const Napi::Value v = c.Get(field);
  if (optional && v.IsUndefined()) return Status::Ok();
  if (!v.IsString()) return badConfig(field, optional ? "must be a string when given" : "must be a string");
  *out = v.As<Napi::String>().Utf8Value();
  return Status::Ok();
}

// bench/backends/gloo.ts GlooInitConfig: { rank, size, localRank, localSize, runId, algo, store?, iface?,
// hostname?, timeoutMs, connectTimeoutMs?, float16 }.
Status readConfig(const Napi::Value& value, collbench::GlooConfig* c, int* localRank, int* localSize) {
  if (!value.IsObject()) return badConfig("", "must be an object");
  const Napi::Object o = value.As<Napi::Object>();
  CB_TRY(intField(o, "rank", 0, &c->rank));
  CB_TRY(intField(o, "size", 1, &c->size));
  if (c->rank >= c->size)
    return badConfig("rank", std::to_string(c->rank) + " is not in a world of " + std::to_string(c->size) + " ranks");
  CB_TRY(intField(o, "localRank", 0, localRank));
  CB_TRY(intField(o, "localSize", 1, localSize));
  CB_TRY(stringField(o, "runId", false, &c->runId));
  if (c->runId.empty()) return badConfig("runId", "must not be empty");
  std::string algo;
  CB_TRY(stringField(o, "algo", false, &algo));
  if (!collbench::parseGlooAlgo(algo, &c->algo))
    return badConfig("algo", "'" + algo + "' is not a Gloo all_reduce algorithm");
  CB_TRY(stringField(o, "store", true, &c->store));
  CB_TRY(stringField(o, "storePassword", true, &c->storePassword));
  CB_TRY(stringField(o, "iface", true, &c->iface));
  CB_TRY(stringField(o, "hostname", true, &c->hostname));
  CB_TRY(intField(o, "timeoutMs", 1, &c->timeoutMs));
  if (!o.Get("connectTimeoutMs").IsUndefined()) CB_TRY(intField(o, "connectTimeoutMs", 1, &c->connectTimeoutMs));
  std::string half;
  CB_TRY(stringField(o, "float16", false, &half));
  if (half != "collbench" && half != "gloo") return badConfig("float16", "'" + half + "' must be collbench or gloo");
  c->glooFloat16 = half == "gloo";
  return Status::Ok();
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gSlot.backend) {
    collbench::GlooConfig config;
    Status s = readConfig(info[0], &config, &gLocalRank, &gLocalSize);
    std::unique_ptr<collbench::GlooBackend> b;
    if (s.ok) s = collbench::GlooBackend::create(config, &b);
    collbench::addon::throwIfError(env, s);
    gSlot.backend = std::move(b);
  }
  collbench::GlooBackend* b = gloo();
  Napi::Object o = collbench::addon::infoObject(
      env, {"gloo", b->rank(), b->nranks(), gLocalRank, gLocalSize, collbench::GlooBackend::libraryVersion(),
            collbench::GlooBackend::libraryVersionShort()});
  o.Set("transport", b->deviceText());
  o.Set("glooAlgo", collbench::glooAlgoName(b->config().algo));
  o.Set("glooFloat16", b->config().glooFloat16 ? "gloo" : "collbench");
  return o;
}

// Gloo has no job-wide abort: this rank ends at once with `code`, and its peers see the closed
// connections (GLOO_IO). Not process.exit(): Node would first join its worker threads, one of which may
// sit in a Gloo wait on a frozen peer until Gloo's own timeout (the -T watchdog's case).
void Abort(collbench::Backend*, int code) {
  std::fflush(nullptr);
  _exit(code);
}

Napi::Object ModuleInit(Napi::Env env, Napi::Object exports) {
  collbench::addon::registerModule(env, exports, &gSlot, {Init, Abort, false});
  return exports;
}

}  // namespace

NODE_API_MODULE(collbench_gloo, ModuleInit)
