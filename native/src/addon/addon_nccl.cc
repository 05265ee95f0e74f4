// Entry point of collbench_nccl.node: the NCCL backend behind the shared N-API glue, plus what the TypeScript driver
// needs around init: probe (is NCCL usable here?), library (load and version), devices (CUDA's view, never throws),
// uniqueId, init (async: communicators may wait for peers) and memoryUsage.
#include <napi.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../backends/nccl/nccl_backend.h"
#include "addon_common.h"
#include "field_reader.h"

namespace {

using collbench::NcclBackend;
using collbench::Status;
using collbench::addon::throwIfError;

collbench::addon::BackendSlot gSlot;

NcclBackend* nccl() {
  return static_cast<NcclBackend*>(gSlot.backend.get());
}

// An init() whose worker (a libuv pool thread) has not finished: it may wait in ncclCommInitRank for a peer that
// never comes, and then neither abort() (no communicator yet) nor process.exit() (libuv joins its pool threads at
// exit) can end this process; abort() ends it with _exit instead.
std::atomic<bool> gInitInFlight{false};

std::string optString(const Napi::Value& v, const char* key) {
  if (!v.IsObject()) return "";
  Napi::Value s = v.As<Napi::Object>().Get(key);
  return s.IsString() ? s.As<Napi::String>().Utf8Value() : "";
}

// bench/backends/nccl.ts NcclInitConfig, read through one table (addon/field_reader.h): every field but lib and
// controlPlane is required; init({lib, uniqueId}) alone is refused naming the first missing field. initFields()
// hands the table to test/native/nccl-module.test.ts, which compares it with the TypeScript type.
struct InitConfig {
  collbench::NcclOptions options;
  int localRank = 0, localSize = 1;
};
using collbench::addon::asInt32;
using collbench::addon::Field;
using collbench::addon::Kind;
using collbench::addon::Where;
using IC = InitConfig;
const Field<IC> kInitFields[] = {
    {"lib", Kind::String, false,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.libPath = collbench::addon::asString(v, w); }},
    {"procRank", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.procRank = asInt32(v, w); }},
    {"nprocs", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.nprocs = asInt32(v, w); }},
    {"localRank", Kind::Int32, true, [](const Napi::Value& v, const Where& w, IC* c) { c->localRank = asInt32(v, w); }},
    {"localSize", Kind::Int32, true, [](const Napi::Value& v, const Where& w, IC* c) { c->localSize = asInt32(v, w); }},
    {"nThreads", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.nThreads = asInt32(v, w); }},
    {"nGpus", Kind::Int32, true, [](const Napi::Value& v, const Where& w, IC* c) { c->options.nGpus = asInt32(v, w); }},
    {"firstDevice", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.firstDevice = asInt32(v, w); }},
    {"shareDevices", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.shareDevices = asInt32(v, w) != 0; }},
    {"uniqueId", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, IC* c) {
       for (const uint64_t b : collbench::addon::asUint64s(v, w)) {
         if (b > 255) collbench::addon::refuse(v, w, "must hold bytes (0 to 255), not " + std::to_string(b));
         c->options.uniqueId.push_back(static_cast<char>(b));
       }
     }},
    {"splitColor", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.splitColor = asInt32(v, w); }},
    {"streamNull", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.streamNull = asInt32(v, w) != 0; }},
    {"ctaPolicy", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.ctaPolicy = asInt32(v, w); }},
    {"localRegister", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.localRegister = asInt32(v, w); }},
    {"timeoutSec", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.timeoutSec = asInt32(v, w); }},
    {"deviceImpl", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.deviceImpl = asInt32(v, w); }},
    {"deviceCtaCount", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, IC* c) { c->options.deviceCtaCount = asInt32(v, w); }},
    {"controlPlane", Kind::External, false,
     [](const Napi::Value& v, const Where& w, IC* c) {
       c->options.control = collbench::addon::borrowControlPlane(v);
       if (c->options.control == nullptr)
         collbench::addon::refuse(
             v, w, "must be another collbench module's controlPlane(), not " + collbench::addon::shown(v));
     }},
};

