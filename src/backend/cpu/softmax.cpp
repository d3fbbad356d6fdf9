// softmax, log_softmax and their gradients along one axis, viewed as (outer, n, inner).
#include <Eigen/Core>

#include <cmath>
#include <type_traits>

#include "backend/cpu/kernel_util.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
struct Axis {
  int64_t outer = 1, n = 1, inner = 1;
  Axis(const Shape& s, int64_t axis_attr) {
    const int axis = ops::normalize_axis(axis_attr, s.rank(), "softmax");
    for (int i = 0; i < s.rank(); ++i) (i < axis ? outer : i == axis ? n : inner) *= s[i];
  }
};

// Calls f(base, stride) for every line along the axis.
template <class F>
void for_lines(Context& ctx, const Axis& ax, F&& f) {
  ctx.parallel_for(ax.outer * ax.inner, kElementwiseGrain / ax.n + 1, [&](int64_t b, int64_t e) {
    for (int64_t l = b; l < e; ++l) f((l / ax.inner) * ax.n * ax.inner + l % ax.inner, ax.inner);
  });
}

// Float lines that are contiguous (the last axis: attention's scores, a classifier's logits)
// through Eigen's vectorised exp, once per element: the scalar std::exp, twice per element, made
// attention's softmax cost as much as its matrix products.
KernelFn softmax_rows_float(const KernelInit& k, const Axis& ax, bool log) {
  using Row = Eigen::Array<float, 1, Eigen::Dynamic>;
  const float* x = in<float>(k, 0);
  float* y = out<float>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(ax.outer, kElementwiseGrain / ax.n + 1, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        const Eigen::Map<const Row> xv(x + l * ax.n, ax.n);
        Eigen::Map<Row> yv(y + l * ax.n, ax.n);
        // As below, a NaN anywhere makes the sum, and so the whole line, NaN.
        const float mx = xv.maxCoeff();
        if (log) {
          yv = xv - (mx + std::log((xv - mx).exp().sum()));
        } else {
          yv = (xv - mx).exp();
          yv /= yv.sum();
        }
      }
    });
  };
}

template <class T>
KernelFn make_softmax_like(const KernelInit& k, bool log) {
  const Axis ax(k.in_types[0].shape, k.node.attrs.i("axis"));
  if constexpr (std::is_same_v<T, float>)
    if (ax.inner == 1 && ax.n > 0) return softmax_rows_float(k, ax, log);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    for_lines(*ctx, ax, [&](int64_t base, int64_t st) {
      // The max is only for stability: it may skip a NaN, but exp(NaN − mx) makes the sum, and so
      // the whole line, NaN, as in PyTorch.
      T mx = x[base];
      for (int64_t j = 1; j < ax.n; ++j) mx = std::max(mx, x[base + j * st]);
      T sum = 0;
      for (int64_t j = 0; j < ax.n; ++j) sum += std::exp(x[base + j * st] - mx);
      const T lse = mx + std::log(sum);
      for (int64_t j = 0; j < ax.n; ++j) {
        const T z = x[base + j * st] - lse;
        y[base + j * st] = log ? z : std::exp(z);
      }
    });
  };
}

template <class T>
KernelFn make_softmax_grad_like(const KernelInit& k, bool log) {
  const Axis ax(k.in_types[0].shape, k.node.attrs.i("axis"));
  const T* dy = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    for_lines(*ctx, ax, [&](int64_t base, int64_t st) {
      T dot = 0;  // softmax: Σ dy·y ; log_softmax: Σ dy
      for (int64_t j = 0; j < ax.n; ++j) dot += log ? dy[base + j * st] : dy[base + j * st] * y[base + j * st];
      for (int64_t j = 0; j < ax.n; ++j) {
        const int64_t i = base + j * st;
        dx[i] = log ? dy[i] - std::exp(y[i]) * dot : y[i] * (dy[i] - dot);
      }
    });
  };
}

template <class T> KernelFn make_softmax(const KernelInit& k) { return make_softmax_like<T>(k, false); }
template <class T> KernelFn make_log_softmax(const KernelInit& k) { return make_softmax_like<T>(k, true); }
template <class T> KernelFn make_softmax_grad(const KernelInit& k) { return make_softmax_grad_like<T>(k, false); }
template <class T> KernelFn make_log_softmax_grad(const KernelInit& k) { return make_softmax_grad_like<T>(k, true); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("softmax", make_softmax);
REGISTER_CPU_FLOAT_KERNEL("log_softmax", make_log_softmax);
REGISTER_CPU_FLOAT_KERNEL("softmax_grad", make_softmax_grad);
REGISTER_CPU_FLOAT_KERNEL("log_softmax_grad", make_log_softmax_grad);

}  // namespace tandem::backend::cpu
