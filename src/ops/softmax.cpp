// softmax and log_softmax along one axis, with their gradient ops.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> infer_softmax(const Attrs& a, const std::vector<TensorType>& in) {
  if (!is_float(in[0].dtype)) throw ShapeError("softmax: expected a float tensor");
  normalize_axis(a.i("axis"), in[0].shape.rank(), "softmax");
  return one(in[0]);
}
std::vector<TensorType> infer_same(const Attrs&, const std::vector<TensorType>& in) { return one(in[0]); }
}  // namespace

REGISTER_OP(.name = "softmax", .infer = infer_softmax, .grad = [](GradContext& c) {
  // dx = y ⊙ (dy − Σ dy⊙y)
  c.set(0, c.g.add("softmax_grad", {c.dy(), c.output()}, {{"axis", c.attrs().i("axis")}}));
}, .layout = rows({.batch_inputs = {0}, .axis_attr = "axis", .leading = 1}));
REGISTER_OP(.name = "log_softmax", .infer = infer_softmax, .grad = [](GradContext& c) {
  // dx = dy − exp(y) Σ dy
  c.set(0, c.g.add("log_softmax_grad", {c.dy(), c.output()}, {{"axis", c.attrs().i("axis")}}));
}, .layout = rows({.batch_inputs = {0}, .axis_attr = "axis", .leading = 1}));
REGISTER_OP(.name = "softmax_grad", .infer = infer_same, .layout = rows({.batch_inputs = {0, 1}, .axis_attr = "axis", .leading = 1}));
REGISTER_OP(.name = "log_softmax_grad", .infer = infer_same, .layout = rows({.batch_inputs = {0, 1}, .axis_attr = "axis", .leading = 1}));

Value softmax(Graph& g, Value x, int axis) { return g.add("softmax", {x}, {{"axis", int64_t{axis}}}); }
Value log_softmax(Graph& g, Value x, int axis) { return g.add("log_softmax", {x}, {{"axis", int64_t{axis}}}); }

}  // namespace tandem::ops
