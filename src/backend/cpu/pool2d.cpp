// max_pool2d, avg_pool2d and their gradients on channels-last tensors. Padded positions are never
// part of a window: max ignores them, the average divides by the count of real elements (Keras/TF).
// The max gradient goes to the first maximal element of each window in row-major window order.
// A NaN in a window wins the max, as in PyTorch, and the gradient goes to that window's last NaN
// (PyTorch's `val > max || isnan(val)` scan), so bad inputs show in the output.
//
// In bfloat16 and float16 a maximum is exact; sums (averages, and the gradients of overlapping
// windows) run in float32 and are rounded once, as every 16-bit kernel does.
#include <Eigen/Core>

#include <algorithm>
#include <limits>
#include <vector>

#include "backend/cpu/convert16.h"
#include "backend/cpu/kernel_util.h"
#include "backend/elementwise_math.h"
#include "ops/conv.h"

namespace tandem::backend::cpu {

namespace {
ops::Window2D pool_window(const KernelInit& k, const Shape& x) {
  const std::vector<int64_t> pool = k.node.attrs.ints("pool");
  return ops::window2d(x, pool[0], pool[1], k.node.attrs, k.node.op.c_str());
}

// The window of output (oy, ox) clipped to the image: rows [y0, y1), columns [x0, x1).
struct Span {
  int64_t y0, y1, x0, x1;
  Span(const ops::Window2D& w, int64_t oy, int64_t ox) {
    const int64_t top = oy * w.sh - w.pad_top, left = ox * w.sw - w.pad_left;
    y0 = std::max<int64_t>(top, 0), y1 = std::min(top + w.kh, w.h);
    x0 = std::max<int64_t>(left, 0), x1 = std::min(left + w.kw, w.w);
  }
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

// Grain for loops over images or output rows: about kElementwiseGrain reads per part.
int64_t grain(const ops::Window2D& w, int64_t units_per_image) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, w.oh * w.ow * w.c * w.kh * w.kw / units_per_image));
}

// Values of T as its compute type: the values themselves, or for the 16-bit types `n` of them
// widened into `scratch` (16 at a time), so that the comparisons and sums below vectorise.
template <class T>
const compute_t<T>* in_compute_type(const T* values, int64_t n, compute_t<T>* scratch) {
  if constexpr (is_low_precision_v<T>) {
    convert_n(values, scratch, n);
    return scratch;
  } else {
    return values;
  }
}

template <class T>
KernelFn make_max_pool(const KernelInit& k) {
  using Acc = compute_t<T>;
  const ops::Window2D w = pool_window(k, k.in_types[0].shape);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  // Parallel over output rows (n, oy): each writes only its own outputs.
  return [=] {
    ctx->parallel_for(w.n * w.oh, grain(w, w.oh), [&](int64_t r0, int64_t r1) {
      thread_local std::vector<Acc> scratch;
      scratch.resize(static_cast<std::size_t>(2 * w.c));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / w.oh, oy = r % w.oh;
        const T* img = x + n * w.h * w.w * w.c;
        for (int64_t ox = 0; ox < w.ow; ++ox) {
          T* out_pixel = y + (r * w.ow + ox) * w.c;
          Acc* dst = is_low_precision_v<T> ? scratch.data() : reinterpret_cast<Acc*>(out_pixel);
          std::fill(dst, dst + w.c, -std::numeric_limits<Acc>::infinity());
          const Span s(w, oy, ox);
          for (int64_t iy = s.y0; iy < s.y1; ++iy)
            for (int64_t ix = s.x0; ix < s.x1; ++ix) {
              const Acc* src = in_compute_type(img + (iy * w.w + ix) * w.c, w.c, scratch.data() + w.c);
              // std::max would drop a NaN in src and maxps one already in dst; this keeps both and
              // still vectorises (two compares and a blend).
              for (int64_t c = 0; c < w.c; ++c) dst[c] = (src[c] > dst[c] || src[c] != src[c]) ? src[c] : dst[c];
            }
          if constexpr (is_low_precision_v<T>) convert_n(dst, out_pixel, w.c);  // exact: each is one of the inputs
        }
      }
    });
  };
}

// The gradient of one image in T's compute type: dx itself, or for the 16-bit types a float32
// scratch of this thread's, rounded into dx once the image is done.
template <class T>
class ImageGradient {
 public:
  using Acc = compute_t<T>;
  ImageGradient(T* dx, int64_t size) : dx_(dx), size_(size) {
    if constexpr (is_low_precision_v<T>) {
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<std::size_t>(size));
      acc_ = scratch.data();
    } else {
      acc_ = dx;
    }
    std::fill(acc_, acc_ + size, Acc(0));
  }
  ~ImageGradient() {
    if constexpr (is_low_precision_v<T>) convert_n(acc_, dx_, size_);
  }
  ImageGradient(const ImageGradient&) = delete;
  ImageGradient& operator=(const ImageGradient&) = delete;
  Acc* data() const { return acc_; }

 private:
  T* dx_;
  int64_t size_;
  Acc* acc_;
};

