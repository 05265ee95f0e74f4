// Implementation of the shared N-API glue (see addon_common.h).
#include "addon_common.h"

#include <unistd.h>

#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/timed_loop.h"
#include "executor.h"
#include "loop_cpu.h"
#include "spec_fields.h"

namespace collbench::addon {
namespace {

Napi::Array numbers(Napi::Env env, const std::vector<double>& v, size_t from = 0, size_t n = SIZE_MAX) {
  if (n == SIZE_MAX) n = v.size() - from;
  Napi::Array a = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; ++i) a.Set(static_cast<uint32_t>(i), Napi::Number::New(env, v[from + i]));
  return a;
}

// A process-major table (rows of `width` numbers) as an array of arrays.
Napi::Array rowsOf(Napi::Env env, const std::vector<double>& v, size_t width) {
  const size_t rows = width == 0 ? 0 : v.size() / width;
  Napi::Array out = Napi::Array::New(env, rows);
  for (size_t k = 0; k < rows; ++k) out.Set(static_cast<uint32_t>(k), numbers(env, v, k * width, width));
  return out;
}

Napi::Object firstWrongObject(Napi::Env env, const FirstWrong& w) {
  Napi::Object f = Napi::Object::New(env);
  f.Set("rank", w.rank);
  f.Set("index", static_cast<double>(w.index));
  f.Set("expected", w.expected);
  f.Set("got", w.got);
  return f;
}

Napi::Object resultObject(Napi::Env env, const HalfResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("timeUs", r.timeUs);
  o.Set("cpuTimeUs", r.cpuTimeUs);
  o.Set("checked", r.checked);
  o.Set("wrong", r.wrong);
  o.Set("ranksWithWrong", r.ranksWithWrong);
  if (r.wrong > 0 && r.firstWrong.rank >= 0) o.Set("firstWrong", firstWrongObject(env, r.firstWrong));
  if (!r.iterUs.empty()) {
    o.Set("iterUs", numbers(env, r.iterUs));
    // One row per process (= per rank for backends that drive one rank per process).
    o.Set("perRankIterUs", rowsOf(env, r.perRankIterUs, r.iterUs.size()));
  }
  if (r.arrivalIters > 0) o.Set("arrivalUs", rowsOf(env, r.arrivalUs, static_cast<size_t>(r.arrivalIters)));
  if (!r.deviceRefUs.empty()) {  // device arrivals (core/device_arrivals.h)
    o.Set("deviceRefUs", rowsOf(env, r.deviceRefUs, 2));
    o.Set("enqueueUs", rowsOf(env, r.enqueueUs, static_cast<size_t>(r.arrivalIters)));
  }
  return o;
}

// This module's one backend thread (executor.h): every asynchronous call below runs on it, in submission order.
// Never destroyed: a process that exits while a task waits on a dead peer must not run its destructor.
Executor& executor() {
  static Executor* e = new Executor;
  return *e;
}

// The synchronous calls that use the backend on the JS thread: refused while the executor may be using it (MPI is
// initialised THREAD_SERIALIZED, and a collective must not slip in between queued ones).
void refuseWhileBusy(Napi::Env env, const char* call) {
  if (executor().busy())
    throwIfError(env,
                 Status::Error("core", "CORE_BUSY",
                               std::string(call) + " while asynchronous calls of this module are queued or running",
                               CB_SITE(call)));
}

// Runs `task` on the executor thread and settles a Promise with what `settle` makes of it, so the JS -T watchdog can
// still fire while a peer never arrives. `settle` runs on the JS thread, possibly after finalize(): it must not
// touch the backend.
Napi::Promise queueTask(Napi::Env env, std::function<Status()> task, std::function<Napi::Value(Napi::Env)> settle) {
  return executor().submit(env, std::move(task), std::move(settle));
}

// The timed loop (warmupIters < 0) or a warm-up of one spec per local rank, on the executor thread.
Napi::Promise queueHalf(Napi::Env env, Backend* backend, std::vector<HalfSpec> specs, int warmupIters) {
  auto owned = std::make_shared<std::vector<HalfSpec>>(std::move(specs));
  auto result = std::make_shared<HalfResult>();
  return queueTask(
      env,
      [backend, owned, result, warmupIters] {
        std::vector<const HalfSpec*> specs;
        for (const HalfSpec& s : *owned) specs.push_back(&s);
        return warmupIters >= 0 ? warmupLocal(*backend, specs, warmupIters) : benchLocal(*backend, specs, result.get());
      },
      [result, warmupIters](Napi::Env e) -> Napi::Value {
        if (warmupIters >= 0) return e.Undefined();
        return resultObject(e, *result);
      });
}

template <size_t N>
Napi::Object enumObject(Napi::Env env, const EnumName (&table)[N]) {
  Napi::Object o = Napi::Object::New(env);
  for (const EnumName& e : table) o.Set(e.name, e.value);
  return o;
}

// Marks Externals that hold a lent Backend* (random 128-bit value, the same in every module).
constexpr napi_type_tag kControlPlaneTag = {0x636f6c6c62656e63ull, 0x6374726c706c616eull};

}  // namespace

