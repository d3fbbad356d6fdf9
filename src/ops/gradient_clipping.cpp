// Gradient clipping (Keras's clipvalue, clipnorm and global_clipnorm): an elementwise clip, and a
// rescale by a norm computed from a sum of squares (one variable's, or all variables' for the
// global norm), so that the norm after it is at most the limit.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> same_float(const char* op, const std::vector<TensorType>& in) {
  if (!is_float(in[0].dtype)) throw ShapeError(std::string(op) + ": expected a float tensor, got " + dtype_name(in[0].dtype));
  return one(in[0]);
}
}  // namespace

// y = min(max(x, -limit), limit)
REGISTER_OP(.name = "clip_by_value", .infer = [](const Attrs&, const std::vector<TensorType>& in) { return same_float("clip_by_value", in); },
            .layout = elementwise());
// y = x · limit / max(√sum_of_squares, limit): unchanged when the norm is within the limit.
REGISTER_OP(.name = "scale_by_norm", .infer = [](const Attrs&, const std::vector<TensorType>& in) {
  if (in[1].shape.rank() != 0 || in[1].dtype != in[0].dtype)
    throw ShapeError("scale_by_norm: expected a scalar sum of squares of the gradient's dtype, got " + in[1].shape.str());
  return same_float("scale_by_norm", in);
}, .layout = elementwise());

Value clip_by_value(Graph& g, Value x, double limit) { return g.add("clip_by_value", {x}, {{"limit", limit}}); }
Value sum_of_squares(Graph& g, Value x) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < g.type(x).shape.rank(); ++a) axes.push_back(a);
  return reduce_sum(g, mul(g, x, x), axes);
}
Value scale_by_norm(Graph& g, Value x, Value sum_of_squares, double limit) {
  return g.add("scale_by_norm", {x, sum_of_squares}, {{"limit", limit}});
}

}  // namespace tandem::ops
