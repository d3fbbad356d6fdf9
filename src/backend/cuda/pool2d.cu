// max_pool2d, avg_pool2d and their gradients on channels-last tensors, on CUDA devices, with the
// CPU kernels' semantics: padded positions are never part of a window (the average divides by the
// count of real elements); a NaN wins the max; the max gradient goes to the first maximal element
// of a window in row-major order, or to its last NaN.
//
// The gradients gather instead of scattering: one thread per element of dx adds the contributions
// of the windows that contain it, in the CPU's window order (oy, ox ascending), so no atomics are
// needed and the sums are bitwise the CPU's. In bfloat16 and float16 a maximum is exact and sums
// run in float32, rounded once.
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"
#include "backend/elementwise_math.h"
#include "ops/conv.h"

namespace tandem::backend::cuda {

namespace {
ops::Window2D pool_window(const KernelInit& k, const Shape& x) {
  const std::vector<int64_t> pool = k.node.attrs.ints("pool");
  return ops::window2d(x, pool[0], pool[1], k.node.attrs, k.node.op.c_str());
}

__device__ int64_t at_least(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ int64_t at_most(int64_t a, int64_t b) { return a < b ? a : b; }

// The window of output (oy, ox) clipped to the image: rows [y0, y1), columns [x0, x1).
struct Span {
  int64_t y0, y1, x0, x1;
  __device__ Span(const ops::Window2D& w, int64_t oy, int64_t ox) {
    const int64_t top = oy * w.sh - w.pad_top, left = ox * w.sw - w.pad_left;
    y0 = at_least(top, 0), y1 = at_most(top + w.kh, w.h);
    x0 = at_least(left, 0), x1 = at_most(left + w.kw, w.w);
  }
  __device__ int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

// The outputs whose windows contain input row iy (or column): [first, last] along one axis.
struct Covering {
  int64_t first, last;
  __device__ Covering(int64_t i, int64_t pad, int64_t window, int64_t stride, int64_t outputs) {
    const int64_t lowest = i + pad - window + 1;  // a window starting at or above it still reaches i
    first = lowest > 0 ? (lowest + stride - 1) / stride : 0;
    last = at_most((i + pad) / stride, outputs - 1);
  }
};

// Element i of a channels-last (n, h, w, c) tensor as (n, y, x, c).
struct Pixel {
  int64_t n, y, x, c;
  __device__ Pixel(int64_t i, int64_t h, int64_t w, int64_t channels)
      : n(i / channels / w / h), y(i / channels / w % h), x(i / channels % w), c(i % channels) {}
};

template <class T>
__global__ void max_pool_kernel(T* y, const T* x, ops::Window2D w, int64_t count) {
  TANDEM_CUDA_LOOP(i, count) {
    const Pixel o(i, w.oh, w.ow, w.c);
    const T* img = x + o.n * w.h * w.w * w.c + o.c;
    const Span s(w, o.y, o.x);
    using C = compute_t<T>;  // exact for a maximum
    C best = C(-INFINITY);
    for (int64_t iy = s.y0; iy < s.y1; ++iy)
      for (int64_t ix = s.x0; ix < s.x1; ++ix) {
        const C v = static_cast<C>(img[(iy * w.w + ix) * w.c]);
        best = (v > best || v != v) ? v : best;
      }
    y[i] = static_cast<T>(best);
  }
}

// Where window (oy, ox) of channel-offset image `img` sends its gradient: the offset of its first
// maximum, or of its last NaN (the CPU's scan, which starts from the window's first element).
template <class T>
__device__ int64_t max_at(const T* img, const ops::Window2D& w, int64_t oy, int64_t ox) {
  const Span s(w, oy, ox);
  using C = compute_t<T>;
  int64_t at = (s.y0 * w.w + s.x0) * w.c;
  C best = static_cast<C>(img[at]);
  for (int64_t iy = s.y0; iy < s.y1; ++iy)
    for (int64_t ix = s.x0; ix < s.x1; ++ix) {
      const int64_t offset = (iy * w.w + ix) * w.c;
      const C v = static_cast<C>(img[offset]);
      const bool better = v > best || v != v;
      best = better ? v : best;
      at = better ? offset : at;
    }
  return at;
}

// kRelu: the fused relu_grad (x is a relu's output), which masks by x itself, the maximum of every
// window whose gradient it receives.
template <class T, bool kRelu>
__global__ void max_pool_grad_kernel(T* dx, const T* x, const T* dy, ops::Window2D w, int64_t count) {
  using C = compute_t<T>;
  TANDEM_CUDA_LOOP(i, count) {
    const Pixel p(i, w.h, w.w, w.c);
    const T* img = x + p.n * w.h * w.w * w.c + p.c;
    const int64_t self = (p.y * w.w + p.x) * w.c;
    const Covering rows(p.y, w.pad_top, w.kh, w.sh, w.oh), cols(p.x, w.pad_left, w.kw, w.sw, w.ow);
    C sum = C(0);
    for (int64_t oy = rows.first; oy <= rows.last; ++oy)
      for (int64_t ox = cols.first; ox <= cols.last; ++ox)
        if (max_at(img, w, oy, ox) == self) sum += static_cast<C>(dy[((p.n * w.oh + oy) * w.ow + ox) * w.c + p.c]);
    dx[i] = static_cast<T>(kRelu ? ReluGrad{}(sum, static_cast<C>(img[self])) : sum);
  }
}

template <class T>
__global__ void avg_pool_kernel(T* y, const T* x, ops::Window2D w, int64_t count) {
  using C = compute_t<T>;
  TANDEM_CUDA_LOOP(i, count) {
    const Pixel o(i, w.oh, w.ow, w.c);
    const T* img = x + o.n * w.h * w.w * w.c + o.c;
    const Span s(w, o.y, o.x);
    C sum = C(0);
    for (int64_t iy = s.y0; iy < s.y1; ++iy)
      for (int64_t ix = s.x0; ix < s.x1; ++ix) sum += static_cast<C>(img[(iy * w.w + ix) * w.c]);
    const C inv = C(1) / static_cast<C>(s.count());
    y[i] = static_cast<T>(sum * inv);
  }
}

template <class T>
__global__ void avg_pool_grad_kernel(T* dx, const T* dy, ops::Window2D w, int64_t count) {
  using C = compute_t<T>;
  TANDEM_CUDA_LOOP(i, count) {
    const Pixel p(i, w.h, w.w, w.c);
    const Covering rows(p.y, w.pad_top, w.kh, w.sh, w.oh), cols(p.x, w.pad_left, w.kw, w.sw, w.ow);
    C sum = C(0);
    for (int64_t oy = rows.first; oy <= rows.last; ++oy)
      for (int64_t ox = cols.first; ox <= cols.last; ++ox) {
        const C inv = C(1) / static_cast<C>(Span(w, oy, ox).count());
        sum += static_cast<C>(dy[((p.n * w.oh + oy) * w.ow + ox) * w.c + p.c]) * inv;
      }
    dx[i] = static_cast<T>(sum);
  }
}

// A closure launching `kernel` with one thread per element of the output, (out, inputs..., w, count).
template <class Kernel, class Out, class... In>
KernelFn per_output(const KernelInit& k, Kernel kernel, const ops::Window2D& w, Out* y, const In*... inputs) {
  const int64_t count = numel(k.out_type());
  if (count == 0) return {};
  const unsigned grid = blocks_for(count, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    kernel<<<grid, kBlock, 0, s>>>(y, inputs..., w, count);
    check_launch(label);
  };
}

template <class T>
KernelFn make_max_pool(const KernelInit& k) {
  return per_output(k, max_pool_kernel<T>, pool_window(k, k.in_types[0].shape), out<T>(k), in<T>(k, 0));
}
// Inputs (x, dy), attr "relu".
template <class T>
KernelFn make_max_pool_grad(const KernelInit& k) {
  const auto kernel = k.node.attrs.b("relu") ? max_pool_grad_kernel<T, true> : max_pool_grad_kernel<T, false>;
  return per_output(k, kernel, pool_window(k, k.in_types[0].shape), out<T>(k), in<T>(k, 0), in<T>(k, 1));
}
template <class T>
KernelFn make_avg_pool(const KernelInit& k) {
  return per_output(k, avg_pool_kernel<T>, pool_window(k, k.in_types[0].shape), out<T>(k), in<T>(k, 0));
}
// Input dy, attr "input_shape".
template <class T>
KernelFn make_avg_pool_grad(const KernelInit& k) {
  return per_output(k, avg_pool_grad_kernel<T>, pool_window(k, Shape(k.node.attrs.ints("input_shape"))), out<T>(k), in<T>(k, 0));
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("max_pool2d", make_max_pool);
REGISTER_CUDA_FLOAT_KERNEL("max_pool2d_grad", make_max_pool_grad);
REGISTER_CUDA_FLOAT_KERNEL("avg_pool2d", make_avg_pool);
REGISTER_CUDA_FLOAT_KERNEL("avg_pool2d_grad", make_avg_pool_grad);
REGISTER_CUDA_16BIT_KERNEL("max_pool2d", make_max_pool);
REGISTER_CUDA_16BIT_KERNEL("max_pool2d_grad", make_max_pool_grad);
REGISTER_CUDA_16BIT_KERNEL("avg_pool2d", make_avg_pool);
REGISTER_CUDA_16BIT_KERNEL("avg_pool2d_grad", make_avg_pool_grad);

}  // namespace tandem::backend::cuda
