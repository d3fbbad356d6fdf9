// LeakyReLU: x for x >= 0, negative_slope · x otherwise (Keras's default slope 0.3).
#include "layers/activation_layer.h"
#include "ops/activation_functions.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct LeakyReLUArgs {
  double negative_slope = 0.3;
  std::string name;
};

const Fields<LeakyReLUArgs> kFields{
    field<LeakyReLUArgs>("negative_slope", [](auto& a) -> auto& { return a.negative_slope; }, rules::non_negative),
    // Keras 2 (tf.keras) wrote the slope as "alpha", which Keras 3 still reads in its place.
    read_only(field<LeakyReLUArgs>("alpha", [](auto& a) -> auto& { return a.negative_slope; })),
};

const ActivationLayerKind<LeakyReLUArgs> kKind{
    "LeakyReLU", "leaky_re_lu", &kFields,
    [](graph::Graph& g, graph::Value x, const LeakyReLUArgs& a) { return ops::leaky_relu(g, x, a.negative_slope); }};
const RegisterLayer registered = register_activation_layer(kKind);
}  // namespace

LayerRef LeakyReLU(double negative_slope, const std::string& name) {
  return make_activation_layer(kKind, LeakyReLUArgs{negative_slope, name});
}

}  // namespace tandem::layers
