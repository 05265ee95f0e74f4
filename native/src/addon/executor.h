// Every asynchronous call of a module runs on ONE thread, in the order JavaScript submitted it (MPI's
// THREAD_SERIALIZED, the same order of collectives on every rank, row-halves queued ahead without an idle gap), and
// results are handed over in batches within a hold time (docs/architecture.md, "Long work off the JS thread").
#pragma once
#include <napi.h>
#include <uv.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "../core/status.h"

namespace collbench::addon {

class Executor {
 public:
  // Runs on the executor thread; its Status settles the promise (failed: rejected with the typed error).
  using Run = std::function<Status()>;
  // Runs on the JS thread after a successful Run: the promise's value.
  using Settle = std::function<Napi::Value(Napi::Env)>;

  // JS thread. Queues `run` behind everything submitted before; the promise settles on the JS thread. A task that
  // fails cancels every task submitted before its failure reached JavaScript (rejected with CORE_CANCELLED, never
  // run): they were queued on the assumption that it would succeed. Tasks submitted afterwards run.
  Napi::Promise submit(Napi::Env env, Run run, Settle settle);
  // JS thread. Rejects every task not yet started (CORE_CANCELLED, `why`); returns how many.
  size_t cancelQueued(Napi::Env env, const char* why);
  // JS thread. cancelQueued, then waits until the task in progress (if any) has returned: afterwards the backend
  // may be finalized. Blocks for as long as that task runs (the run loop waits for it under its watchdog first).
  void drain(Napi::Env env);
  // Any thread: a task is queued or running.
  bool busy();
  // At exit(): start nothing more, and wait (5 s at most) for the task in progress to return.
  void atExit();

  // JS thread. While paused, queued tasks wait (a task already running goes on): JavaScript queues a batch (a sweep's
  // barrier, warm-ups and row-halves), then resumes, so that its own work of queuing them does not share a CPU with
  // the first of them. cancelQueued() and drain() work paused or not; resume() must follow pause() (try/finally).
  void pause();
  void resume();
  // JS thread. resume(), once JavaScript has nothing left to do: from a libuv prepare callback, which runs when the
  // event loop is about to wait for I/O (every callback and microtask of the turn done). Resumed at once, the woken
  // thread took the CPU from the rest of the turn (the scheduler favours the thread it just woke), and that rest ran
  // some milliseconds later, inside the first timed operations (docs/performance.md, "The first timed half").
  void resumeWhenIdle(Napi::Env env);

  // Any thread. The longest a finished task's result is held back from JavaScript while later tasks run (default
  // kDefaultHold).
  void setHoldTime(std::chrono::milliseconds hold);
  static constexpr std::chrono::milliseconds kDefaultHold{1000};

 private:
  struct Job {
    Job(Napi::Env env, Run r, Settle s) : run(std::move(r)), settle(std::move(s)), deferred(env) {}
    Run run;
    Settle settle;
    Napi::Promise::Deferred deferred;
    Status status;
    bool cancelled = false;
  };
  static void callJs(Napi::Env env, Napi::Function, Executor* self, Job* job);
  using Tsfn = Napi::TypedThreadSafeFunction<Executor, Job, &Executor::callJs>;

  void loop();
  void courier();                        // the courier thread: hands held results over once the first has waited hold_
  void finished(Job* job);               // executor thread, mu_ held: hold a finished job, or hand it over
  void postHeld();                       // mu_ held: hand every held job to the JS thread, in order
  void post(Job* job);                   // mu_ held: hand a finished job to the JS thread
  void settle(Napi::Env env, Job* job);  // JS thread: settle and delete
  void start(Napi::Env env);
  static void onIdle(uv_prepare_t* gate);  // the prepare callback of resumeWhenIdle()

  std::mutex mu_;
  std::condition_variable work_;     // a job was queued, resume(), or stop_
  std::condition_variable idle_;     // the running job returned
  std::condition_variable held_cv_;  // a first result was held, or stop_ (the courier waits on it)
  std::deque<Job*> queue_;
  std::vector<Job*> held_;                           // finished, succeeded, not yet handed over (in order)
  std::chrono::steady_clock::time_point heldSince_;  // when held_[0] finished
  std::chrono::milliseconds hold_ = kDefaultHold;    // guarded by mu_
  bool running_ = false;
  bool paused_ = false;  // pause(): queued tasks wait for resume()
  bool stop_ = false;
  bool poisoned_ = false;  // a task failed and JavaScript has not been told yet: cancel, do not run
  bool live_ = false;      // tsfn_ exists and is not finalized (guarded by mu_)
  std::thread thread_;
  std::thread courier_;
  Tsfn tsfn_;
  size_t pending_ = 0;         // JS thread only: submitted, not yet settled; the loop is kept alive while > 0
  uv_prepare_t idleGate_{};    // JS thread only: resumeWhenIdle()'s prepare handle (unreferenced: keeps nothing alive)
  bool idleGateOpen_ = false;  // idleGate_ initialised and not yet closed
};

}  // namespace collbench::addon
