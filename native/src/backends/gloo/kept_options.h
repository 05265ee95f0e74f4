// KeptOptions: keeps each Gloo call's options (and the transport buffers inside them) alive for a few more calls.
// Why: tcp::UnboundBuffer's destructor spins on sched_yield until Gloo's device thread lets go of it, and that thread
// still holds the buffer that completed an op while the op returns; destroyed at once, it cost up to a tick per op.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <utility>

namespace collbench {

// Gloo's device thread handles one event at a time: once a later op has completed it has returned from the read that
// completed an earlier one, so an object kept for two more calls is free when destroyed. Four leaves a margin.
class KeptOptions {
 public:
  static constexpr size_t kDepth = 4;

  // A new T(args...) that lives until kDepth more objects have been made (or clear()); the object made kDepth
  // calls ago is destroyed here, before this call's op starts.
  template <typename T, typename... Args>
  T& make(Args&&... args) {
    auto object = std::make_shared<T>(std::forward<Args>(args)...);
    T& ref = *object;
    keep(std::move(object));
    return ref;
  }

  // Takes over an object made elsewhere (a context's createUnboundBuffer()).
  template <typename T>
  T& adopt(std::unique_ptr<T> owned) {
    T& ref = *owned;
    keep(std::shared_ptr<T>(std::move(owned)));
    return ref;
  }

  // Destroys every kept object (before the contexts they use are closed).
  void clear() {
    for (auto& slot : slots_) slot.reset();
  }

 private:
  void keep(std::shared_ptr<void> object) {
    slots_[next_] = std::move(object);
    next_ = (next_ + 1) % kDepth;
  }

  std::array<std::shared_ptr<void>, kDepth> slots_;
  size_t next_ = 0;
};

}  // namespace collbench
