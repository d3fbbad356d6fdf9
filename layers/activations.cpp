#include "layers/activations.h"

#include <functional>

#include "ops/activation_functions.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::layers {

namespace {
using graph::Graph;
using graph::Value;

struct NamedActivation {
  const char* name;
  const char* keras_name;  // what Keras writes: an alias's function name
  std::function<Value(Graph&, Value)> apply;
};

Value identity(Graph&, Value x) { return x; }

// Keras 3's activations (keras.activations.get) with the parameters its string forms use:
// leaky_relu's negative_slope 0.2 and elu's alpha 1.
const std::vector<NamedActivation>& table() {
  static const std::vector<NamedActivation> t{
      {"linear", "linear", identity},
      {"relu", "relu", [](Graph& g, Value x) { return ops::relu(g, x); }},
      {"sigmoid", "sigmoid", [](Graph& g, Value x) { return ops::sigmoid(g, x); }},
      {"tanh", "tanh", [](Graph& g, Value x) { return ops::tanh(g, x); }},
      {"gelu", "gelu", [](Graph& g, Value x) { return ops::gelu(g, x); }},
      {"softmax", "softmax", [](Graph& g, Value x) { return ops::softmax(g, x); }},
      {"log_softmax", "log_softmax", [](Graph& g, Value x) { return ops::log_softmax(g, x); }},
      {"silu", "silu", ops::silu},
      {"swish", "silu", ops::silu},
      {"leaky_relu", "leaky_relu", [](Graph& g, Value x) { return ops::leaky_relu(g, x, 0.2); }},
      {"selu", "selu", ops::selu},
      {"elu", "elu", [](Graph& g, Value x) { return ops::elu(g, x, 1.0); }},
      {"softplus", "softplus", ops::softplus},
      {"softsign", "softsign", ops::softsign},
      {"hard_sigmoid", "hard_sigmoid", ops::hard_sigmoid},
      {"hard_silu", "hard_silu", ops::hard_silu},
      {"hard_swish", "hard_silu", ops::hard_silu},
      {"mish", "mish", ops::mish},
      {"relu6", "relu6", ops::relu6},
      {"exponential", "exponential", [](Graph& g, Value x) { return ops::exp(g, x); }},
  };
  return t;
}

const NamedActivation* find(const std::string& name) {
  const std::string& key = name.empty() ? std::string("linear") : name;
  for (const NamedActivation& a : table())
    if (key == a.name) return &a;
  return nullptr;
}
}  // namespace

void check_activation(const std::string& name, const std::string& owner) {
  if (find(name)) return;
  std::string known;
  for (const NamedActivation& a : table()) known.append(known.empty() ? "" : ", ").append(a.name);
  throw ValueError(std::string(owner).append(": unknown activation '").append(name).append("'; expected one of ").append(known));
}

Value apply_activation(Graph& g, Value x, const std::string& name) {
  const NamedActivation* a = find(name);
  if (!a) throw ValueError(std::string("unknown activation '").append(name).append("'"));
  return a->apply(g, x);
}

std::string activation_config_name(const std::string& name) {
  const NamedActivation* a = find(name);
  return a ? a->keras_name : name;
}

}  // namespace tandem::layers
