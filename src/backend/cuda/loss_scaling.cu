// Dynamic loss scaling on CUDA devices, with the CPU kernels' math: unscale_gradient divides and
// raises the flag where an element is inf or NaN (threads that find one all store the same 1, so
// their order does not matter); loss_scale_update is one thread on the step's flag.
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"
#include "backend/optimizer_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void unscale_gradient_kernel(T* y, float* nonfinite, const T* g, const float* scale, int64_t n) {
  using C = compute_t<T>;
  const C s = static_cast<C>(*scale);
  TANDEM_CUDA_LOOP(i, n) {
    const C v = static_cast<C>(g[i]);
    if (!isfinite(v)) *nonfinite = 1.0f;
    y[i] = static_cast<T>(v / s);
  }
}

template <class T>
KernelFn make_unscale_gradient(const KernelInit& k) {
  const T* g = in<T>(k, 0);
  const float* scale = in<float>(k, 1);
  T* y = out<T>(k, 0);
  float* nonfinite = out<float>(k, 1);
  const int64_t n = numel(k.in_types[0]);
  const unsigned grid = blocks_for(n, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    check(cudaMemsetAsync(nonfinite, 0, sizeof(float), s), "cudaMemsetAsync", label);  // 0.0f: all finite so far
    if (n == 0) return;
    unscale_gradient_kernel<<<grid, kBlock, 0, s>>>(y, nonfinite, g, scale, n);
    check_launch(label);
  };
}

__global__ void loss_scale_update_kernel(int64_t* step_counter, float* scale, const float* nonfinite, int64_t growth) {
  optimizer_math::loss_scale_step(*step_counter, *scale, *nonfinite == 0.0f, growth);
}

KernelFn make_loss_scale_update(const KernelInit& k) {
  float* scale = static_cast<float*>(k.in[0]);
  int64_t* step_counter = static_cast<int64_t*>(k.in[1]);
  const float* nonfinite = in<float>(k, 2);
  const int64_t growth = k.node.attrs.i("dynamic_growth_steps");
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    loss_scale_update_kernel<<<1, 1, 0, s>>>(step_counter, scale, nonfinite, growth);
    check_launch(label);
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("unscale_gradient", make_unscale_gradient);
REGISTER_CUDA_16BIT_KERNEL("unscale_gradient", make_unscale_gradient);
REGISTER_KERNEL("loss_scale_update", DeviceKind::Cuda, DType::F32, make_loss_scale_update);

}  // namespace tandem::backend::cuda
