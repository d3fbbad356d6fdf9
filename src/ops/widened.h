// A 16-bit gradient brought back to a float32 weight (ops/widened.cpp), and the "output_dtype"
// attr of the ops that can write their float32 sums instead of rounding them to 16 bits.
#pragma once

#include "ops/ops.h"

namespace tandem::ops {

// x as dtype `to`. Where `to` is float32 and x is 16-bit, the rounding is undone where the graph
// allows: a product that made x (matmul, conv2d_backprop_filter) keeps its float32 sums instead
// (its output_dtype). Otherwise a cast.
Value widened(Graph& g, Value x, DType to);

// The output dtype of `op` whose 16-bit inputs have dtype `in`: the attr "output_dtype" where set
// (float32 on 16-bit inputs only: a ShapeError otherwise), else `in`.
DType output_dtype(const Attrs& a, DType in, const char* op);

}  // namespace tandem::ops
