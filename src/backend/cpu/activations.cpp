// Activations and their gradients, elementwise over contiguous buffers.
#include <cmath>

#include "backend/cpu/elementwise.h"

namespace tandem::backend::cpu {

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// NaN must come out as NaN (PyTorch, Keras): a NaN fails `x < 0` and passes through, where the
// usual `x > 0 ? x : 0` turned it into 0. Still a branch-free compare and mask.
template <class T> KernelFn make_relu(const KernelInit& k) { return map1<T>(k, [](T x) { return x < T(0) ? T(0) : x; }); }
template <class T> KernelFn make_sigmoid(const KernelInit& k) { return map1<T>(k, [](T x) { return T(1) / (T(1) + std::exp(-x)); }); }
template <class T> KernelFn make_tanh(const KernelInit& k) { return map1<T>(k, [](T x) { return std::tanh(x); }); }
template <class T> KernelFn make_gelu(const KernelInit& k) {
  if (k.node.attrs.b("approximate"))
    return map1<T>(k, [](T x) { return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x))); });
  return map1<T>(k, [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2))); });
}

// PyTorch's threshold_backward on the output: a select, not dy·mask. Where y <= 0 the gradient is 0
// even if dy is NaN or inf; where y is NaN (a NaN input) dy passes through.
template <class T> KernelFn make_relu_grad(const KernelInit& k) { return map2<T>(k, [](T dy, T y) { return y <= T(0) ? T(0) : dy; }); }
template <class T> KernelFn make_sigmoid_grad(const KernelInit& k) { return map2<T>(k, [](T dy, T y) { return dy * (y * (T(1) - y)); }); }
template <class T> KernelFn make_tanh_grad(const KernelInit& k) { return map2<T>(k, [](T dy, T y) { return dy * (T(1) - y * y); }); }
template <class T> KernelFn make_gelu_grad(const KernelInit& k) {
  if (k.node.attrs.b("approximate"))
    return map2<T>(k, [](T dy, T x) {
      const T u = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
      const T t = std::tanh(u);
      const T du = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
      return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
    });
  return map2<T>(k, [](T dy, T x) {
    return dy * (T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) + x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x));
  });
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
