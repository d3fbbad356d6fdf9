// Dynamic loss scaling on the CPU: unscale_gradient (the division and the inf/NaN flag in one pass)
// and loss_scale_update (the shared math of backend/optimizer_math.h).
#include <Eigen/Core>

#include <atomic>
#include <cmath>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/low_precision.h"
#include "backend/optimizer_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_unscale_gradient(const KernelInit& k) {
  const T* g = in<T>(k, 0);
  const float* scale = in<float>(k, 1);
  T* y = out<T>(k, 0);
  float* nonfinite = out<float>(k, 1);
  Context* ctx = &context(k);
  const int64_t n = numel(k.in_types[0]);
  return [=] {
    using C = compute_t<T>;
    const C s = static_cast<C>(*scale);
    std::atomic<bool> found{false};  // which chunk finds one does not matter: the flag is the same
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      bool bad = false;
      for (int64_t i = b; i < e; ++i) {
        const C v = static_cast<C>(g[i]);
        bad |= !std::isfinite(v);
        y[i] = static_cast<T>(v / s);
      }
      if (bad) found.store(true, std::memory_order_relaxed);
    });
    *nonfinite = found.load(std::memory_order_relaxed) ? 1.0f : 0.0f;
  };
}

KernelFn make_loss_scale_update(const KernelInit& k) {
  float* scale = static_cast<float*>(k.in[0]);
  int64_t* step_counter = static_cast<int64_t*>(k.in[1]);
  const float* nonfinite = in<float>(k, 2);
  const int64_t growth = k.node.attrs.i("dynamic_growth_steps");
  return [=] { optimizer_math::loss_scale_step(*step_counter, *scale, *nonfinite == 0.0f, growth); };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("unscale_gradient", make_unscale_gradient);
REGISTER_CPU_16BIT_KERNEL("unscale_gradient", make_unscale_gradient);
REGISTER_KERNEL("loss_scale_update", DeviceKind::Cpu, DType::F32, make_loss_scale_update);

}  // namespace tandem::backend::cpu
