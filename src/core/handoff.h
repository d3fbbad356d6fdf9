// The hand-off under every pool and worker thread in Tandem. A thread publishes what others wait
// for through atomics it owns, then calls notify(); a waiter spins on its condition for a short
// while — hand-offs a few microseconds apart then cost no system call — and then sleeps until it
// is notified or its deadline passes. Every wait has a deadline: callers turn a missed one into an
// error that names what they waited for.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace tandem::core {

using Clock = std::chrono::steady_clock;

// The deadline of a wait that has none (a pool thread waiting for its next job).
inline constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class Handoff {
 public:
  // Wakes every sleeping waiter. Call it after storing what they wait for.
  void notify() {
    // Both sides update `sleepers_` with a read-modify-write, and those are totally ordered: if
    // this one comes first, the waiter's synchronises with it and sees the published state; if
    // the waiter's comes first, this one sees the sleeper and wakes it. No wake-up is lost, and
    // no fence is needed (ThreadSanitizer does not model fences).
    if (sleepers_.fetch_add(0, std::memory_order_acq_rel) == 0) return;
    { const std::lock_guard lock(mutex_); }  // a waiter between its check and its sleep holds this
    wake_.notify_all();
  }

  // Waits until ready() holds: spins for `spin`, then sleeps. Returns false if `deadline` passes
  // first. ready() reads atomics with acquire loads; it may be called many times.
  template <class Ready>
  bool wait(const Ready& ready, Clock::duration spin, Clock::time_point deadline) {
    if (ready()) return true;
    if (spin > Clock::duration::zero()) {
      const Clock::time_point spin_until = std::min(deadline, Clock::now() + spin);
      for (unsigned i = 1;; ++i) {
        cpu_relax();
        if (ready()) return true;
        if (i % 64 == 0 && Clock::now() >= spin_until) break;  // reading the clock is not free
      }
    }
    sleepers_.fetch_add(1, std::memory_order_acq_rel);
    bool ok;
    {
      std::unique_lock lock(mutex_);
      ok = deadline == kNoDeadline ? (wake_.wait(lock, ready), true) : wake_.wait_until(lock, deadline, ready);
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return ok;
  }

 private:
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace tandem::core
