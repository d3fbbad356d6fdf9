// causal_mask over (..., T, S): in query row i, keys j > i + offset take the fill value (the mask
// value forward, 0 for the gradient); the rest are copied.
#include <algorithm>

#include "backend/cpu/kernel_util.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_causal_mask(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  const int64_t t = s[-2], cols = s[-1], rows = numel(k.in_types[0]) / std::max<int64_t>(1, cols);
  const int64_t offset = k.node.attrs.i("offset");
  const T fill = static_cast<T>(k.node.attrs.f("value"));
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  if (rows * cols == 0) return {};
  return [=] {
    ctx->parallel_for(rows, kElementwiseGrain / (cols + 1) + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t visible = causal_visible_keys(r, t, offset, cols);
        const T* src = x + r * cols;
        T* dst = y + r * cols;
        std::copy(src, src + visible, dst);
        std::fill(dst + visible, dst + cols, fill);
      }
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("causal_mask", make_causal_mask);

}  // namespace tandem::backend::cpu
