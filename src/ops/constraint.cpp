// apply_constraint: a weight projected in place after its optimizer update (Keras's
// variable.constraint), phase Update. No outputs and no gradient, like the optimizer updates.
#include "graph/layout.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// (variable); attrs kind (backend::ConstraintKind: 0 NonNeg, 1 UnitNorm, 2 MinMaxNorm), axes (the
// norm's, in [0, rank)), min_value, max_value, rate.
std::vector<TensorType> check_constraint(const Attrs& a, const std::vector<TensorType>& in) {
  if (!is_float(in[0].dtype)) throw ShapeError("apply_constraint: expected a float variable, got " + std::string(dtype_name(in[0].dtype)));
  const int64_t kind = a.i("kind");
  if (kind < 0 || kind > 2) throw ShapeError("apply_constraint: unknown kind " + std::to_string(kind));
  for (int64_t axis : a.ints("axes"))
    if (axis < 0 || axis >= in[0].shape.rank())
      throw ShapeError("apply_constraint: axis " + std::to_string(axis) + " is outside a weight of shape " + in[0].shape.str());
  if (in[0].shape.rank() > 8) throw ShapeError("apply_constraint: weights of rank up to 8 are supported, got " + in[0].shape.str());
  return {};
}

// A weight split across devices (tensor parallelism) is constrained block by block when every
// norm lies within one block: the split axis is not one the norm runs over (NonNeg: any split).
std::optional<graph::Signature> constraint_layout(const graph::LayoutQuery& q) {
  const graph::Layout& var = q.in[0];
  if (!var.is_split()) return std::nullopt;
  if (q.node.attrs.i("kind") != 0)
    for (int64_t axis : q.node.attrs.ints("axes"))
      if (axis == var.axis)
        throw ShapeError("apply_constraint: the weight is split along axis " + std::to_string(axis) +
                         ", which its constraint's norm runs over; constrain another axis or keep the weight whole");
  return graph::Signature{{var}, {}};
}
}  // namespace

REGISTER_OP(.name = "apply_constraint", .infer = check_constraint, .writes_inputs = {0}, .has_side_effects = true,
            .layout = constraint_layout);

}  // namespace tandem::ops
