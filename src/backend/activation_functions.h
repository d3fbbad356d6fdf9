// The further activations' kernels, listed once for both backends: each entry names the forward op
// (its gradient op is the name + "_grad") and the per-element functors of backend/activation_math.h.
// activation_from builds a functor from its node's attributes (ops/activation_functions.cpp sets
// them); a functor without parameters is default-constructed.
#pragma once

#include "backend/activation_math.h"
#include "graph/attrs.h"

namespace tandem::backend {

template <class F> F activation_from(const graph::Attrs&) { return F{}; }
template <> inline Elu activation_from<Elu>(const graph::Attrs& a) { return {a.f("alpha")}; }
template <> inline EluGrad activation_from<EluGrad>(const graph::Attrs& a) { return {a.f("alpha")}; }
template <> inline LeakyRelu activation_from<LeakyRelu>(const graph::Attrs& a) { return {a.f("negative_slope")}; }
template <> inline LeakyReluGrad activation_from<LeakyReluGrad>(const graph::Attrs& a) { return {a.f("negative_slope")}; }
template <> inline ReluGeneral activation_from<ReluGeneral>(const graph::Attrs& a) {
  return {a.f("negative_slope"), a.f("max_value"), a.f("threshold"), a.b("has_max_value")};
}
template <> inline ReluGeneralGrad activation_from<ReluGeneralGrad>(const graph::Attrs& a) {
  return {a.f("negative_slope"), a.f("max_value"), a.f("threshold"), a.b("has_max_value")};
}

}  // namespace tandem::backend

// X(op name, forward functor, gradient functor) for every further activation.
#define TANDEM_ACTIVATION_FUNCTIONS(X)            \
  X("silu", Silu, SiluGrad)                       \
  X("elu", Elu, EluGrad)                          \
  X("selu", Selu, SeluGrad)                       \
  X("leaky_relu", LeakyRelu, LeakyReluGrad)       \
  X("softplus", Softplus, SoftplusGrad)           \
  X("softsign", Softsign, SoftsignGrad)           \
  X("hard_sigmoid", HardSigmoid, HardSigmoidGrad) \
  X("hard_silu", HardSilu, HardSiluGrad)          \
  X("mish", Mish, MishGrad)                       \
  X("relu6", Relu6, Relu6Grad)                    \
  X("relu_general", ReluGeneral, ReluGeneralGrad)
