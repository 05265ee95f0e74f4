// The module's one backend thread (see executor.h): a FIFO of tasks, results handed back through a thread-safe
// function so that promises settle on the JS thread, in submission order.
#include "executor.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <utility>
#include <vector>

#include "addon_common.h"

namespace collbench::addon {
namespace {

// The executor whose thread is running (one per module: each .node has its own copy of this file).
Executor* gStarted = nullptr;

// How long exit() waits for the task in progress before the static destructors run anyway.
constexpr auto kExitWait = std::chrono::seconds(5);

Status cancelled(const char* why) {
  return Status::Error("core", "CORE_CANCELLED", std::string("not run: ") + why, CB_SITE("Executor"));
}

}  // namespace

void Executor::start(Napi::Env env) {
  // The finalizer runs when the environment is torn down (a normal end of the process: nothing is pending then, so
  // the thread is idle and joins at once). process.exit() and the watchdog's _exit/MPI_Abort never get here: the
  // thread, possibly inside a wait on a dead peer, then simply ends with the process (it is not libuv's, so Node
  // does not join it on the way out).
  tsfn_ = Tsfn::New(env, "collbench executor", 0, 1, this, [](Napi::Env, void*, Executor* self) {
    std::unique_lock<std::mutex> lk(self->mu_);
    self->live_ = false;
    self->stop_ = true;
    const bool idle = !self->running_;
    lk.unlock();
    self->work_.notify_all();
    self->held_cv_.notify_all();
    if (self->courier_.joinable()) self->courier_.join();  // it only ever waits on mu_ and held_cv_
    if (idle && self->thread_.joinable())
      self->thread_.join();
    else if (self->thread_.joinable())
      self->thread_.detach();
  });
  tsfn_.Unref(env);  // referenced only while a task is pending (as libuv's pool work was)
  {
    std::lock_guard<std::mutex> lk(mu_);
    live_ = true;
  }
  thread_ = std::thread([this] { loop(); });
  courier_ = std::thread([this] { courier(); });
  // process.exit() (a closed stdout, the watchdog's exit after an abort that returns) may come while a task runs:
  // the module's static objects (the backend and its buffers) must outlive that task. Registered after they were
  // constructed, this runs before their destructors.
  gStarted = this;
  std::atexit([] { gStarted->atExit(); });
}

void Executor::atExit() {
  std::unique_lock<std::mutex> lk(mu_);
  stop_ = true;  // start nothing more
  work_.notify_all();
  held_cv_.notify_all();
  idle_.wait_for(lk, kExitWait, [this] { return !running_; });
}

Napi::Promise Executor::submit(Napi::Env env, Run run, Settle settle) {
  if (!thread_.joinable()) start(env);
  auto* job = new Job(env, std::move(run), std::move(settle));
  Napi::Promise promise = job->deferred.Promise();
  if (pending_++ == 0) tsfn_.Ref(env);
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(job);
  }
  work_.notify_one();
  return promise;
}

void Executor::loop() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_.wait(lk, [this] { return stop_ || (!queue_.empty() && !paused_); });
      if (stop_) return;
      job = queue_.front();
      queue_.pop_front();
      if (poisoned_) {  // submitted before JavaScript learnt of a failure
        job->cancelled = true;
        job->status = cancelled("an earlier asynchronous call of this module failed");
        postHeld();
        post(job);
        continue;
      }
      running_ = true;
    }
    Status status;
    try {
      status = job->run();
    } catch (const std::exception& e) {
      status = Status::Error("core", "CORE_EXCEPTION", e.what(), CB_SITE("Executor task"));
    }
    job->status = std::move(status);
    {
      std::lock_guard<std::mutex> lk(mu_);
      running_ = false;
      if (!job->status.ok) poisoned_ = true;  // until the failure has been delivered (settle)
      finished(job);
    }
    idle_.notify_all();
  }
}

void Executor::finished(Job* job) {
  const auto now = std::chrono::steady_clock::now();
  const bool first = held_.empty();
  held_.push_back(job);
  // Held while later tasks wait to run (a sweep's halves queued ahead): JavaScript hears of them all at once.
  if (job->status.ok && !queue_.empty() && !stop_ && (first || now - heldSince_ < hold_)) {
    if (first) {
      heldSince_ = now;
      held_cv_.notify_one();  // the courier: hand them over by heldSince_ + hold_ at the latest
    }
    return;
  }
  postHeld();
}

