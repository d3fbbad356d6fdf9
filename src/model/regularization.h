// Keras's regularization losses and weight constraints in a step's graph.
#pragma once

#include <vector>

#include "layer_base/call_context.h"

namespace tandem {

// `loss` plus, as Keras's compute_loss adds them, the penalty of every trainable weight that has a
// regularizer (each weight once) and the losses the layers added while emitted (activity
// regularizers). A weight's penalty is computed in its layer's scope, so that a strategy computes
// it where the weight lives, and divided by the micro-batches of the step, which each run this
// graph: their sum counts it once per step.
graph::Value add_regularization_losses(CallContext& ctx, const std::vector<VariablePtr>& weights, graph::Value loss);

// The constraint of each weight in `trainable` that has one, applied after its optimizer update
// (the update nodes are those from `first_update` on), as Keras's optimizer applies them.
void emit_constraints(CallContext& ctx, const std::vector<VariablePtr>& trainable, int first_update);

}  // namespace tandem
