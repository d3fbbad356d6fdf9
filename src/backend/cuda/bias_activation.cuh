// The epilogue of fused_matmul and fused_conv2d on CUDA devices: y = activation(y + bias) in
// place, one pass after cuBLASLt's or cuDNN's product, with the per-element math of the unfused
// bias_add and activation kernels, so fused and unfused graphs give the same bits. For the 16-bit
// types the sum and the activation run in float32 and round once; the product before them has
// rounded once already (two roundings where the CPU's fused epilogue has one).
#pragma once

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"
#include "backend/fused_activation.h"

namespace tandem::backend::cuda {

template <class T, class F>
__global__ void bias_activation_kernel(T* y, const T* bias, int64_t n, int64_t cols, F f) {
  using C = compute_t<T>;
  TANDEM_CUDA_LOOP(i, n) y[i] = static_cast<T>(f(static_cast<C>(y[i]) + static_cast<C>(bias[i % cols])));
}

// Fixed by the factory from the node's output (bias along its last axis) and attr "activation".
template <class T>
class BiasActivation {
 public:
  BiasActivation(const KernelInit& k, const T* bias)
      : bias_(bias), n_(numel(k.out_type())), cols_(k.out_type().shape.back()),
        activation_(parse_activation(k.node.attrs.s("activation"))), grid_(blocks_for(n_, context(k))), s_(stream(k)),
        label_(kernel_label(k)) {}

  void operator()(T* y) const {
    if (n_ == 0) return;
    with_activation(activation_, [&](auto f) { bias_activation_kernel<<<grid_, kBlock, 0, s_>>>(y, bias_, n_, cols_, f); });
    check_launch(label_);
  }

 private:
  const T* bias_;
  int64_t n_, cols_;
  Activation activation_;
  unsigned grid_;
  cudaStream_t s_;
  std::string label_;
};

}  // namespace tandem::backend::cuda
