// clip_by_value and scale_by_norm over contiguous buffers; the clip and the factor are in
// backend/elementwise_math.h, shared with the CUDA kernels.
#include "backend/cpu/kernel_util.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_clip_by_value(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const T limit = static_cast<T>(k.node.attrs.f("limit"));
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = clip_to_limit(x[i], limit);
    });
  };
}

template <class T>
KernelFn make_scale_by_norm(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const T* sum_of_squares = in<T>(k, 1);
  T* y = out<T>(k);
  const T limit = static_cast<T>(k.node.attrs.f("limit"));
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] {
    const T factor = norm_clip_factor(*sum_of_squares, limit);
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) y[i] = x[i] * factor; });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("clip_by_value", make_clip_by_value);
REGISTER_CPU_FLOAT_KERNEL("scale_by_norm", make_scale_by_norm);

}  // namespace tandem::backend::cpu
