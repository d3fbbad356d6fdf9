// ReLU: Keras's relu with max_value, negative_slope and threshold (all non-negative, as Keras checks).
#include "layers/activation_layer.h"
#include "ops/activation_functions.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ReLUArgs {
  std::optional<double> max_value;  // none: unbounded (Keras None)
  double negative_slope = 0.0;
  double threshold = 0.0;
  std::string name;
};

const Fields<ReLUArgs> kFields{
    Field<ReLUArgs>{"max_value", [](const ReLUArgs& a) { return a.max_value ? Json(*a.max_value) : Json(nullptr); },
                    [](const ConfigReader& c, ReLUArgs& a) {
                      if (const Json* v = c.value("max_value"); v && !v->is_null()) a.max_value = c.number("max_value");
                    },
                    [](const std::string& who, const ReLUArgs& a) {
                      if (a.max_value && !(*a.max_value >= 0))
                        throw ValueError(std::string(who).append(": max_value must be non-negative or none, got ")
                                             .append(fields_detail::show(*a.max_value)));
                    }},
    field<ReLUArgs>("negative_slope", [](auto& a) -> auto& { return a.negative_slope; }, rules::non_negative),
    field<ReLUArgs>("threshold", [](auto& a) -> auto& { return a.threshold; }, rules::non_negative),
};

graph::Value apply(graph::Graph& g, graph::Value x, const ReLUArgs& a) {
  if (!a.max_value && a.negative_slope == 0 && a.threshold == 0) return ops::relu(g, x);  // the fusable plain relu
  return ops::relu_general(g, x, {.negative_slope = a.negative_slope, .max_value = a.max_value, .threshold = a.threshold});
}

const ActivationLayerKind<ReLUArgs> kKind{"ReLU", "re_lu", &kFields, apply};
const RegisterLayer registered = register_activation_layer(kKind);
}  // namespace

LayerRef ReLU(std::optional<double> max_value, double negative_slope, double threshold, const std::string& name) {
  return make_activation_layer(kKind, ReLUArgs{max_value, negative_slope, threshold, name});
}

}  // namespace tandem::layers
