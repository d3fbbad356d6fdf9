// bias_add: adds a vector along the last axis; its gradient is the column sum.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "bias_add",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[1].shape.rank() != 1 || in[0].shape.rank() < 1 || in[0].shape.back() != in[1].shape[0])
        throw ShapeError("bias_add: expected a bias of shape (" + std::to_string(in[0].shape.rank() ? in[0].shape.back() : 0) +
                         ",) for input " + in[0].shape.str() + ", got " + in[1].shape.str());
      if (in[0].dtype != in[1].dtype) throw ShapeError("bias_add: input and bias dtypes differ");
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      c.set(0, c.dy());
      c.set(1, sum_to(c.g, c.dy(), c.input_type(1).shape));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0, 1}}}));

Value bias_add(Graph& g, Value x, Value bias) { return g.add("bias_add", {x, bias}); }

}  // namespace tandem::ops
