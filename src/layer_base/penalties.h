// Regularizers and constraints in the graph: the penalty a regularizer adds to the loss, and the
// in-place projection a constraint applies after an optimizer update.
#pragma once

#include <string>
#include <vector>

#include "config/keras_classes.h"
#include "graph/graph.h"
#include "tandem/regularizers.h"

namespace tandem {

// The regularizer's penalty of x as a scalar of x's dtype, as Keras's __call__ computes it. `owner`
// names the layer and weight in errors (OrthogonalRegularizer needs a 2-D value).
graph::Value regularization_penalty(graph::Graph& g, graph::Value x, const Regularizer& r, const std::string& owner);

// Emits, in the update phase, the constraint's projection of `variable` in place, to run after the
// nodes `after` (its optimizer update). The node takes the scope of the variable's reader (its
// layer), so that strategies place it with the weight.
void emit_constraint(graph::Graph& g, graph::Value variable, const Constraint& c, std::vector<int> after, const std::string& owner);

}  // namespace tandem
