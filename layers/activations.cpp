#include "layers/activations.h"

#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::layers {

void check_activation(const std::string& name, const std::string& owner) {
  for (const char* known : {"", "linear", "relu", "sigmoid", "tanh", "gelu", "softmax", "log_softmax"})
    if (name == known) return;
  throw ValueError(owner + ": unknown activation '" + name +
                   "'; expected one of linear, relu, sigmoid, tanh, gelu, softmax, log_softmax");
}

graph::Value apply_activation(graph::Graph& g, graph::Value x, const std::string& name) {
  if (name.empty() || name == "linear") return x;
  if (name == "relu") return ops::relu(g, x);
  if (name == "sigmoid") return ops::sigmoid(g, x);
  if (name == "tanh") return ops::tanh(g, x);
  if (name == "gelu") return ops::gelu(g, x);
  if (name == "softmax") return ops::softmax(g, x);
  if (name == "log_softmax") return ops::log_softmax(g, x);
  throw ValueError("unknown activation '" + name + "'");
}

}  // namespace tandem::layers
