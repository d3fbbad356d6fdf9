#include "backend/cpu/context.h"

#include "backend/cpu/denormals.h"

#include <algorithm>
#include <chrono>

namespace tandem::backend::cpu {

namespace {
// Pool threads spin this long for the next job before sleeping: a training step issues kernels
// a few microseconds apart, and a futex wake-up costs more than that.
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr int kRangesPerThread = 4;
}  // namespace

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

void Context::run_claimed(uint32_t generation) {
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if ((s >> 32) != generation || (s & 0xffffffffu) >= parts_) return;
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
    // Claimed in this generation: the caller waits for it, so job_ is still this job's.
    const int64_t b = static_cast<int64_t>(s & 0xffffffffu) * chunk_, e = std::min(n_, b + chunk_);
    if (b < e) (*job_)(b, e);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void Context::worker(int) {
  const FlushDenormals flush;  // for the life of the pool thread
  uint32_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    auto generation = [&] { return static_cast<uint32_t>(state_.load(std::memory_order_acquire) >> 32); };
    for (unsigned spins = 0; generation() == seen && !stop_.load(std::memory_order_relaxed); ++spins)
      if (spins % 256 == 255 && std::chrono::steady_clock::now() >= spin_until) break;  // the clock is not free
    if (generation() == seen && !stop_) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation() != seen || stop_; });
    }
    if (stop_) return;
    seen = generation();
    run_claimed(seen);
  }
}

void Context::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>(int64_t{threads_} * kRangesPerThread, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1 || pool_.empty()) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  n_ = n;
  chunk_ = (n + parts - 1) / parts;
  parts_ = static_cast<uint32_t>((n + chunk_ - 1) / chunk_);
  done_.store(0, std::memory_order_relaxed);
  const auto generation = static_cast<uint32_t>((state_.load(std::memory_order_relaxed) >> 32) + 1);
  {
    std::lock_guard lock(mutex_);  // pairs with the sleepers' wait
    state_.store(uint64_t{generation} << 32, std::memory_order_release);
  }
  wake_.notify_all();
  run_claimed(generation);
  while (done_.load(std::memory_order_acquire) != parts_) {
  }
}

}  // namespace tandem::backend::cpu
