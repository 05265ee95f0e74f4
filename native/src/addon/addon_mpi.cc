// Entry point of collbench_mpi.node: the OpenMPI backend behind the shared N-API glue. Adds init
// (MPI_Init_thread + who-am-I) and the MPI side of abort (MPI_Abort, used by the -T watchdog);
// finalize and the common functions are addon_common's.
#include <napi.h>

#include <algorithm>

#include "../backends/mpi/mpi_backend.h"
#include "addon_common.h"

namespace {

collbench::addon::BackendSlot gSlot;

collbench::MpiBackend* mpi() { return static_cast<collbench::MpiBackend*>(gSlot.backend.get()); }

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gSlot.backend) {
    // init({ initTimeoutSec }): MPI_Init under the watchdog (bench/backends/mpi.ts passes -T or the default).
    int initTimeoutSec = 0;
    if (info.Length() > 0 && info[0].IsObject()) {
      const Napi::Value v = info[0].As<Napi::Object>().Get("initTimeoutSec");
      if (v.IsNumber()) initTimeoutSec = std::max(0, std::min(v.As<Napi::Number>().Int32Value(), 1 << 30));
    }
    std::unique_ptr<collbench::MpiBackend> b;
    collbench::addon::throwIfError(env, collbench::MpiBackend::create(&b, initTimeoutSec));
    gSlot.backend = std::move(b);
  }
  collbench::MpiBackend* b = mpi();
  Napi::Object o = collbench::addon::infoObject(
      env, {"mpi", b->rank(), b->nranks(), b->localRank(), b->localSize(), b->libraryVersion(),
            b->libraryVersionShort()});
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