Napi::Object libraryObject(Napi::Env env, const collbench::NcclLibrary& lib) {
  const collbench::ncclapi::Api& a = lib.api;
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", lib.path);
  o.Set("how", lib.how);
  o.Set("version", lib.versionString());
  o.Set("versionCode", lib.versionCode);
  Napi::Object f = Napi::Object::New(env);
  f.Set("alltoall", a.AlltoAll != nullptr);
  f.Set("gather", a.Gather != nullptr);
  f.Set("scatter", a.Scatter != nullptr);
  f.Set("preMulSum", a.RedOpCreatePreMulSum != nullptr);
  f.Set("avg", lib.atLeast(2, 10, 0));
  f.Set("bfloat16", lib.atLeast(2, 10, 0));
  f.Set("fp8", lib.atLeast(2, 24, 0));
  f.Set("config", a.CommInitRankConfig != nullptr);
  f.Set("ctaPolicy", a.CommInitRankConfig != nullptr && lib.atLeast(2, 27, 0));
  f.Set("ctaPolicyZero", a.CommInitRankConfig != nullptr && lib.atLeast(2, 28, 0));
  f.Set("split", a.CommSplit != nullptr);
  f.Set("register", a.CommRegister != nullptr);
  f.Set("window", a.CommWindowRegister != nullptr);
  f.Set("graphs", lib.atLeast(2, 9, 0));
  f.Set("lastError", a.GetLastError != nullptr);
  o.Set("features", f);
  // -D: "" when collbench's device-API kernels can run on this library, else why not (one sentence).
  std::string refusal;
  o.Set("deviceApiRefusal", collbench::nccldevice::variantFor(lib, &refusal) != nullptr ? "" : refusal);
  const std::vector<int> built = collbench::nccldevice::builtVersions();
  Napi::Array versions = Napi::Array::New(env, built.size());
  for (size_t i = 0; i < built.size(); ++i) versions.Set(static_cast<uint32_t>(i), built[i]);
  o.Set("deviceApiBuilt", versions);  // normalized NCCL versions of the nccl_device.h the kernels were built against
  return o;
}

Napi::Object devicesObject(Napi::Env env, const collbench::CudaDevices& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", d.count);
  o.Set("cudaError", d.cudaError);
  o.Set("errorName", d.errorName);
  o.Set("errorText", d.errorText);
  o.Set("driverVersion", d.driverVersion);
  o.Set("runtimeVersion", d.runtimeVersion);
  return o;
}

// probe({lib}): whether this backend can run here, without throwing; used to pick a default backend.
Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  const collbench::NcclLibrary* lib = nullptr;
  const Status s = collbench::loadNccl(optString(info[0], "lib"), &lib);
  const collbench::CudaDevices d = collbench::queryCudaDevices();
  o.Set("devices", devicesObject(env, d));
  if (!s.ok) {
    o.Set("usable", false);
    o.Set("reason", s.message());
    return o;
  }
  o.Set("library", libraryObject(env, *lib));
  o.Set("usable", d.count > 0);
  if (d.count <= 0)
    o.Set("reason", "no CUDA device: " + (d.cudaError != 0 ? d.errorText + " (" + d.errorName + ")"
                                                           : std::string("cudaGetDeviceCount found 0 devices")));
  return o;
}

Napi::Value Library(const Napi::CallbackInfo& info) {
  const collbench::NcclLibrary* lib = nullptr;
  throwIfError(info.Env(), collbench::loadNccl(optString(info[0], "lib"), &lib));
  return libraryObject(info.Env(), *lib);
}

Napi::Value Devices(const Napi::CallbackInfo& info) {
  return devicesObject(info.Env(), collbench::queryCudaDevices());
}

