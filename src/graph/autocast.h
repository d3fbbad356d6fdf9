// Mixed precision's casts, placed as each op is added to a graph (Graph::add), as PyTorch's
// autocast places them at dispatch: which dtype an op computes in follows from its class and
// from the compute dtype of the layer being traced (Graph::compute_dtype, Keras's DTypePolicy).
//
//   low precision  matrix products and convolutions: float32 inputs are cast to the layer's
//                  16-bit compute dtype (tensor cores, AVX512-BF16);
//   follow         elementwise work between them (bias, activations, +, -, x, /): computes in its
//                  inputs' dtype, a float32 operand cast to the 16-bit one beside it;
//   float32        everything else — softmax, normalisation statistics, reductions, losses,
//                  pooling, the optimizer: 16-bit inputs are cast to float32.
//
// A graph with no 16-bit value and compute dtype float32 is never changed. Each value is cast to a
// dtype once per graph, so a weight read by several ops is copied to 16 bits once per step.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tandem::graph {

enum class Precision { Low, Follow, Float32 };

// The class of an op (docs/mixed-precision.md lists them).
Precision precision_of(const std::string& op);

bool is_16bit(DType t);

// The inputs `op` should get: `inputs` with the casts its class asks for added to `g`.
std::vector<Value> autocast_inputs(Graph& g, const std::string& op, std::vector<Value> inputs);

}  // namespace tandem::graph