Backend* borrowControlPlane(const Napi::Value& value) {
  if (!value.IsExternal()) return nullptr;
  Napi::External<Backend> ext = value.As<Napi::External<Backend>>();
  if (!ext.CheckTypeTag(&kControlPlaneTag)) return nullptr;
  return ext.Data();
}

Backend& requireBackend(Napi::Env env, BackendSlot* slot) {
  if (!slot->backend)
    throw toJsError(
        env, Status::Error("core", "CORE_NOT_INITIALIZED", "init() has not been called", CB_SITE("requireBackend")));
  return *slot->backend;
}

void throwIfError(Napi::Env env, const Status& status) {
  if (!status.ok) throw toJsError(env, status);
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

Napi::Object infoObject(Napi::Env env, const InfoBase& base) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", base.backend);
  o.Set("rank", base.rank);
  o.Set("nranks", base.nranks);
  o.Set("localRank", base.localRank);
  o.Set("localSize", base.localSize);
  o.Set("libraryVersion", base.libraryVersion);
  o.Set("libraryVersionShort", base.libraryVersionShort);
  o.Set("processorName", hostName());
  o.Set("pid", static_cast<double>(getpid()));
  return o;
}

void registerModule(Napi::Env env, Napi::Object exports, BackendSlot* slot, const ModuleLifecycle& lifecycle) {
  exports.Set("init", Napi::Function::New(env, lifecycle.init));
  const bool destroy = lifecycle.destroyOnFinalize;
  exports.Set("finalize", Napi::Function::New(env, [slot, destroy](const Napi::CallbackInfo& info) {
                if (slot->backend) {
                  executor().drain(info.Env());  // nothing of the backend may run while it is finalized
                  const Status s = slot->backend->finalize();
                  if (destroy) slot->backend.reset();
                  throwIfError(info.Env(), s);
                }
                return info.Env().Undefined();
              }));
  auto* abort = lifecycle.abort;
  exports.Set("abort", Napi::Function::New(env, [slot, abort](const Napi::CallbackInfo& info) {
                executor().cancelQueued(info.Env(),
                                        "the job was aborted");  // the task in progress is the one that hung
                abort(slot->backend.get(), info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1);
                return info.Env().Undefined();
              }));
  registerCommon(env, exports, slot);
}

Napi::Error toJsError(Napi::Env env, const Status& status) {
  Napi::Error err = Napi::Error::New(env, status.message().empty() ? status.code() : status.message());
  err.Set("code", status.code());
  err.Set("backend", status.backend());
  err.Set("site", status.site());
  return err;
}

