// Activations and their gradients, elementwise over contiguous buffers. The per-element math is
// in backend/elementwise_math.h, shared with the CUDA kernels.
#include "backend/cpu/elementwise.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

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

REGISTER_CPU_FLOAT_KERNEL("relu", make_relu);
REGISTER_CPU_FLOAT_KERNEL("sigmoid", make_sigmoid);
REGISTER_CPU_FLOAT_KERNEL("tanh", make_tanh);
REGISTER_CPU_FLOAT_KERNEL("gelu", make_gelu);
REGISTER_CPU_FLOAT_KERNEL("relu_grad", make_relu_grad);
REGISTER_CPU_FLOAT_KERNEL("sigmoid_grad", make_sigmoid_grad);
REGISTER_CPU_FLOAT_KERNEL("tanh_grad", make_tanh_grad);
REGISTER_CPU_FLOAT_KERNEL("gelu_grad", make_gelu_grad);

}  // namespace tandem::backend::cpu
