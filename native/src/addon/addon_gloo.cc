// Entry point of collbench_gloo.node: the Gloo backend behind the shared N-API glue, as
// addon_mpi.cc is for MPI. init() reads the world and rendezvous that the TypeScript gloo driver
// (bench/backends/gloo.ts) put in COLLBENCH_GLOO_* variables, then connects; finalize() is the
// final barrier Gloo needs before exit; abort() ends this rank at once (Gloo has no job-wide abort).
#include <napi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../backends/gloo/gloo_backend.h"
#include "addon_common.h"

namespace {

// Never destroyed: orderly runs release everything in finalize(); on any other way out the OS closes
// the sockets, and no destructor runs Gloo teardown under a thread that may still be inside a Gloo wait.
collbench::addon::BackendSlot& gSlot = *new collbench::addon::BackendSlot;

collbench::GlooBackend* gloo() { return static_cast<collbench::GlooBackend*>(gSlot.backend.get()); }

std::string env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string(fallback);
}

collbench::Status envInt(const char* name, int fallback, int* out) {
  const std::string text = env(name);
  if (text.empty()) {
    *out = fallback;
    return collbench::Status::Ok();
  }
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0' || v < 0 || v > 1 << 30)
    return collbench::Status::Error("gloo", "GLOO_BAD_ENVIRONMENT",
                                    std::string(name) + "='" + text + "' is not a non-negative integer",
                                    CB_SITE("addon_gloo init"));
  *out = static_cast<int>(v);
  return collbench::Status::Ok();
}

collbench::Status readConfig(collbench::GlooConfig* c, int* localRank, int* localSize) {
  CB_TRY(envInt("COLLBENCH_GLOO_RANK", 0, &c->rank));
  CB_TRY(envInt("COLLBENCH_GLOO_SIZE", 1, &c->size));
  CB_TRY(envInt("COLLBENCH_GLOO_LOCAL_RANK", c->rank, localRank));
  CB_TRY(envInt("COLLBENCH_GLOO_LOCAL_SIZE", c->size, localSize));
  CB_TRY(envInt("COLLBENCH_GLOO_TIMEOUT_MS", 30000, &c->timeoutMs));
  c->store = env("COLLBENCH_GLOO_STORE");
  c->runId = env("COLLBENCH_GLOO_RUN_ID", "collbench");
  c->iface = env("COLLBENCH_GLOO_IFACE");
  c->hostname = env("COLLBENCH_GLOO_HOSTNAME");
  const std::string half = env("COLLBENCH_GLOO_FLOAT16", "gloo");
  if (half != "collbench" && half != "gloo")
    return collbench::Status::Error("gloo", "GLOO_BAD_ENVIRONMENT",
                                    "COLLBENCH_GLOO_FLOAT16='" + half + "' must be collbench or gloo",
                                    CB_SITE("addon_gloo init"));
  c->glooFloat16 = half == "gloo";
  const std::string algo = env("COLLBENCH_GLOO_ALGO", "default");
  if (!collbench::parseGlooAlgo(algo, &c->algo))
    return collbench::Status::Error("gloo", "GLOO_BAD_ENVIRONMENT",
                                    "COLLBENCH_GLOO_ALGO='" + algo + "' is not a Gloo all_reduce algorithm",
                                    CB_SITE("addon_gloo init"));
  return collbench::Status::Ok();
}

int gLocalRank = 0, gLocalSize = 1;

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gSlot.backend) {
    collbench::GlooConfig config;
    collbench::Status s = readConfig(&config, &gLocalRank, &gLocalSize);
    std::unique_ptr<collbench::GlooBackend> b;
    if (s.ok) s = collbench::GlooBackend::create(config, &b);
    if (!s.ok) throw collbench::addon::toJsError(env, s);
    gSlot.backend = std::move(b);
  }
  collbench::GlooBackend* b = gloo();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", "gloo");
  o.Set("rank", b->rank());
  o.Set("nranks", b->nranks());
  o.Set("localRank", gLocalRank);
  o.Set("localSize", gLocalSize);
  o.Set("libraryVersion", collbench::GlooBackend::libraryVersion());
  o.Set("libraryVersionShort", collbench::GlooBackend::libraryVersionShort());
  o.Set("processorName", std::string(host));
  o.Set("pid", static_cast<double>(getpid()));
  o.Set("transport", b->deviceText());
  o.Set("glooAlgo", collbench::glooAlgoName(b->config().algo));
  o.Set("glooFloat16", b->config().glooFloat16 ? "gloo" : "collbench");
  return o;
}

Napi::Value Finalize(const Napi::CallbackInfo& info) {
  if (gSlot.backend) {
    collbench::Status s = gloo()->finalize();
    if (!s.ok) throw collbench::addon::toJsError(info.Env(), s);
  }
  return info.Env().Undefined();
}

// Gloo has no job-wide abort: this rank ends at once with `code`, and its peers see the closed
// connections (GLOO_IO). Not process.exit(): Node would first join its worker threads, one of which may
// sit in a Gloo wait on a frozen peer until Gloo's own timeout (the -T watchdog's case).
Napi::Value Abort(const Napi::CallbackInfo& info) {
  const int code = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  std::fflush(nullptr);
  _exit(code);
  return info.Env().Undefined();
}

Napi::Object ModuleInit(Napi::Env env, Napi::Object exports) {
  exports.Set("init", Napi::Function::New(env, Init));
  exports.Set("finalize", Napi::Function::New(env, Finalize));
  exports.Set("abort", Napi::Function::New(env, Abort));
  collbench::addon::registerCommon(env, exports, &gSlot);
  return exports;
}

}  // namespace

NODE_API_MODULE(collbench_gloo, ModuleInit)