// Inputs (x, dy). Windows of one image may overlap, so the parallel loop is over images.
template <class T>
KernelFn make_max_pool_grad(const KernelInit& k) {
  using Acc = compute_t<T>;
  const ops::Window2D w = pool_window(k, k.in_types[0].shape);
  const T* x = in<T>(k, 0);
  const T* dy = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  const int64_t image = w.h * w.w * w.c;
  // Fused relu_grad (x is a relu's output): a window whose maximum is <= 0 passes no gradient, and
  // no other element receives any, so the mask costs nothing here.
  const bool relu = k.node.attrs.b("relu");
  return [=] {
    ctx->parallel_for(w.n, grain(w, 1), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const T* img = x + n * image;
        const ImageGradient<T> gradient(dx + n * image, image);
        Acc* dimg = gradient.data();
        for (int64_t oy = 0; oy < w.oh; ++oy)
          for (int64_t ox = 0; ox < w.ow; ++ox) {
            const Span s(w, oy, ox);
            const T* g = dy + ((n * w.oh + oy) * w.ow + ox) * w.c;
            // Channels in blocks, contiguous in memory: the comparisons vectorise and do not branch.
            // Strictly greater: on ties the earlier element (row-major in the window) keeps it. A
            // NaN always takes it, matching the forward pass.
            constexpr int64_t kBlock = 64;
            for (int64_t c0 = 0; c0 < w.c; c0 += kBlock) {
              const int64_t cn = std::min(kBlock, w.c - c0);
              Acc best[kBlock], row[kBlock], grad[kBlock];
              int64_t at[kBlock];
              const int64_t first = (s.y0 * w.w + s.x0) * w.c + c0;
              const Acc* v = in_compute_type(img + first, cn, row);
              for (int64_t c = 0; c < cn; ++c) best[c] = v[c], at[c] = first + c;
              for (int64_t iy = s.y0; iy < s.y1; ++iy)
                for (int64_t ix = s.x0; ix < s.x1; ++ix) {
                  const int64_t base = (iy * w.w + ix) * w.c + c0;
                  v = in_compute_type(img + base, cn, row);
                  for (int64_t c = 0; c < cn; ++c) {
                    const bool better = v[c] > best[c] || v[c] != v[c];
                    best[c] = better ? v[c] : best[c];
                    at[c] = better ? base + c : at[c];
                  }
                }
              const Acc* gv = in_compute_type(g + c0, cn, grad);
              for (int64_t c = 0; c < cn; ++c) dimg[at[c]] += relu ? ReluGrad{}(gv[c], best[c]) : gv[c];
            }
          }
      }
    });
  };
}

template <class T>
KernelFn make_avg_pool(const KernelInit& k) {
  using Acc = compute_t<T>;
  const ops::Window2D w = pool_window(k, k.in_types[0].shape);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(w.n * w.oh, grain(w, w.oh), [&](int64_t r0, int64_t r1) {
      thread_local std::vector<Acc> sums;
      sums.resize(static_cast<std::size_t>(w.c));
      Acc* sum = sums.data();
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / w.oh, oy = r % w.oh;
        const T* img = x + n * w.h * w.w * w.c;
        for (int64_t ox = 0; ox < w.ow; ++ox) {
          std::fill(sum, sum + w.c, Acc(0));
          const Span s(w, oy, ox);
          for (int64_t iy = s.y0; iy < s.y1; ++iy)
            for (int64_t ix = s.x0; ix < s.x1; ++ix) {
              const T* src = img + (iy * w.w + ix) * w.c;
              for (int64_t c = 0; c < w.c; ++c) sum[c] += Acc(src[c]);
            }
          const Acc inv = Acc(1) / static_cast<Acc>(s.count());
          T* dst = y + (r * w.ow + ox) * w.c;
          for (int64_t c = 0; c < w.c; ++c) dst[c] = static_cast<T>(sum[c] * inv);
        }
      }
    });
  };
}

// Input dy, attr "input_shape".
template <class T>
KernelFn make_avg_pool_grad(const KernelInit& k) {
  using Acc = compute_t<T>;
  const ops::Window2D w = pool_window(k, Shape(k.node.attrs.ints("input_shape")));
  const T* dy = in<T>(k, 0);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  const int64_t image = w.h * w.w * w.c;
  return [=] {
    ctx->parallel_for(w.n, grain(w, 1), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const ImageGradient<T> gradient(dx + n * image, image);
        Acc* dimg = gradient.data();
        for (int64_t oy = 0; oy < w.oh; ++oy)
          for (int64_t ox = 0; ox < w.ow; ++ox) {
            const Span s(w, oy, ox);
            const T* g = dy + ((n * w.oh + oy) * w.ow + ox) * w.c;
            const Acc inv = Acc(1) / static_cast<Acc>(s.count());
            for (int64_t iy = s.y0; iy < s.y1; ++iy)
              for (int64_t ix = s.x0; ix < s.x1; ++ix) {
                Acc* dst = dimg + (iy * w.w + ix) * w.c;
                for (int64_t c = 0; c < w.c; ++c) dst[c] += Acc(g[c]) * inv;
              }
          }
      }
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("max_pool2d", make_max_pool);
REGISTER_CPU_FLOAT_KERNEL("max_pool2d_grad", make_max_pool_grad);
REGISTER_CPU_FLOAT_KERNEL("avg_pool2d", make_avg_pool);
REGISTER_CPU_FLOAT_KERNEL("avg_pool2d_grad", make_avg_pool_grad);
REGISTER_CPU_16BIT_KERNEL("max_pool2d", make_max_pool);
REGISTER_CPU_16BIT_KERNEL("max_pool2d_grad", make_max_pool_grad);
REGISTER_CPU_16BIT_KERNEL("avg_pool2d", make_avg_pool);
REGISTER_CPU_16BIT_KERNEL("avg_pool2d_grad", make_avg_pool_grad);

}  // namespace tandem::backend::cpu
