#include "backend/cpu/context.h"

#include <algorithm>
#include <chrono>

namespace tandem::backend::cpu {

namespace {
// Helpers spin this long for the next job before sleeping: a training step issues kernels a few
// microseconds apart, and a futex wake-up costs more than that.
constexpr auto kSpin = std::chrono::microseconds(200);
}

Context::Context(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) pool_.emplace_back([this, i] { worker(i); });
}

Context::~Context() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : pool_) t.join();
}

void Context::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed) &&
           std::chrono::steady_clock::now() < spin_until) {
    }
    if (generation_.load(std::memory_order_acquire) == seen && !stop_) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen || stop_; });
    }
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    if (index < parts_) {
      const int64_t b = index * chunk_, e = std::min(n_, b + chunk_);
      if (b < e) (*job_)(b, e);
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void Context::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>(threads_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  n_ = n;
  chunk_ = (n + parts - 1) / parts;
  parts_ = static_cast<int>(parts);
  pending_.store(static_cast<int>(pool_.size()), std::memory_order_release);
  {
    std::lock_guard lock(mutex_);  // pairs with the sleepers' wait
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  fn(0, std::min(n, chunk_));
  while (pending_.load(std::memory_order_acquire) != 0) {
  }
}

}  // namespace tandem::backend::cpu
