#include "backend/cpu/context.h"

#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>

namespace tandem::backend::cpu {

// The calling thread (the device's worker) runs one range itself, so a device with n threads owns
// n − 1 pool threads. Eigen's pool spins briefly before sleeping, which keeps the hand-off cheap
// for the many small kernels of a training step.
struct Context::Pool {
  explicit Pool(int n) : pool(n) {}
  Eigen::ThreadPool pool;
};

Context::Context(int threads) : threads_(std::max(1, threads)) {
  if (threads_ > 1) pool_ = std::make_unique<Pool>(threads_ - 1);
}

Context::~Context() = default;

void Context::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>(threads_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1 || !pool_) {
    fn(0, n);
    return;
  }
  const int64_t chunk = (n + parts - 1) / parts;
  Eigen::Barrier barrier(static_cast<unsigned>(parts - 1));
  for (int64_t p = 1; p < parts; ++p) {
    const int64_t b = p * chunk, e = std::min(n, b + chunk);
    pool_->pool.Schedule([&fn, &barrier, b, e] {
      if (b < e) fn(b, e);
      barrier.Notify();
    });
  }
  fn(0, std::min(n, chunk));
  barrier.Wait();
}

}  // namespace tandem::backend::cpu
