// One CPU device's execution context: its own threads, sized so that the devices on this machine
// share its cores instead of oversubscribing them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

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
  // takes its share. The cut depends only on n, grain and threads(). Not reentrant: one device
  // worker calls it at a time.
  void parallel_for(int64_t n, int64_t grain, RangeFn fn);

 private:
  void worker(int index);

  int threads_;
  std::vector<std::thread> pool_;  // threads_ − 1 helpers; the calling device worker is the other
  void run_claimed(uint32_t generation);

  // The current job. `state_` packs (generation << 32 | next range to claim); a range is claimed
  // by advancing `next` with a compare-exchange that also checks the generation.
  const RangeFn* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  uint32_t parts_ = 0;
  std::atomic<uint64_t> state_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace tandem::backend::cpu
