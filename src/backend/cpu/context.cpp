#include "backend/cpu/context.h"

#include "backend/cpu/denormals.h"

#include <algorithm>

namespace tandem::backend::cpu {

namespace {
// Pool threads spin this long for the next job before sleeping: a training step issues kernels
// a few microseconds apart, and a futex wake-up costs more than that.
constexpr auto kIdleSpin = std::chrono::microseconds(200);
// The caller spins this long for the last ranges before it sleeps: on two cores a caller that
// burns its core slows down the very thread it waits for.
constexpr auto kFinishSpin = std::chrono::microseconds(20);
constexpr int kRangesPerThread = 4;
constexpr int64_t kMaxRanges = 0xffff;

uint32_t generation_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
uint32_t ranges_of(uint64_t s) { return static_cast<uint32_t>(s >> 16) & 0xffffu; }
uint32_t next_of(uint64_t s) { return static_cast<uint32_t>(s) & 0xffffu; }
}  // namespace

Context::Context(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) pool_.emplace_back([this] { worker(); });
}

Context::~Context() {
  stop_.store(true, std::memory_order_release);
  job_posted_.notify();
  for (auto& t : pool_) t.join();
}

void Context::run_claimed(uint32_t generation) {
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if (generation_of(s) != generation || next_of(s) >= ranges_of(s)) return;
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
    // Range next_of(s) of this generation is ours; the caller waits for it, so the job is still this one's.
    const int64_t b = int64_t{next_of(s)} * chunk_, e = std::min(n_, b + chunk_);
    (*job_)(b, e);
    done_.fetch_add(1, std::memory_order_acq_rel);
    range_done_.notify();
  }
}

void Context::worker() {
  const FlushDenormals flush;  // for the life of the pool thread
  uint32_t seen = 0;
  for (;;) {
    job_posted_.wait([&] { return generation_of(state_.load(std::memory_order_acquire)) != seen || stop_.load(std::memory_order_acquire); },
                     kIdleSpin, core::kNoDeadline);
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_of(state_.load(std::memory_order_acquire));
    run_claimed(seen);
  }
}

void Context::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  const int64_t wanted = std::min({int64_t{threads_} * kRangesPerThread, kMaxRanges, std::max<int64_t>(1, n / std::max<int64_t>(1, grain))});
  if (wanted <= 1 || pool_.empty()) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  n_ = n;
  chunk_ = (n + wanted - 1) / wanted;
  const auto ranges = static_cast<uint64_t>((n + chunk_ - 1) / chunk_);
  const uint64_t target = done_.load(std::memory_order_relaxed) + ranges;
  const uint32_t generation = generation_of(state_.load(std::memory_order_relaxed)) + 1;
  state_.store(uint64_t{generation} << 32 | ranges << 16, std::memory_order_release);
  job_posted_.notify();
  run_claimed(generation);
  range_done_.wait([&] { return done_.load(std::memory_order_acquire) == target; }, kFinishSpin, core::kNoDeadline);
}

}  // namespace tandem::backend::cpu
