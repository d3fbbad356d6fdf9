// Activations and their gradients on CUDA devices. The per-element math is the CPU kernels'
// (backend/elementwise_math.h).
#include "backend/cuda/elementwise.cuh"
#include "backend/elementwise_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T> KernelFn make_relu(const KernelInit& k) { return map1<T>(k, Relu{}); }
template <class T> KernelFn make_sigmoid(const KernelInit& k) { return map1<T>(k, Sigmoid{}); }
template <class T> KernelFn make_tanh(const KernelInit& k) { return map1<T>(k, Tanh{}); }
template <class T> KernelFn make_gelu(const KernelInit& k) {
  return k.node.attrs.b("approximate") ? map1<T>(k, GeluTanh{}) : map1<T>(k, GeluErf{});
}

template <class T> KernelFn make_relu_grad(const KernelInit& k) { return map2<T>(k, ReluGrad{}); }
template <class T> KernelFn make_sigmoid_grad(const KernelInit& k) { return map2<T>(k, SigmoidGrad{}); }
template <class T> KernelFn make_tanh_grad(const KernelInit& k) { return map2<T>(k, TanhGrad{}); }
template <class T> KernelFn make_gelu_grad(const KernelInit& k) {
  return k.node.attrs.b("approximate") ? map2<T>(k, GeluTanhGrad{}) : map2<T>(k, GeluErfGrad{});
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("relu", make_relu);
REGISTER_CUDA_16BIT_KERNEL("relu", make_relu);
REGISTER_CUDA_FLOAT_KERNEL("sigmoid", make_sigmoid);
REGISTER_CUDA_16BIT_KERNEL("sigmoid", make_sigmoid);
REGISTER_CUDA_FLOAT_KERNEL("tanh", make_tanh);
REGISTER_CUDA_16BIT_KERNEL("tanh", make_tanh);
REGISTER_CUDA_FLOAT_KERNEL("gelu", make_gelu);
REGISTER_CUDA_16BIT_KERNEL("gelu", make_gelu);
REGISTER_CUDA_FLOAT_KERNEL("relu_grad", make_relu_grad);
REGISTER_CUDA_16BIT_KERNEL("relu_grad", make_relu_grad);
REGISTER_CUDA_FLOAT_KERNEL("sigmoid_grad", make_sigmoid_grad);
REGISTER_CUDA_16BIT_KERNEL("sigmoid_grad", make_sigmoid_grad);
REGISTER_CUDA_FLOAT_KERNEL("tanh_grad", make_tanh_grad);
REGISTER_CUDA_16BIT_KERNEL("tanh_grad", make_tanh_grad);
REGISTER_CUDA_FLOAT_KERNEL("gelu_grad", make_gelu_grad);
REGISTER_CUDA_16BIT_KERNEL("gelu_grad", make_gelu_grad);

}  // namespace tandem::backend::cuda
