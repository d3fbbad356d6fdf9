// One CPU device's execution context: its own threads, sized so that the devices on this machine
// share its cores instead of oversubscribing them.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/handoff.h"

namespace tandem::backend::cpu {

// A non-owning reference to a callable: parallel_for must not allocate, and std::function may.
class RangeFn {
 public:
  template <class F>
  RangeFn(const F& f) : obj_(&f), call_([](const void* o, int64_t b, int64_t e) { (*static_cast<const F*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  const void* obj_;
  void (*call_)(const void*, int64_t, int64_t);
};

class Context {
 public:
  explicit Context(int threads);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  int threads() const { return threads_; }
  // Runs fn(begin, end) over [0, n) cut into ranges of at least `grain` (waking a thread costs
  // more than a few thousand flops), a few per thread. The caller and the pool threads claim
  // ranges as they come, so a pool thread that the OS has descheduled delays nothing: the caller
  // takes its share. The cut depends only on n, grain and threads(). Returns when every range has
  // run, each exactly once. Not reentrant: one device worker calls it at a time. The wait has no
  // deadline of its own: the runtime's watchdog bounds the whole kernel.
  void parallel_for(int64_t n, int64_t grain, RangeFn fn);

 private:
  void worker();
  void run_claimed(uint32_t generation);

  int threads_;
  // The current job. `state_` packs generation (32 bits) | ranges (16) | next range to claim (16).
  // A claim is a compare-exchange on the whole word, so the claimant reads the range count of the
  // generation it claims in; job_, n_ and chunk_ are written before that generation is published
  // and rewritten only after all its ranges are done, so a claimant reads its own job's.
  std::atomic<uint64_t> state_{0};
  const RangeFn* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  std::atomic<uint64_t> done_{0};  // ranges finished, over all jobs
  std::atomic<bool> stop_{false};
  core::Handoff job_posted_, range_done_;
  std::vector<std::thread> pool_;  // threads_ − 1 helpers; the calling device worker is the other
};

}  // namespace tandem::backend::cpu
