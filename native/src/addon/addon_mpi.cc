// Entry point of collbench_mpi.node: the OpenMPI backend behind the shared N-API glue. Adds init
// (MPI_Init_thread + who-am-I) and the MPI side of abort (MPI_Abort, used by the -T watchdog);
// finalize and the common functions are addon_common's.
#include <napi.h>

#include <algorithm>

#include "../backends/mpi/mpi_backend.h"
#include "addon_common.h"
#include "field_reader.h"

namespace {

collbench::addon::BackendSlot gSlot;

// bench/backends/mpi.ts's init({ initTimeoutSec }) (addon/field_reader.h: a missing, unknown or mistyped field is
// CORE_BAD_SPEC naming it).
struct InitConfig {
  int timeoutSec = 0;
};
const collbench::addon::Field<InitConfig> kInitFields[] = {
    {"initTimeoutSec", collbench::addon::Kind::Int32, true,
     [](const Napi::Value& v, const collbench::addon::Where& w, InitConfig* c) {
       c->timeoutSec = collbench::addon::asInt32(v, w);
     }},
};

collbench::MpiBackend* mpi() {
  return static_cast<collbench::MpiBackend*>(gSlot.backend.get());
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gSlot.backend) {
    // init({ initTimeoutSec }): MPI_Init under the watchdog (bench/backends/mpi.ts passes -T or the default).
    // Without an argument (the tests' singleton MPI), no watchdog; an argument is read through its field table.
    int initTimeoutSec = 0;
    if (info.Length() > 0 && !info[0].IsUndefined())
      initTimeoutSec =
          std::max(0, std::min(collbench::addon::readObject(info[0], {"init", ""}, kInitFields).timeoutSec, 1 << 30));
    std::unique_ptr<collbench::MpiBackend> b;
    collbench::addon::throwIfError(env, collbench::MpiBackend::create(&b, initTimeoutSec));
    gSlot.backend = std::move(b);
  }
  collbench::MpiBackend* b = mpi();
  Napi::Object o = collbench::addon::infoObject(env, {"mpi", b->rank(), b->nranks(), b->localRank(), b->localSize(),
                                                      b->libraryVersion(), b->libraryVersionShort()});
  o.Set("processorName", b->processorName());  // MPI_Get_processor_name
  o.Set("smallIntSumSaturates", b->smallIntSumSaturates());
  return o;
}

// MPI_Abort ends every rank of the job; before init there is nothing to abort.
void Abort(collbench::Backend* backend, int code) {
  if (backend != nullptr) (void)static_cast<collbench::MpiBackend*>(backend)->abort(code);
}

Napi::Object ModuleInit(Napi::Env env, Napi::Object exports) {
  collbench::addon::registerModule(env, exports, &gSlot, {Init, Abort, false});
  return exports;
}

}  // namespace

NODE_API_MODULE(collbench_mpi, ModuleInit)
