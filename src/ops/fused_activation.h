// The activation a fused op applies after its bias (attr "activation": "linear", "relu", "sigmoid"
// or "tanh"), shared by the fused ops' shape checks and gradient rules (ops/fused_activation.cpp). Only activations whose
// gradient reads their output fuse: the pre-activation then never needs to be kept.
#pragma once

#include <string>
#include <vector>

#include "graph/op_registry.h"

namespace tandem::ops {

// Whether `op` is an activation op a fused op can apply ("relu", "sigmoid", "tanh").
bool fusable_activation(const std::string& op);
// Throws a ShapeError naming `op` unless attr "activation" is "linear" or a fusable activation.
void check_fused_activation(const Attrs& attrs, const char* op);
// The gradient before the activation from the one after it (dy) and the activation's output y;
// dy itself for "linear".
Value activation_grad(Graph& g, const std::string& activation, Value dy, Value y);
// The output types of fused op `op`, inputs (a, b, bias): those of `product` ("matmul" or
// "conv2d") over (a, b) with the same attrs, after checking the activation and that the bias is
// one value per output channel.
std::vector<TensorType> infer_fused_product(const char* op, const char* product, const Attrs& attrs, const std::vector<TensorType>& in);

}  // namespace tandem::ops