Napi::Value UniqueId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const collbench::NcclLibrary* lib = nullptr;
  throwIfError(env, collbench::loadNccl(optString(info[0], "lib"), &lib));
  collbench::ncclapi::UniqueId id{};
  const collbench::ncclapi::Result r = lib->api.GetUniqueId(&id);
  if (r != collbench::ncclapi::Success) {
    const char* last = lib->api.GetLastError ? lib->api.GetLastError(nullptr) : nullptr;
    throwIfError(env, Status::Error("nccl", collbench::ncclapi::resultCode(r),
                                    std::string("ncclGetUniqueId failed: ") + collbench::ncclapi::resultName(r) +
                                        (last && *last ? std::string(": ") + last : std::string()),
                                    CB_SITE("ncclGetUniqueId")));
  }
  Napi::Array a = Napi::Array::New(env, sizeof id.internal);
  for (uint32_t i = 0; i < sizeof id.internal; ++i)
    a.Set(i, static_cast<double>(static_cast<unsigned char>(id.internal[i])));
  return a;
}

Napi::Object ncclInfo(Napi::Env env, NcclBackend& b, int localProcRank, int localProcSize) {
  const collbench::NcclLibrary& lib = b.library();
  const collbench::CudaDevices cuda = collbench::queryCudaDevices();
  // rank, nranks: in the communicator collectives run on (the split group). The preamble prints
  // "backend nccl (<libraryVersionShort>)": version and the file loaded.
  Napi::Object o = collbench::addon::infoObject(
      env, {"nccl", b.groupRank(), b.groupSize(), localProcRank, localProcSize,
            "NCCL " + lib.versionString() + " (nccl-library=" + std::to_string(lib.versionCode) + " nccl-headers=" +
                std::to_string(collbench::ncclapi::kDeclaredVersion) + ", " + lib.path + ", found by " + lib.how + ")",
            "NCCL " + lib.versionString() + " " + lib.path});
  o.Set("worldRank", b.rank());
  o.Set("worldRanks", b.nranks());
  o.Set("localRanks", b.localRanks());
  o.Set("procRank", b.procRank());
  o.Set("nprocs", b.nprocs());
  o.Set("ncclVersion", lib.versionCode);
  o.Set("ncclHeadersVersion", collbench::ncclapi::kDeclaredVersion);
  o.Set("library", libraryObject(env, lib));
  o.Set("controlPlane", b.controlPlaneName());
  o.Set("cudaDriverVersion", cuda.driverVersion);
  o.Set("cudaRuntimeVersion", cuda.runtimeVersion);
  Napi::Array devs = Napi::Array::New(env, b.devices().size());
  for (size_t i = 0; i < b.devices().size(); ++i) {
    const collbench::NcclDevice& d = b.devices()[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("worldRank", d.worldRank);
    x.Set("groupRank", d.groupRank);
    x.Set("ordinal", d.ordinal);
    x.Set("pciDomain", d.pciDomain);
    x.Set("pciBus", d.pciBus);
    x.Set("pciDevice", d.pciDevice);
    x.Set("ccMajor", d.ccMajor);
    x.Set("ccMinor", d.ccMinor);
    x.Set("totalMemBytes", static_cast<double>(d.totalMemBytes));
    x.Set("name", d.name);
    devs.Set(static_cast<uint32_t>(i), x);
  }
  o.Set("devices", devs);
  return o;
}

// Creates the backend off the JS thread: communicator init may wait for peers for a long time.
class InitWorker : public Napi::AsyncWorker {
 public:
  InitWorker(Napi::Env env, collbench::NcclOptions options, int localProcRank, int localProcSize)
      : Napi::AsyncWorker(env),
        options_(std::move(options)),
        localProcRank_(localProcRank),
        localProcSize_(localProcSize),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      status_ = NcclBackend::create(options_, &backend_);
    } catch (const std::exception& e) {
      status_ = Status::Error("core", "CORE_EXCEPTION", e.what(), CB_SITE("NcclBackend::create"));
    }
  }
  void OnOK() override {
    gInitInFlight.store(false);
    Napi::Env env = Env();
    if (!status_.ok) {
      deferred_.Reject(collbench::addon::toJsError(env, status_).Value());
      return;
    }
    gSlot.backend = std::move(backend_);
    deferred_.Resolve(ncclInfo(env, *nccl(), localProcRank_, localProcSize_));
  }
  void OnError(const Napi::Error& e) override {
    gInitInFlight.store(false);
    deferred_.Reject(e.Value());
  }

 private:
  collbench::NcclOptions options_;
  int localProcRank_, localProcSize_;
  std::unique_ptr<NcclBackend> backend_;
  Status status_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (gSlot.backend)
    throwIfError(env, Status::Error("core", "CORE_ALREADY_INITIALIZED", "init() was called already", CB_SITE("init")));
  if (!info[0].IsObject())
    throwIfError(env, Status::Error("core", "CORE_BAD_SPEC", "init needs a configuration object", CB_SITE("init")));
  InitConfig c = collbench::addon::readObject(info[0], {"init", ""}, kInitFields);
  auto* w = new InitWorker(env, std::move(c.options), c.localRank, c.localSize);
  Napi::Promise p = w->promise();
  gInitInFlight.store(true);
  w->Queue();
  return p;
}

