// Named activations shared by Dense, Activation and (later) convolution layers.
#pragma once

#include <string>

#include "graph/graph.h"

namespace tandem::layers {

// Throws ValueError naming `owner` if `name` is not a known activation.
void check_activation(const std::string& name, const std::string& owner);
graph::Value apply_activation(graph::Graph& g, graph::Value x, const std::string& name);

}  // namespace tandem::layers
