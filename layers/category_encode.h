// The dense encodings CategoryEncoding and IntegerLookup share (Keras's
// numerical_utils.encode_categorical_inputs, as it computes on JAX).
#pragma once

#include <string>

#include "graph/graph.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::layers::detail {

// Integer ids (batch, ...) to float `dtype` encodings of `depth` values. "one_hot": (batch, ...,
// depth), a last axis of 1 dropped first; "multi_hot" (1 where an id occurs) and "count" (how often)
// take (batch, n) ids and give (batch, depth). Ids outside [0, depth) add nothing.
inline graph::Value encode_categories(graph::Graph& g, graph::Value ids, int64_t depth, const std::string& mode, DType dtype,
                                      const std::string& who) {
  std::vector<int64_t> dims = g.type(ids).shape.dims();
  if (mode == "one_hot") {
    if (dims.size() > 1 && dims.back() == 1) {  // (..., 1) -> (...)
      dims.pop_back();
      ids = ops::reshape(g, ids, Shape(dims));
    }
    return ops::one_hot(g, ids, depth, dtype);
  }
  // Keras on JAX reduces axis 1: (batch, n) ids give (batch, depth).
  if (dims.size() != 2)
    throw ShapeError(who + ": output_mode \"" + mode + "\" expects ids of shape (batch, n), got " + g.type(ids).shape.without_batch().with_batch(-1).str());
  const graph::Value hot = ops::one_hot(g, ids, depth, dtype);
  return mode == "count" ? ops::reduce_sum(g, hot, {1}) : ops::reduce_max(g, hot, {1});
}

}  // namespace tandem::layers::detail