// The -T watchdog (the process exits right after; the code is the exit's): the wait in progress on the
// worker thread aborts the communicators, so peers see the failure instead of hanging. Gives it up to
// 2 s to do so (a thread stuck inside an NCCL call never gets there; the exit then ends everything anyway).
// During init (no communicator to abort yet, its worker possibly waiting for a peer) this process ends here.
void Abort(collbench::Backend* backend, int code) {
  if (backend == nullptr) {
    if (gInitInFlight.load()) _exit(code);
    return;
  }
  auto* b = static_cast<NcclBackend*>(backend);
  b->requestAbort();
  for (int i = 0; i < 2000 && !b->aborted(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Napi::Value MemoryUsage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& b = static_cast<NcclBackend&>(collbench::addon::requireBackend(env, &gSlot));
  uint64_t init = 0, user = 0, coll = 0;
  throwIfError(env, b.memoryUsage(&init, &user, &coll));
  Napi::Object o = Napi::Object::New(env);
  o.Set("initialization", static_cast<double>(init));
  o.Set("userAllocated", static_cast<double>(user));
  o.Set("collective", static_cast<double>(coll));
  return o;
}

// linksRead(path, reset): the rows of collbench's NCCL link profiler (native/src/profiler/) as JSON, from the copy NCCL
// loaded into this process through NCCL_PROFILER_PLUGIN=path; null when NCCL has not loaded it (yet).
Napi::Value LinksRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return env.Null();
  auto read = reinterpret_cast<char* (*)(int)>(dlsym(lib, "collbenchProfilerReadJson"));
  auto release = reinterpret_cast<void (*)(char*)>(dlsym(lib, "collbenchProfilerFree"));
  if (!read || !release) {
    dlclose(lib);
    throw Napi::Error::New(env, "links: " + path + " has no collbenchProfilerReadJson: not collbench's link profiler");
  }
  char* json = read(info[1].ToBoolean().Value() ? 1 : 0);
  if (!json) {
    dlclose(lib);
    throw Napi::Error::New(env, "links: reading the link profiler's rows: out of memory");
  }
  Napi::String out = Napi::String::New(env, json);
  release(json);
  dlclose(lib);  // balances this dlopen; NCCL's own reference keeps the library loaded
  return out;
}

Napi::Object ModuleInit(Napi::Env env, Napi::Object exports) {
  exports.Set("linksRead", Napi::Function::New(env, LinksRead));
  exports.Set("probe", Napi::Function::New(env, Probe));
  exports.Set("library", Napi::Function::New(env, Library));
  exports.Set("devices", Napi::Function::New(env, Devices));
  exports.Set("uniqueId", Napi::Function::New(env, UniqueId));
  exports.Set("memoryUsage", Napi::Function::New(env, MemoryUsage));
  exports.Set("initFields", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                return collbench::addon::tableObject(info.Env(), kInitFields);
              }));
  // finalize destroys the backend: NcclBackend's destructor only frees what finalize left.
  collbench::addon::registerModule(env, exports, &gSlot, {Init, Abort, true});
  return exports;
}

}  // namespace

NODE_API_MODULE(collbench_nccl, ModuleInit)
