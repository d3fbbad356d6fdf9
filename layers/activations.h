// Named activations shared by Dense, Activation, the convolution layers and every layer that takes
// an activation by name: Keras 3's names, including its aliases (swish, hard_swish).
#pragma once

#include <string>

#include "graph/graph.h"

namespace tandem::layers {

// Throws ValueError naming `owner` if `name` is not a known activation.
void check_activation(const std::string& name, const std::string& owner);
graph::Value apply_activation(graph::Graph& g, graph::Value x, const std::string& name);
// The name Keras writes in a config for `name`: its function's own name, so "swish" is written
// "silu", "hard_swish" "hard_silu", and "" (none) "linear". Unknown names come back unchanged.
std::string activation_config_name(const std::string& name);

}  // namespace tandem::layers
