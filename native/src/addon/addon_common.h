// N-API glue shared by every backend module: JS objects into HalfSpec, the shared timed loop and the control-plane
// waits on the module's one executor thread (executor.h; Promises, in submission order), Status errors into typed JS
// errors ({code, backend, site}). Each module only supplies its Backend.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "../core/backend.h"

namespace collbench::addon {

// The module's single backend instance, created by the module's own init().
struct BackendSlot {
  std::unique_ptr<Backend> backend;
};

// Throws (as a JS exception) a typed error built from a failed Status.
Napi::Error toJsError(Napi::Env env, const Status& status);
// Throws toJsError(status) when `status` failed.
void throwIfError(Napi::Env env, const Status& status);
// The slot's backend, or a thrown CORE_NOT_INITIALIZED error before init().
Backend& requireBackend(Napi::Env env, BackendSlot* slot);

// The fields every module's init() result has (bench/native/binding.ts BackendInfo); a module adds its own.
struct InfoBase {
  const char* backend;
  int rank, nranks, localRank, localSize;
  std::string libraryVersion, libraryVersionShort;
};
// {backend, rank, nranks, localRank, localSize, libraryVersion, libraryVersionShort, processorName, pid}.
Napi::Object infoObject(Napi::Env env, const InfoBase& base);
// This host's name as gethostname() gives it ("" when it fails).
std::string hostName();

// What differs between the modules' life cycles; the rest (finalize, abort, the common functions) is
// registerModule's.
struct ModuleLifecycle {
  // init(config?): creates the backend into the slot and returns its info (mpi, gloo: synchronously;
  // nccl: a Promise, since communicators may wait for peers).
  Napi::Value (*init)(const Napi::CallbackInfo& info);
  // abort(code), the -T watchdog's hook; `backend` is null before init() (mpi: MPI_Abort; gloo: this
  // process exits at once; nccl: the wait in progress aborts the communicators).
  void (*abort)(Backend* backend, int code);
  // After Backend::finalize(), destroy the backend object (nccl: its destructor only releases what
  // finalize left). mpi and gloo keep theirs past finalize, as a module-lifetime object (gloo's is never
  // destroyed, see addon_gloo.cc): no MPI or Gloo teardown runs outside their finalize().
  bool destroyOnFinalize = false;
};

// Adds init, finalize (the slot's Backend::finalize(), errors thrown as typed JS errors), abort and the
// common functions of registerCommon to `exports`.
void registerModule(Napi::Env env, Napi::Object exports, BackendSlot* slot, const ModuleLifecycle& lifecycle);

// Adds allocate, warmup, runHalf, barrier, allreduce, gatherStrings, their …Async forms, cancelPending,
// loopIteration, allowedCpus, isolateLoopAsync, clockSamplesAsync, controlPlane and enumIds to `exports`; they act on
// `slot`. The synchronous ones that use the backend (allocate, barrier, allreduce, gatherStrings) throw CORE_BUSY while
// asynchronous calls are queued or running. enumIds() gives the native enum values by name (the tables of core/types.h
// and core/spec.h). controlPlane() lends the backend's process-level control plane (barrier, allreduce, gather,
// gatherStrings) to another module of the same process as a type-tagged External: under mpirun the nccl module uses
// MPI's this way without linking MPI itself.
void registerCommon(Napi::Env env, Napi::Object exports, BackendSlot* slot);

// The Backend lent by another module's controlPlane(), or nullptr when `value` is not such an External.
// Only its control-plane methods may be called, from one thread at a time, while the lender lives.
Backend* borrowControlPlane(const Napi::Value& value);

}  // namespace collbench::addon