void Executor::courier() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    held_cv_.wait(lk, [this] { return stop_ || !held_.empty(); });
    if (stop_) return;
    // Handed over by the executor in the meantime (the queue ran dry), or held for too long: a long task runs.
    const auto since = heldSince_;
    held_cv_.wait_until(lk, since + hold_, [this, since] { return stop_ || held_.empty() || heldSince_ != since; });
    if (stop_) return;
    if (!held_.empty() && heldSince_ == since) postHeld();
  }
}

void Executor::pause() {
  std::lock_guard<std::mutex> lk(mu_);
  paused_ = true;
}

void Executor::resume() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = false;
  }
  work_.notify_all();
}

void Executor::resumeWhenIdle(Napi::Env env) {
  if (!idleGateOpen_) {
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr || uv_prepare_init(loop, &idleGate_) != 0) {
      resume();  // no event loop to wait for: as before
      return;
    }
    idleGate_.data = this;
    uv_unref(reinterpret_cast<uv_handle_t*>(&idleGate_));
    idleGateOpen_ = true;
    // At the environment's teardown the handle is closed (libuv requires every handle closed before its loop).
    napi_add_env_cleanup_hook(
        env,
        [](void* arg) {
          auto* self = static_cast<Executor*>(arg);
          if (!self->idleGateOpen_) return;
          self->idleGateOpen_ = false;
          uv_close(reinterpret_cast<uv_handle_t*>(&self->idleGate_), nullptr);
        },
        this);
  }
  if (uv_prepare_start(&idleGate_, &Executor::onIdle) != 0) resume();
}

void Executor::onIdle(uv_prepare_t* gate) {
  uv_prepare_stop(gate);
  static_cast<Executor*>(gate->data)->resume();
}

void Executor::setHoldTime(std::chrono::milliseconds hold) {
  std::lock_guard<std::mutex> lk(mu_);
  hold_ = hold;
}

void Executor::postHeld() {
  for (Job* j : held_) post(j);
  held_.clear();
}

void Executor::post(Job* job) {
  // With the environment gone nobody can take the result any more (the promise's world has ended).
  if (!live_ || tsfn_.NonBlockingCall(job) != napi_ok) delete job;
}

void Executor::callJs(Napi::Env env, Napi::Function, Executor* self, Job* job) {
  if (env == nullptr) {  // the environment is being torn down with this result still on its way
    delete job;
    return;
  }
  self->settle(env, job);
}

void Executor::settle(Napi::Env env, Job* job) {
  Napi::HandleScope scope(env);
  std::vector<Job*> behind;  // a failure's delivery: what JavaScript queued before it knew is cancelled
  if (!job->status.ok && !job->cancelled) {
    std::lock_guard<std::mutex> lk(mu_);
    poisoned_ = false;
    behind.assign(queue_.begin(), queue_.end());
    queue_.clear();
  }
  try {
    if (job->status.ok)
      job->deferred.Resolve(job->settle(env));
    else
      job->deferred.Reject(toJsError(env, job->status).Value());
  } catch (const Napi::Error& e) {
    job->deferred.Reject(e.Value());
  }
  delete job;
  if (--pending_ == 0) tsfn_.Unref(env);
  for (Job* j : behind) {
    j->cancelled = true;
    j->status = cancelled("an earlier asynchronous call of this module failed");
    settle(env, j);
  }
}

size_t Executor::cancelQueued(Napi::Env env, const char* why) {
  std::vector<Job*> taken;
  {
    std::lock_guard<std::mutex> lk(mu_);
    taken.assign(queue_.begin(), queue_.end());
    queue_.clear();
    if (!running_) postHeld();  // nothing left to run after them: hand them over now (else the task in progress does)
  }
  for (Job* j : taken) {
    j->cancelled = true;
    j->status = cancelled(why);
    settle(env, j);
  }
  return taken.size();
}

void Executor::drain(Napi::Env env) {
  cancelQueued(env, "the backend was finalized first");
  std::unique_lock<std::mutex> lk(mu_);
  idle_.wait(lk, [this] { return !running_; });
}

bool Executor::busy() {
  std::lock_guard<std::mutex> lk(mu_);
  return running_ || !queue_.empty();
}

}  // namespace collbench::addon
