// image_affine_transform, its adjoint image_affine_transform_grad, and random_image_params on the
// CPU. The per-pixel math is backend/image_transform.h's, shared with the CUDA kernels.
#include <algorithm>

#include "backend/cpu/kernel_util.h"
#include "backend/image_transform.h"
#include "ops/image.h"

namespace tandem::backend::cpu {

namespace {
struct Geometry {
  int64_t n, h, w, c;
  int interpolation, mode;
};
Geometry geometry(const KernelInit& k, const char* op) {
  const Shape& s = k.in_types[0].shape;
  return {s[0], s[1], s[2], s[3], ops::interpolation_code(k.node.attrs.s("interpolation"), op), ops::fill_mode_code(k.node.attrs.s("fill_mode"), op)};
}

// Each output pixel is a weighted sum of the input pixels it samples (fill_value for the taps
// outside); rows of output pixels are independent, so they split across threads freely.
template <class T>
KernelFn make_transform(const KernelInit& k) {
  const Geometry g = geometry(k, "image_affine_transform");
  const T* x = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* y = out<T>(k);
  const T fill = static_cast<T>(k.node.attrs.f("fill_value"));
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(g.n * g.h, std::max<int64_t>(1, kElementwiseGrain / (g.w * g.c * 4 + 1)), [&](int64_t r0, int64_t r1) {
      int64_t pixel[4];
      T weight[4];
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / g.h, oy = r % g.h;
        const T* image = x + b * g.h * g.w * g.c;
        for (int64_t ox = 0; ox < g.w; ++ox) {
          const int taps = image::sample_taps(t + b * 8, ox, oy, g.h, g.w, g.interpolation, g.mode, pixel, weight);
          T* dst = y + ((b * g.h + oy) * g.w + ox) * g.c;
          for (int64_t ch = 0; ch < g.c; ++ch) {
            T sum = T(0);
            for (int i = 0; i < taps; ++i) sum += weight[i] * (pixel[i] < 0 ? fill : image[pixel[i] * g.c + ch]);
            dst[ch] = sum;
          }
        }
      }
    });
  };
}

// The adjoint: each output pixel's gradient goes back to the pixels it sampled, with the same
// weights. Several output pixels can read one input pixel, so a sample is one thread's work, in
// the order of the output pixels: the sums are the same on any number of threads.
template <class T>
KernelFn make_transform_grad(const KernelInit& k) {
  const Geometry g = geometry(k, "image_affine_transform_grad");
  const T* dy = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(g.n, std::max<int64_t>(1, kElementwiseGrain / (g.h * g.w * g.c * 4 + 1)), [&](int64_t b0, int64_t b1) {
      int64_t pixel[4];
      T weight[4];
      for (int64_t b = b0; b < b1; ++b) {
        T* image = dx + b * g.h * g.w * g.c;
        std::fill(image, image + g.h * g.w * g.c, T(0));
        for (int64_t oy = 0; oy < g.h; ++oy)
          for (int64_t ox = 0; ox < g.w; ++ox) {
            const int taps = image::sample_taps(t + b * 8, ox, oy, g.h, g.w, g.interpolation, g.mode, pixel, weight);
            const T* src = dy + ((b * g.h + oy) * g.w + ox) * g.c;
            for (int i = 0; i < taps; ++i)
              if (pixel[i] >= 0)
                for (int64_t ch = 0; ch < g.c; ++ch) image[pixel[i] * g.c + ch] += weight[i] * src[ch];
          }
      }
    });
  };
}

// A few numbers per row: one thread.
template <class T>
KernelFn make_random_image_params(const KernelInit& k) {
  const auto& a = k.node.attrs;
  const image::ParamSpec p = image::param_spec(a, k.in_types[0].shape);
  // Micro-batch j of a step holds the global rows from j × micro_rows on.
  const int64_t row_offset = a.i("row_offset", 0) + k.micro_batch * a.i("micro_rows", 0);
  const int64_t rows = k.in_types[0].shape[0], count = image::param_count(p.kind);
  const int64_t* step = in<int64_t>(k, 1);
  T* y = out<T>(k);
  return [=] {
    const auto s = static_cast<uint64_t>(*step);
    for (int64_t r = 0; r < rows; ++r) image::draw_params(p, s, static_cast<uint64_t>(row_offset + r), y + r * count);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("image_affine_transform", make_transform);
REGISTER_CPU_FLOAT_KERNEL("image_affine_transform_grad", make_transform_grad);
REGISTER_CPU_FLOAT_KERNEL("random_image_params", make_random_image_params);

}  // namespace tandem::backend::cpu
