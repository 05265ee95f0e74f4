// N-API glue shared by every backend module (collbench_mpi.node, collbench_gloo.node, …): turns JS
// objects into HalfSpec, runs the shared timed loop on a libuv worker thread (Promise), and turns
// Status errors into typed JS errors ({code, backend, site}). Each module only supplies its Backend.
#pragma once
#include <napi.h>

#include <memory>

#include "../core/backend.h"

namespace collbench::addon {

// The module's single backend instance, created by the module's own init().
struct BackendSlot {
  std::unique_ptr<Backend> backend;
};

// Throws (as a JS exception) a typed error built from a failed Status.
Napi::Error toJsError(Napi::Env env, const Status& status);

// Adds allocate, warmup, runHalf, barrier, allreduce, gatherStrings and controlPlane to `exports`;
// they act on `slot`. controlPlane() lends the backend's process-level control plane (barrier,
// allreduce, gather, gatherStrings) to another module of the same process as a type-tagged External:
// under mpirun the nccl module uses MPI's this way without linking MPI itself.
void registerCommon(Napi::Env env, Napi::Object exports, BackendSlot* slot);

// The Backend lent by another module's controlPlane(), or nullptr when `value` is not such an External.
// Only its control-plane methods may be called, from one thread at a time, while the lender lives.
Backend* borrowControlPlane(const Napi::Value& value);

}  // namespace collbench::addon