void registerCommon(Napi::Env env, Napi::Object exports, BackendSlot* slot) {
  exports.Set("allocate", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend& b = requireBackend(info.Env(), slot);
                refuseWhileBusy(info.Env(), "allocate()");
                const double send = info[0].As<Napi::Number>().DoubleValue();
                const double recv = info[1].As<Napi::Number>().DoubleValue();
                throwIfError(info.Env(), b.allocate(static_cast<uint64_t>(send), static_cast<uint64_t>(recv)));
                return info.Env().Undefined();
              }));
  exports.Set("warmup", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                std::vector<HalfSpec> specs = readSpecs(info[0], "warmup");
                if (!info[1].IsNumber())
                  throw Napi::TypeError::New(info.Env(), "warmup: expected the iteration count as a number");
                Backend& b = requireBackend(info.Env(), slot);
                return queueHalf(info.Env(), &b, std::move(specs), info[1].As<Napi::Number>().Int32Value());
              }));
  exports.Set("runHalf", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                std::vector<HalfSpec> specs = readSpecs(info[0], "runHalf");
                Backend& b = requireBackend(info.Env(), slot);
                return queueHalf(info.Env(), &b, std::move(specs), -1);
              }));
  // runSequence(ops, {iters, warmupIters, gapUs, check}): ops[k] is one spec or one per local rank (timed_loop.h
  // benchSequence); resolves {stepUs (rank 0), gapUs, wrong, ranksWithWrong, firstWrongOp, firstWrong?}.
  exports.Set("runSequence", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                if (!info[0].IsArray()) throw Napi::TypeError::New(info.Env(), "runSequence: expected an array of ops");
                Napi::Array list = info[0].As<Napi::Array>();
                auto specs = std::make_shared<std::vector<std::vector<HalfSpec>>>();
                for (uint32_t k = 0; k < list.Length(); ++k)
                  specs->push_back(readSpecs(list.Get(k), ("runSequence op " + std::to_string(k)).c_str()));
                const SequenceSpec seq = readSequenceOptions(info[1], "runSequence options");
                Backend* b = &requireBackend(info.Env(), slot);
                auto result = std::make_shared<SequenceResult>();
                return queueTask(
                    info.Env(),
                    [b, specs, seq, result] {
                      std::vector<std::vector<const HalfSpec*>> ops;
                      for (const auto& local : *specs) {
                        ops.emplace_back();
                        for (const HalfSpec& s : local) ops.back().push_back(&s);
                      }
                      return benchSequence(*b, ops, seq, result.get());
                    },
                    [result](Napi::Env e) -> Napi::Value {
                      Napi::Object r = Napi::Object::New(e);
                      r.Set("stepUs", numbers(e, result->stepUs));
                      r.Set("gapUs", result->gapUs);
                      r.Set("wrong", result->wrong);
                      r.Set("ranksWithWrong", result->ranksWithWrong);
                      r.Set("firstWrongOp", result->firstWrongOp);
                      if (result->firstWrongOp >= 0) r.Set("firstWrong", firstWrongObject(e, result->firstWrong));
                      return r;
                    });
              }));
  // createGroups(groups: number[][]): process groups smaller than the world (Backend::createGroups), off the JS thread
  // (a rendezvous); every rank calls it with the same list. Resolves undefined.
  exports.Set(
      "createGroups", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
        if (!info[0].IsArray()) throw Napi::TypeError::New(info.Env(), "createGroups: expected an array of rank lists");
        Napi::Array list = info[0].As<Napi::Array>();
        auto groups = std::make_shared<std::vector<std::vector<int>>>();
        for (uint32_t k = 0; k < list.Length(); ++k) {
          const Napi::Value g = list.Get(k);
          if (!g.IsArray())
            throw Napi::TypeError::New(info.Env(), "createGroups: group " + std::to_string(k) + " is not an array");
          Napi::Array ranks = g.As<Napi::Array>();
          groups->emplace_back();
          for (uint32_t i = 0; i < ranks.Length(); ++i) {
            const Napi::Value r = ranks.Get(i);
            if (!r.IsNumber())
              throw Napi::TypeError::New(info.Env(), "createGroups: group " + std::to_string(k) + " rank " +
                                                         std::to_string(i) + " is not a number");
            groups->back().push_back(r.As<Napi::Number>().Int32Value());
          }
        }
        Backend* b = &requireBackend(info.Env(), slot);
        return queueTask(
            info.Env(), [b, groups] { return b->createGroups(*groups); }, [](Napi::Env e) { return e.Undefined(); });
      }));
  exports.Set("barrier", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                refuseWhileBusy(info.Env(), "barrier()");
                throwIfError(info.Env(), requireBackend(info.Env(), slot).barrier());
                return info.Env().Undefined();
              }));
  exports.Set("allreduce", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend& b = requireBackend(info.Env(), slot);
                refuseWhileBusy(info.Env(), "allreduce()");
                Napi::Array in = info[0].As<Napi::Array>();
                std::vector<double> v(in.Length());
                for (uint32_t i = 0; i < in.Length(); ++i) v[i] = in.Get(i).As<Napi::Number>().DoubleValue();
                const auto how = static_cast<Combine>(info[1].As<Napi::Number>().Int32Value());
                throwIfError(info.Env(), b.allreduce(v.data(), static_cast<int>(v.size()), how));
                return numbers(info.Env(), v);
              }));
  exports.Set("controlPlane", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend& b = requireBackend(info.Env(), slot);
                Napi::External<Backend> ext = Napi::External<Backend>::New(info.Env(), &b);
                ext.TypeTag(&kControlPlaneTag);
                return ext;
              }));
  exports.Set("gatherStrings", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend& b = requireBackend(info.Env(), slot);
                refuseWhileBusy(info.Env(), "gatherStrings()");
                std::vector<std::string> all;
                throwIfError(info.Env(), b.gatherStrings(info[0].As<Napi::String>().Utf8Value(), &all));
                if (b.rank() != 0) return info.Env().Null();
                Napi::Array a = Napi::Array::New(info.Env(), all.size());
                for (size_t i = 0; i < all.size(); ++i) a.Set(static_cast<uint32_t>(i), all[i]);
                return static_cast<Napi::Value>(a);
              }));
  // The same waits off the JS thread (Promises), for the run loop under its -T watchdog.
  exports.Set("barrierAsync", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend* b = &requireBackend(info.Env(), slot);
                return queueTask(
                    info.Env(), [b] { return b->barrier(); }, [](Napi::Env e) { return e.Undefined(); });
              }));
  exports.Set("allreduceAsync", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend* b = &requireBackend(info.Env(), slot);
                Napi::Array in = info[0].As<Napi::Array>();
                auto v = std::make_shared<std::vector<double>>(in.Length());
                for (uint32_t i = 0; i < in.Length(); ++i) (*v)[i] = in.Get(i).As<Napi::Number>().DoubleValue();
                const auto how = static_cast<Combine>(info[1].As<Napi::Number>().Int32Value());
                return queueTask(
                    info.Env(), [b, v, how] { return b->allreduce(v->data(), static_cast<int>(v->size()), how); },
                    [v](Napi::Env e) { return static_cast<Napi::Value>(numbers(e, *v)); });
              }));
  exports.Set("gatherStringsAsync", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend* b = &requireBackend(info.Env(), slot);
                auto mine = std::make_shared<std::string>(info[0].As<Napi::String>().Utf8Value());
                auto all = std::make_shared<std::vector<std::string>>();
                const bool root = b->rank() == 0;
                return queueTask(
                    info.Env(), [b, mine, all] { return b->gatherStrings(*mine, all.get()); },
                    [root, all](Napi::Env e) -> Napi::Value {
                      if (!root) return e.Null();
                      Napi::Array a = Napi::Array::New(e, all->size());
                      for (size_t i = 0; i < all->size(); ++i) a.Set(static_cast<uint32_t>(i), (*all)[i]);
                      return a;
                    });
              }));
  // Rejects (CORE_CANCELLED) every asynchronous call not yet started, e.g. row-halves queued ahead of a run that
  // stopped early; the call in progress runs to its end. Returns how many were cancelled.
  exports.Set("cancelPending", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                const size_t n = executor().cancelQueued(info.Env(), "cancelled by cancelPending()");
                return Napi::Number::New(info.Env(), static_cast<double>(n));
              }));
  // Queued calls wait until resumeQueue() (the one running goes on): JavaScript queues a batch, then lets it run
  // once it has nothing left to do itself (Executor::resumeWhenIdle).
  exports.Set("pauseQueue", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                executor().pause();
                return info.Env().Undefined();
              }));
  exports.Set("resumeQueue", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                executor().resumeWhenIdle(info.Env());
                return info.Env().Undefined();
              }));
  // The longest a finished call's result is held back while later calls run (executor.h; the watchdog sets it).
  exports.Set("setResultHoldMs", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                const double ms =
                    info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
                if (!(ms >= 1 && ms <= 60000) || ms != static_cast<double>(static_cast<int64_t>(ms)))
                  throw Napi::TypeError::New(info.Env(),
                                             "setResultHoldMs: expected an integer number of milliseconds, 1 to 60000");
                executor().setHoldTime(std::chrono::milliseconds(static_cast<int64_t>(ms)));
                return info.Env().Undefined();
              }));
  // The CPUs this process may run on, and the timed loop's own CPU (bench/engine/loop-cpu.ts decides; loop_cpu.h).
  exports.Set("allowedCpus", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                std::vector<int> cpus;
                throwIfError(info.Env(), allowedCpus(&cpus));
                return static_cast<Napi::Value>(numbers(info.Env(), std::vector<double>(cpus.begin(), cpus.end())));
              }));
  exports.Set("isolateLoopAsync", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                const int cpu = info[0].As<Napi::Number>().Int32Value();
                auto others = std::make_shared<std::vector<int>>();
                return queueTask(
                    info.Env(), [cpu, others] { return isolateCallingThread(cpu, others.get()); },
                    [others](Napi::Env e) {
                      return static_cast<Napi::Value>(numbers(e, std::vector<double>(others->begin(), others->end())));
                    });
              }));
  exports.Set("loopIteration", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                return Napi::Number::New(info.Env(), static_cast<double>(loopIteration()));
              }));
  exports.Set("clockSamplesAsync", Napi::Function::New(env, [slot](const Napi::CallbackInfo& info) {
                Backend* b = &requireBackend(info.Env(), slot);
                const int rounds = info[0].As<Napi::Number>().Int32Value();
                auto all = std::make_shared<std::vector<double>>();
                const bool root = b->rank() == 0;
                return queueTask(
                    info.Env(), [b, rounds, all] { return clockSamples(*b, rounds, all.get()); },
                    [root, rounds, all](Napi::Env e) -> Napi::Value {
                      if (!root) return e.Null();
                      return rowsOf(e, *all, static_cast<size_t>(rounds));
                    });
              }));
  exports.Set("enumIds", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                Napi::Object o = Napi::Object::New(info.Env());
                o.Set("dtype", enumObject(info.Env(), kDTypeNames));
                o.Set("op", enumObject(info.Env(), kRedOpNames));
                o.Set("coll", enumObject(info.Env(), kCollNames));
                o.Set("segmentKind", enumObject(info.Env(), kSegKindNames));
                return o;
              }));
  // The field tables the spec readers use (spec_fields.h); test/native/spec-fields.test.ts compares them with TS.
  exports.Set("specFields",
              Napi::Function::New(env, [](const Napi::CallbackInfo& info) { return specFieldsObject(info.Env()); }));
}

}  // namespace collbench::addon
