// Reverse-mode differentiation: emits backward nodes into the same graph. It never runs anything.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tandem::autodiff {

// d(loss)/d(wrt[i]) for a scalar loss; an invalid Value where wrt[i] does not reach the loss.
// New nodes get phase Backward and the scope of the forward node they differentiate.
std::vector<graph::Value> gradients(graph::Graph& g, graph::Value loss, const std::vector<graph::Value>& wrt);

}  // namespace tandem::autodiff
