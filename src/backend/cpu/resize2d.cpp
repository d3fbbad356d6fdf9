// resize2d (two taps per axis from ops::resize_axis) and its adjoint resize2d_grad, gathered per
// input pixel from the reverse taps: no scatter, so any thread count gives the same sums.
#include <algorithm>
#include <memory>

#include "backend/cpu/kernel_util.h"
#include "ops/resize.h"

namespace tandem::backend::cpu {

namespace {
// The taps of both axes with weights in T; shared by the closure.
template <class T>
struct Taps {
  ops::ResizeAxis y, x;
  std::vector<T> wy, wx, sy, sx;
  Taps(int64_t in_h, int64_t out_h, int64_t in_w, int64_t out_w, ops::ResizeMethod m)
      : y(ops::resize_axis(in_h, out_h, m)), x(ops::resize_axis(in_w, out_w, m)) {
    wy.assign(y.weight.begin(), y.weight.end()), wx.assign(x.weight.begin(), x.weight.end());
    sy.assign(y.share.begin(), y.share.end()), sx.assign(x.share.begin(), x.share.end());
  }
};

template <class T>
KernelFn make_resize2d(const KernelInit& k) {
  const Shape& xs = k.in_types[0].shape;
  const Shape& ys = k.out_type().shape;
  const int64_t n = xs[0], ih = xs[1], iw = xs[2], c = xs[3], oh = ys[1], ow = ys[2];
  auto t = std::make_shared<const Taps<T>>(ih, oh, iw, ow, static_cast<ops::ResizeMethod>(k.node.attrs.i("method")));
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(n * oh, std::max<int64_t>(1, kElementwiseGrain / (ow * c)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / oh, oy = r % oh;
        const T* row0 = x + (b * ih + t->y.index[2 * oy]) * iw * c;
        const T* row1 = x + (b * ih + t->y.index[2 * oy + 1]) * iw * c;
        const T a0 = t->wy[2 * oy], a1 = t->wy[2 * oy + 1];
        T* dst = y + r * ow * c;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t c0 = t->x.index[2 * ox] * c, c1 = t->x.index[2 * ox + 1] * c;
          const T b0 = t->wx[2 * ox], b1 = t->wx[2 * ox + 1];
          for (int64_t ch = 0; ch < c; ++ch)
            dst[ox * c + ch] = a0 * (b0 * row0[c0 + ch] + b1 * row0[c1 + ch]) + a1 * (b0 * row1[c0 + ch] + b1 * row1[c1 + ch]);
        }
      }
    });
  };
}

template <class T>
KernelFn make_resize2d_grad(const KernelInit& k) {
  const Shape& ds = k.in_types[0].shape;  // dy (n, oh, ow, c)
  const Shape& xs = k.out_type().shape;   // dx (n, ih, iw, c)
  const int64_t n = xs[0], ih = xs[1], iw = xs[2], c = xs[3], oh = ds[1], ow = ds[2];
  auto t = std::make_shared<const Taps<T>>(ih, oh, iw, ow, static_cast<ops::ResizeMethod>(k.node.attrs.i("method")));
  const T* dy = in<T>(k, 0);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(n * ih, std::max<int64_t>(1, kElementwiseGrain / (iw * c)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / ih, iy = r % ih;
        T* dst = dx + r * iw * c;
        std::fill(dst, dst + iw * c, T(0));
        for (int64_t p = t->y.start[iy]; p < t->y.start[iy + 1]; ++p) {
          const T a = t->sy[p];
          const T* src = dy + (b * oh + t->y.source[p]) * ow * c;
          for (int64_t ix = 0; ix < iw; ++ix)
            for (int64_t q = t->x.start[ix]; q < t->x.start[ix + 1]; ++q) {
              const T w = a * t->sx[q];
              const T* s = src + t->x.source[q] * c;
              for (int64_t ch = 0; ch < c; ++ch) dst[ix * c + ch] += w * s[ch];
            }
        }
      }
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("resize2d", make_resize2d);
REGISTER_CPU_FLOAT_KERNEL("resize2d_grad", make_resize2d_grad);

}  // namespace tandem::backend::cpu
