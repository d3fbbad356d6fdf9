// softmax, log_softmax and their gradients along one axis on CUDA devices: each line along the
// axis is reduced by one thread, warp or block (backend/cuda/reduction.cuh).
#include <cmath>

#include "backend/cuda/reduction.cuh"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
// The max is only for stability: NaN winning it or not, exp(NaN − max) makes the sum, and so the
// whole line, NaN, as on the CPU.
template <class Group, class T>
__global__ void softmax_kernel(T* y, const T* x, AxisLines ax, bool log) {
  for (int64_t l = Group::first_line(); l < ax.count(); l += Group::line_stride()) {
    const T* xl = x + ax.base(l);
    T* yl = y + ax.base(l);
    const T mx = line_reduce<Group>(ax.n, minus_infinity<T>(), MaxNanWins{}, [&](int64_t j) { return xl[j * ax.inner]; });
    const T sum = line_reduce<Group>(ax.n, T(0), Plus{}, [&](int64_t j) { return std::exp(xl[j * ax.inner] - mx); });
    const T lse = mx + std::log(sum);
    for (int64_t j = Group::lane(); j < ax.n; j += Group::kThreads) {
      const T z = xl[j * ax.inner] - lse;
      yl[j * ax.inner] = log ? z : std::exp(z);
    }
  }
}

// softmax: dx = y·(dy − Σ dy·y); log_softmax: dx = dy − exp(y)·Σ dy.
template <class Group, class T>
__global__ void softmax_grad_kernel(T* dx, const T* dy, const T* y, AxisLines ax, bool log) {
  for (int64_t l = Group::first_line(); l < ax.count(); l += Group::line_stride()) {
    const int64_t base = ax.base(l);
    const T dot = line_reduce<Group>(ax.n, T(0), Plus{}, [&](int64_t j) {
      const int64_t i = base + j * ax.inner;
      return log ? dy[i] : dy[i] * y[i];
    });
    for (int64_t j = Group::lane(); j < ax.n; j += Group::kThreads) {
      const int64_t i = base + j * ax.inner;
      dx[i] = log ? dy[i] - std::exp(y[i]) * dot : y[i] * (dy[i] - dot);
    }
  }
}

LineLaunch lines_of(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  return LineLaunch(AxisLines(s, ops::normalize_axis(k.node.attrs.i("axis"), s.rank(), "softmax")), context(k));
}

template <class T>
KernelFn make_softmax_like(const KernelInit& k, bool log) {
  const LineLaunch shape = lines_of(k);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const AxisLines lines = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    softmax_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, x, lines, log);
  });
}

template <class T>
KernelFn make_softmax_grad_like(const KernelInit& k, bool log) {
  const LineLaunch shape = lines_of(k);
  const T* dy = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  T* dx = out<T>(k);
  const AxisLines lines = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    softmax_grad_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(dx, dy, y, lines, log);
  });
}

template <class T> KernelFn make_softmax(const KernelInit& k) { return make_softmax_like<T>(k, false); }
template <class T> KernelFn make_log_softmax(const KernelInit& k) { return make_softmax_like<T>(k, true); }
template <class T> KernelFn make_softmax_grad(const KernelInit& k) { return make_softmax_grad_like<T>(k, false); }
template <class T> KernelFn make_log_softmax_grad(const KernelInit& k) { return make_softmax_grad_like<T>(k, true); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("softmax", make_softmax);
REGISTER_CUDA_FLOAT_KERNEL("log_softmax", make_log_softmax);
REGISTER_CUDA_FLOAT_KERNEL("softmax_grad", make_softmax_grad);
REGISTER_CUDA_FLOAT_KERNEL("log_softmax_grad", make_log_softmax_grad);

}  // namespace tandem::backend::cuda
