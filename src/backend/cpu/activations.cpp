// Activations and their gradients, elementwise over contiguous buffers. The per-element math is
// in backend/elementwise_math.h, shared with the CUDA kernels; float GELU is the exception below.
#include <unsupported/Eigen/SpecialFunctions>

#include "backend/cpu/elementwise.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T> KernelFn make_relu(const KernelInit& k) { return map1<T>(k, Relu{}); }
template <class T> KernelFn make_sigmoid(const KernelInit& k) { return map1<T>(k, Sigmoid{}); }
template <class T> KernelFn make_tanh(const KernelInit& k) { return map1<T>(k, Tanh{}); }

// GELU in its erf form through Eigen's vectorised erf and exp (rational approximations within a
// few ulps of std::erf): the scalar std::erf took 6 ns an element, a fifth of a Transformer
// training step. float32 computes in place; bfloat16 and float16 widen a chunk at a time into
// float32 (convert16.h), compute the same way and round once at the store, as every 16-bit
// kernel does. Float64 keeps the shared scalar math, which the gradient checks use.
using FloatArray = Eigen::Array<float, Eigen::Dynamic, 1>;

void gelu_erf_floats(float* y, int64_t n, const float* x) {
  const auto xv = Eigen::Map<const FloatArray>(x, n);
  Eigen::Map<FloatArray>(y, n) = 0.5f * xv * (1.0f + (xv * float(kInvSqrt2)).erf());
}
void gelu_erf_grad_floats(float* dx, int64_t n, const float* dy, const float* x) {
  const auto d = Eigen::Map<const FloatArray>(dy, n);
  const auto xv = Eigen::Map<const FloatArray>(x, n);
  Eigen::Map<FloatArray>(dx, n) = d * (0.5f * (1.0f + (xv * float(kInvSqrt2)).erf()) + xv * float(kInvSqrt2Pi) * (-0.5f * xv * xv).exp());
}

template <class T>
KernelFn gelu_erf_vectorised(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] { ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { map_float_blocks(b, e, y, gelu_erf_floats, x); }); };
}
template <class T>
KernelFn gelu_erf_grad_vectorised(const KernelInit& k) {
  const T* dy = in<T>(k, 0);
  const T* x = in<T>(k, 1);
  T* dx = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] { ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { map_float_blocks(b, e, dx, gelu_erf_grad_floats, dy, x); }); };
}

template <class T> KernelFn make_gelu(const KernelInit& k) {
  if (k.node.attrs.b("approximate")) return map1<T>(k, GeluTanh{});
  if constexpr (!std::is_same_v<T, double>) return gelu_erf_vectorised<T>(k);
  return map1<T>(k, GeluErf{});
}

template <class T> KernelFn make_relu_grad(const KernelInit& k) { return map2<T>(k, ReluGrad{}); }
template <class T> KernelFn make_sigmoid_grad(const KernelInit& k) { return map2<T>(k, SigmoidGrad{}); }
template <class T> KernelFn make_tanh_grad(const KernelInit& k) { return map2<T>(k, TanhGrad{}); }
template <class T> KernelFn make_gelu_grad(const KernelInit& k) {
  if (k.node.attrs.b("approximate")) return map2<T>(k, GeluTanhGrad{});
  if constexpr (!std::is_same_v<T, double>) return gelu_erf_grad_vectorised<T>(k);
  return map2<T>(k, GeluErfGrad{});
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("relu", make_relu);
REGISTER_CPU_16BIT_KERNEL("relu", make_relu);
REGISTER_CPU_FLOAT_KERNEL("sigmoid", make_sigmoid);
REGISTER_CPU_16BIT_KERNEL("sigmoid", make_sigmoid);
REGISTER_CPU_FLOAT_KERNEL("tanh", make_tanh);
REGISTER_CPU_16BIT_KERNEL("tanh", make_tanh);
REGISTER_CPU_FLOAT_KERNEL("gelu", make_gelu);
REGISTER_CPU_16BIT_KERNEL("gelu", make_gelu);
REGISTER_CPU_FLOAT_KERNEL("relu_grad", make_relu_grad);
REGISTER_CPU_16BIT_KERNEL("relu_grad", make_relu_grad);
REGISTER_CPU_FLOAT_KERNEL("sigmoid_grad", make_sigmoid_grad);
REGISTER_CPU_16BIT_KERNEL("sigmoid_grad", make_sigmoid_grad);
REGISTER_CPU_FLOAT_KERNEL("tanh_grad", make_tanh_grad);
REGISTER_CPU_16BIT_KERNEL("tanh_grad", make_tanh_grad);
REGISTER_CPU_FLOAT_KERNEL("gelu_grad", make_gelu_grad);
REGISTER_CPU_16BIT_KERNEL("gelu_grad", make_gelu_grad);

}  // namespace tandem::backend::cpu
