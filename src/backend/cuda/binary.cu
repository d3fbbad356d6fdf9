// add, sub, mul, div with broadcasting, and broadcast_to, on CUDA devices.
#include "backend/cuda/elementwise.cuh"

namespace tandem::backend::cuda {

namespace {
struct Add { template <class T> __device__ T operator()(T x, T z) const { return x + z; } };
struct Sub { template <class T> __device__ T operator()(T x, T z) const { return x - z; } };
struct Mul { template <class T> __device__ T operator()(T x, T z) const { return x * z; } };
struct Div { template <class T> __device__ T operator()(T x, T z) const { return x / z; } };
struct First { template <class T> __device__ T operator()(T x, T) const { return x; } };

template <class T> KernelFn make_add(const KernelInit& k) { return broadcast2<T>(k, Add{}); }
template <class T> KernelFn make_sub(const KernelInit& k) { return broadcast2<T>(k, Sub{}); }
template <class T> KernelFn make_mul(const KernelInit& k) { return broadcast2<T>(k, Mul{}); }
template <class T> KernelFn make_div(const KernelInit& k) { return broadcast2<T>(k, Div{}); }

// broadcast_to is a broadcast of x against itself, keeping x.
template <class T>
KernelFn make_broadcast_to(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const DeviceBroadcast plan(BroadcastPlan(k.out_type().shape, k.in_types[0].shape, k.in_types[0].shape));
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { broadcast2_kernel<<<grid, kBlock, 0, s>>>(y, x, x, n, plan, First{}); });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("add", make_add);
REGISTER_CUDA_16BIT_KERNEL("add", make_add);
REGISTER_CUDA_FLOAT_KERNEL("sub", make_sub);
REGISTER_CUDA_16BIT_KERNEL("sub", make_sub);
REGISTER_CUDA_FLOAT_KERNEL("mul", make_mul);
REGISTER_CUDA_16BIT_KERNEL("mul", make_mul);
REGISTER_CUDA_FLOAT_KERNEL("div", make_div);
REGISTER_CUDA_16BIT_KERNEL("div", make_div);
REGISTER_CUDA_FLOAT_KERNEL("broadcast_to", make_broadcast_to);

}  // namespace tandem::backend::cuda
