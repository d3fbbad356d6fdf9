// One CPU device's execution context: its own thread pool, sized so that the devices on this
// machine share its cores instead of oversubscribing them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace tandem::backend::cpu {

class Context {
 public:
  explicit Context(int threads);
  ~Context();
  int threads() const { return threads_; }
  // Runs fn(begin, end) over [0, n) split into at most threads() contiguous ranges; ranges smaller
  // than `grain` are not split, because waking a thread costs more than a few thousand flops.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Pool;
  int threads_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace tandem::backend::cpu
