// bias_add: adds a vector along the last axis; its gradient is the column sum.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// Rows split as the input's are; a split along the last axis (a column-parallel Dense) takes the
// bias's matching block.
std::optional<Signature> bias_add_layout(const graph::LayoutQuery& q) {
  const Layout &x = q.in[0], &bias = q.in[1];
  const int last = q.input_type(0).shape.rank() - 1;
  if (x.is_split() && x.axis == last && last > 0) return Signature{{x, Layout::split(0, x.shares)}, {x}};
  if (x.is_replicated() && bias.is_split()) return Signature{{Layout::split(last, bias.shares), bias}, {Layout::split(last, bias.shares)}};
  static const LayoutFn by_rows = rows({.batch_inputs = {0}, .linear = {{0, 1}}});
  return by_rows(q);
}
}  // namespace

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
    }, .layout = bias_add_layout);

Value bias_add(Graph& g, Value x, Value bias) { return g.add("bias_add", {x, bias}); }

}  // namespace tandem::ops
