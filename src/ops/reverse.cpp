// reverse: x with the order of one axis reversed (Bidirectional puts the backward direction's
// sequence back in time order with it). Its gradient is the same reversal.
#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "reverse",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      normalize_axis(a.i("axis"), in[0].shape.rank(), "reverse");
      return one(in[0]);
    },
    .grad = [](GradContext& c) { c.set(0, reverse(c.g, c.dy(), c.attrs().i("axis"))); },
    .layout = rows({.batch_inputs = {0}, .linear = {{0}}, .axis_attr = "axis"}));

Value reverse(Graph& g, Value x, int64_t axis) { return g.add("reverse", {x}, {{"axis", axis}}); }

}  // namespace tandem::ops
