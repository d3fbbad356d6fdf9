// ELU: x for x > 0, alpha · (eˣ − 1) otherwise.
#include "layers/activation_layer.h"
#include "ops/activation_functions.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ELUArgs {
  double alpha = 1.0;
  std::string name;
};

const Fields<ELUArgs> kFields{
    field<ELUArgs>("alpha", [](auto& a) -> auto& { return a.alpha; }),
};

const ActivationLayerKind<ELUArgs> kKind{
    "ELU", "elu", &kFields, [](graph::Graph& g, graph::Value x, const ELUArgs& a) { return ops::elu(g, x, a.alpha); }};
const RegisterLayer registered = register_activation_layer(kKind);
}  // namespace

LayerRef ELU(double alpha, const std::string& name) { return make_activation_layer(kKind, ELUArgs{alpha, name}); }

}  // namespace tandem::layers
