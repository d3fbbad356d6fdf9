// depthwise_conv2d and its two gradient ops on channels-last tensors, by direct loops: each output
// element reads only kh·kw inputs, so there is no GEMM to hand the work to. Every output element is
// summed by one thread in a fixed order (the forward and the input gradient split images or rows
// over threads, the filter gradient splits channels), so the results do not depend on the thread
// count.
#include <algorithm>

#include "backend/cpu/kernel_util.h"
#include "ops/conv.h"

namespace tandem::backend::cpu {

namespace {
struct Depthwise {
  ops::Window2D w;
  int64_t m;  // depth multiplier; the output has w.c · m channels
  int64_t in_size() const { return w.h * w.w * w.c; }
  int64_t out_size() const { return w.oh * w.ow * w.c * m; }
  // The input row and column under kernel tap (ky, kx) of output (oy, ox); outside the image: -1.
  int64_t iy(int64_t oy, int64_t ky) const {
    const int64_t v = oy * w.sh - w.pad_top + ky * w.dh;
    return v >= 0 && v < w.h ? v : -1;
  }
  int64_t ix(int64_t ox, int64_t kx) const {
    const int64_t v = ox * w.sw - w.pad_left + kx * w.dw;
    return v >= 0 && v < w.w ? v : -1;
  }
  // Calls f(ky, kx, iy, ix) for every kernel tap of output (oy, ox) that falls inside the image, in
  // one fixed order (ky, then kx): the walk all three kernels share.
  template <class F>
  void for_each_tap(int64_t oy, int64_t ox, F&& f) const {
    for (int64_t ky = 0; ky < w.kh; ++ky) {
      const int64_t y = iy(oy, ky);
      if (y < 0) continue;
      for (int64_t kx = 0; kx < w.kw; ++kx)
        if (const int64_t x = ix(ox, kx); x >= 0) f(ky, kx, y, x);
    }
  }
};

Depthwise geometry(const KernelInit& k, const Shape& x, const Shape& kernel) {
  return {ops::window2d(x, kernel[0], kernel[1], k.node.attrs, k.node.op.c_str()), kernel[3]};
}

// Inputs (x, kernel): y[n, oy, ox, c·M + m] = Σ_{ky, kx} x[n, iy, ix, c] · kernel[ky, kx, c, m].
template <class T>
KernelFn make_depthwise_conv2d(const KernelInit& k) {
  const Depthwise d = geometry(k, k.in_types[0].shape, k.in_types[1].shape);
  const T* x = in<T>(k, 0);
  const T* kernel = in<T>(k, 1);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const int64_t cm = d.w.c * d.m, rows = d.w.n * d.w.oh;
  return [=] {
    ctx->parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / d.w.oh, oy = r % d.w.oh;
        for (int64_t ox = 0; ox < d.w.ow; ++ox) {
          T* out = y + (r * d.w.ow + ox) * cm;
          std::fill(out, out + cm, T(0));
          d.for_each_tap(oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix) {
            const T* xp = x + n * d.in_size() + (iy * d.w.w + ix) * d.w.c;
            const T* kp = kernel + (ky * d.w.kw + kx) * cm;
            for (int64_t c = 0; c < d.w.c; ++c)
              for (int64_t m = 0; m < d.m; ++m) out[c * d.m + m] += xp[c] * kp[c * d.m + m];
          });
        }
      }
    });
  };
}

// Inputs (dy, kernel), attr "input_shape": each image's dx gathers its outputs' gradients, images
// split over threads.
template <class T>
KernelFn make_depthwise_conv2d_backprop_input(const KernelInit& k) {
  const Depthwise d = geometry(k, Shape(k.node.attrs.ints("input_shape")), k.in_types[1].shape);
  const T* dy = in<T>(k, 0);
  const T* kernel = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  const int64_t cm = d.w.c * d.m;
  return [=] {
    ctx->parallel_for(d.w.n, 1, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        T* img = dx + n * d.in_size();
        std::fill(img, img + d.in_size(), T(0));
        for (int64_t oy = 0; oy < d.w.oh; ++oy)
          for (int64_t ox = 0; ox < d.w.ow; ++ox) {
            const T* g = dy + n * d.out_size() + (oy * d.w.ow + ox) * cm;
            d.for_each_tap(oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix) {
              T* xp = img + (iy * d.w.w + ix) * d.w.c;
              const T* kp = kernel + (ky * d.w.kw + kx) * cm;
              for (int64_t c = 0; c < d.w.c; ++c) {
                T acc = T(0);
                for (int64_t m = 0; m < d.m; ++m) acc += g[c * d.m + m] * kp[c * d.m + m];
                xp[c] += acc;
              }
            });
          }
      }
    });
  };
}

// Inputs (x, dy), attr "kernel_shape": dkernel[ky, kx, c, m] = Σ_{n, oy, ox} x[n, iy, ix, c] ·
// dy[n, oy, ox, c·M + m], channels split over threads.
template <class T>
KernelFn make_depthwise_conv2d_backprop_filter(const KernelInit& k) {
  const Shape ks(k.node.attrs.ints("kernel_shape"));
  const Depthwise d = geometry(k, k.in_types[0].shape, ks);
  const T* x = in<T>(k, 0);
  const T* dy = in<T>(k, 1);
  T* dk = out<T>(k);
  Context* ctx = &context(k);
  const int64_t cm = d.w.c * d.m;
  return [=] {
    ctx->parallel_for(d.w.c, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t t = 0; t < d.w.kh * d.w.kw; ++t) std::fill(dk + t * cm + c * d.m, dk + t * cm + (c + 1) * d.m, T(0));
        for (int64_t n = 0; n < d.w.n; ++n)
          for (int64_t oy = 0; oy < d.w.oh; ++oy)
            for (int64_t ox = 0; ox < d.w.ow; ++ox) {
              const T* g = dy + n * d.out_size() + (oy * d.w.ow + ox) * cm + c * d.m;
              d.for_each_tap(oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix) {
                const T xv = x[n * d.in_size() + (iy * d.w.w + ix) * d.w.c + c];
                T* kp = dk + (ky * d.w.kw + kx) * cm + c * d.m;
                for (int64_t m = 0; m < d.m; ++m) kp[m] += xv * g[m];
              });
            }
      }
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("depthwise_conv2d", make_depthwise_conv2d);
REGISTER_CPU_FLOAT_KERNEL("depthwise_conv2d_backprop_input", make_depthwise_conv2d_backprop_input);
REGISTER_CPU_FLOAT_KERNEL("depthwise_conv2d_backprop_filter", make_depthwise_conv2d_backprop_filter);

}  // namespace tandem::backend::cpu
