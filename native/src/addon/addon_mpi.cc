// Entry point of collbench_mpi.node: the OpenMPI backend behind the shared N-API glue. Adds init
// (MPI_Init_thread + who-am-I), finalize and abort (used by the -T watchdog) to the common functions.
#include <napi.h>
#include <unistd.h>

#include "../backends/mpi/mpi_backend.h"
#include "addon_common.h"

namespace {

collbench::addon::BackendSlot gSlot;

collbench::MpiBackend* mpi() { return static_cast<collbench::MpiBackend*>(gSlot.backend.get()); }

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gSlot.backend) {
    std::unique_ptr<collbench::MpiBackend> b;
    collbench::Status s = collbench::MpiBackend::create(&b);
    if (!s.ok) throw collbench::addon::toJsError(env, s);
    gSlot.backend = std::move(b);
  }
  collbench::MpiBackend* b = mpi();
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", "mpi");
  o.Set("rank", b->rank());
  o.Set("nranks", b->nranks());
  o.Set("localRank", b->localRank());
  o.Set("localSize", b->localSize());
  o.Set("libraryVersion", b->libraryVersion());
  o.Set("libraryVersionShort", b->libraryVersionShort());
  o.Set("processorName", b->processorName());
  o.Set("pid", static_cast<double>(getpid()));
  o.Set("smallIntSumSaturates", b->smallIntSumSaturates());
  return o;
}

Napi::Value Finalize(const Napi::CallbackInfo& info) {
  if (gSlot.backend) {
    collbench::Status s = mpi()->finalize();
    if (!s.ok) throw collbench::addon::toJsError(info.Env(), s);
  }
  return info.Env().Undefined();
}

Napi::Value Abort(const Napi::CallbackInfo& info) {
  const int code = info[0].As<Napi::Number>().Int32Value();
  if (gSlot.backend) mpi()->abort(code);
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

NODE_API_MODULE(collbench_mpi, ModuleInit)
