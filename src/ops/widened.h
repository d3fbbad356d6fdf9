// A 16-bit product's gradient brought back to a float32 weight (ops/matmul.cpp).
#pragma once

#include "ops/ops.h"

namespace tandem::ops {

// x as dtype `to`; where x is a 16-bit matmul's product and `to` float32, the same product with its
// float32 sums kept (matmul's output_dtype) instead of rounded to 16 bits and cast back.
Value widened(Graph& g, Value x, DType to);

}  // namespace tandem::ops
