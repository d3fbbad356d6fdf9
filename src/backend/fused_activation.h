// The activation of a fused op's epilogue (attr "activation", ops/fused_activation.h) as the CPU
// and CUDA kernels see it: an enum read once when the kernel is made, and a dispatch that hands a
// kernel template the activation's functor, so each loop is compiled for one activation and the
// per-element math is elementwise_math.h's, as in the unfused ops.
#pragma once

#include <cstdint>
#include <string>

#include "backend/elementwise_math.h"
#include "tandem/errors.h"

namespace tandem::backend {

enum class Activation : uint8_t { Linear, Relu, Sigmoid, Tanh };

inline Activation parse_activation(const std::string& name) {
  if (name == "linear") return Activation::Linear;
  if (name == "relu") return Activation::Relu;
  if (name == "sigmoid") return Activation::Sigmoid;
  if (name == "tanh") return Activation::Tanh;
  throw Error("internal: fused activation '" + name + "'");
}

struct Identity { template <class T> TANDEM_HD T operator()(T x) const { return x; } };

// f(functor) with the activation's forward functor.
template <class F>
decltype(auto) with_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::Relu: return f(Relu{});
    case Activation::Sigmoid: return f(Sigmoid{});
    case Activation::Tanh: return f(Tanh{});
    case Activation::Linear: break;
  }
  return f(Identity{});
}

// f(functor) with the gradient functor (dy, y) -> dx of a non-linear activation.
template <class F>
decltype(auto) with_activation_grad(Activation a, F&& f) {
  switch (a) {
    case Activation::Sigmoid: return f(SigmoidGrad{});
    case Activation::Tanh: return f(TanhGrad{});
    case Activation::Relu: break;
    case Activation::Linear: throw Error("internal: the gradient of a linear fused activation");
  }
  return f(ReluGrad{});
}

}  // namespace tandem::backend
