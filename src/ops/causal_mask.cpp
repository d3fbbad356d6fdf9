// causal_mask: hides the keys a query may not see before a softmax over the last axis.
//
// Masked scores are replaced by a fixed value rather than shifted by it (Keras adds −1e9 to them).
// After the softmax both give weights that are exactly 0 whenever a row keeps at least one key,
// which a causal mask with offset >= 0 always does; replacing makes the op's gradient an exact 0 at
// masked positions, so finite differences through it stay exact. The gradient op is the same
// kernel with fill value 0.
#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "causal_mask",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (!is_float(in[0].dtype) || in[0].shape.rank() < 2)
        throw ShapeError("causal_mask: expected float scores of rank >= 2 (..., queries, keys), got " +
                         std::string(dtype_name(in[0].dtype)) + " " + in[0].shape.str());
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      const int64_t offset = c.attrs().i("offset");
      c.set(0, c.g.add("causal_mask", {c.dy()}, {{"offset", offset}, {"value", 0.0}}));
    }, .layout = rows({.batch_inputs = {0}, .min_rank = 3, .leading = 2}));

Value causal_mask(Graph& g, Value scores, int64_t offset) {
  return g.add("causal_mask", {scores}, {{"offset", offset}, {"value", kMaskedScore}});
}

}  // namespace tandem::ops
