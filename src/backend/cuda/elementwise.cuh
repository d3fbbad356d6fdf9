// Launchers shared by the elementwise CUDA kernels: one input, two same-shaped inputs, and two
// inputs with NumPy broadcasting. Each returns the kernel that applies `f` per element; `f` is a
// functor whose operator() is __device__ (usually one TANDEM_HD function the CPU kernel calls too),
// templated on its argument type: it runs in T's compute type (float for __nv_bfloat16 and __half,
// rounded once at the store; low_precision.cuh).
#pragma once

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"
#include "backend/strided.h"

namespace tandem::backend::cuda {

// A BroadcastPlan's merged dims and strides, by value in the launch arguments.
struct DeviceBroadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, a[kMaxRank] = {}, b[kMaxRank] = {};
  explicit DeviceBroadcast(const BroadcastPlan& p) : rank(static_cast<int>(p.dims.size())) {
    for (int i = 0; i < rank; ++i) dims[i] = p.dims[static_cast<std::size_t>(i)], a[i] = p.a_strides[static_cast<std::size_t>(i)], b[i] = p.b_strides[static_cast<std::size_t>(i)];
  }
  // The input offsets of output element i.
  __device__ void offsets(int64_t i, int64_t& ia, int64_t& ib) const {
    ia = 0, ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = i % dims[d];
      i /= dims[d];
      ia += c * a[d], ib += c * b[d];
    }
  }
};

template <class T, class R, class F>
__global__ void map1_kernel(R* y, const T* x, int64_t n, F f) {
  TANDEM_CUDA_LOOP(i, n) y[i] = apply_rounded<R>(f, x[i]);
}
template <class T, class R, class F>
__global__ void map2_kernel(R* y, const T* a, const T* b, int64_t n, F f) {
  TANDEM_CUDA_LOOP(i, n) y[i] = apply_rounded<R>(f, a[i], b[i]);
}
template <class T, class R, class F>
__global__ void broadcast2_kernel(R* y, const T* a, const T* b, int64_t n, DeviceBroadcast plan, F f) {
  TANDEM_CUDA_LOOP(i, n) {
    int64_t ia, ib;
    plan.offsets(i, ia, ib);
    y[i] = apply_rounded<R>(f, a[ia], b[ib]);
  }
}

// y[i] = f(x[i]); R is the output's element type.
template <class T, class R = T, class F>
KernelFn map1(const KernelInit& k, F f) {
  const T* x = in<T>(k, 0);
  R* y = out<R>(k);
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { map1_kernel<<<grid, kBlock, 0, s>>>(y, x, n, f); });
}

// y[i] = f(a[i], b[i]) for same-shaped inputs.
template <class T, class R = T, class F>
KernelFn map2(const KernelInit& k, F f) {
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  R* y = out<R>(k);
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { map2_kernel<<<grid, kBlock, 0, s>>>(y, a, b, n, f); });
}

// y = f(a, b) with broadcasting; same shapes take map2's flat loop.
template <class T, class R = T, class F>
KernelFn broadcast2(const KernelInit& k, F f) {
  if (k.in_types[0].shape == k.in_types[1].shape) return map2<T, R>(k, f);
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  R* y = out<R>(k);
  const DeviceBroadcast plan(BroadcastPlan(k.out_type().shape, k.in_types[0].shape, k.in_types[1].shape));
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { broadcast2_kernel<<<grid, kBlock, 0, s>>>(y, a, b, n, plan, f); });
}

}  // namespace tandem::backend::cuda
