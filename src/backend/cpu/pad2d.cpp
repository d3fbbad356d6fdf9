// pad2d (zero border around H and W) and crop2d on channels-last tensors: row-wise copies.
#include <algorithm>
#include <cstring>

#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
// Copies the (H, W, C) interior between a small tensor and the big one it sits in at (top, left);
// `pad` = true writes small -> big and zeroes the border, false reads big -> small.
template <class T>
KernelFn make_border(const KernelInit& k, const char* key, bool pad) {
  const std::vector<int64_t> p = k.node.attrs.ints(key);
  const Shape& small = pad ? k.in_types[0].shape : k.out_type().shape;
  const Shape& big = pad ? k.out_type().shape : k.in_types[0].shape;
  const int64_t n = small[0], h = small[1], w = small[2], c = small[3], bh = big[1], bw = big[2];
  const int64_t top = p[0], left = p[2];
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const std::size_t row_bytes = static_cast<std::size_t>(w * c) * sizeof(T);
  return [=] {
    ctx->parallel_for(n, std::max<int64_t>(1, kElementwiseGrain / (bh * bw * c)), [&](int64_t n0, int64_t n1) {
      if (pad) std::fill(y + n0 * bh * bw * c, y + n1 * bh * bw * c, T(0));
      for (int64_t i = n0; i < n1; ++i)
        for (int64_t r = 0; r < h; ++r) {
          const int64_t s = (i * h + r) * w * c, b = ((i * bh + r + top) * bw + left) * c;
          if (pad) std::memcpy(y + b, x + s, row_bytes);
          else std::memcpy(y + s, x + b, row_bytes);
        }
    });
  };
}

template <class T> KernelFn make_pad2d(const KernelInit& k) { return make_border<T>(k, "padding", true); }
template <class T> KernelFn make_crop2d(const KernelInit& k) { return make_border<T>(k, "cropping", false); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("pad2d", make_pad2d);
REGISTER_CPU_FLOAT_KERNEL("crop2d", make_crop2d);

}  // namespace tandem::backend::cpu
