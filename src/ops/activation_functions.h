// Keras 3's further activation functions as ops (ops/activation_functions.cpp): each is elementwise,
// and its gradient is the op "<name>_grad" on (dy, x). The formulas are backend/activation_math.h's.
#pragma once

#include <optional>

#include "graph/op_registry.h"

namespace tandem::ops {

Value silu(Graph& g, Value x);          // x · sigmoid(x) (swish)
Value selu(Graph& g, Value x);          // scale · elu(x, alpha), jax.nn.selu's constants
Value softplus(Graph& g, Value x);      // log(1 + eˣ)
Value softsign(Graph& g, Value x);      // x / (|x| + 1)
Value hard_sigmoid(Graph& g, Value x);  // relu6(x + 3) / 6
Value hard_silu(Graph& g, Value x);     // x · hard_sigmoid(x) (hard_swish)
Value mish(Graph& g, Value x);          // x · tanh(softplus(x))
Value relu6(Graph& g, Value x);         // min(max(x, 0), 6)
Value elu(Graph& g, Value x, double alpha = 1.0);                // x > 0 ? x : alpha · (eˣ − 1)
Value leaky_relu(Graph& g, Value x, double negative_slope = 0.2);  // x >= 0 ? x : negative_slope · x

// Keras's activations.relu with its three parameters (the ReLU layer).
struct ReluOptions {
  double negative_slope = 0;
  std::optional<double> max_value{};
  double threshold = 0;
};
Value relu_general(Graph& g, Value x, const ReluOptions& options);

}  // namespace tandem::ops
