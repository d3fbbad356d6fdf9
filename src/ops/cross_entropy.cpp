// Fused (softmax +) cross-entropy per row: from logits or probabilities, with sparse class ids or
// a target distribution. Output drops the class axis. Probabilities follow Keras: normalised to
// sum 1 and clipped to [1e-7, 1 − 1e-7] before the log.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> infer_ce(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape& p = in[0].shape;
  if (!is_float(in[0].dtype) || p.rank() < 1)
    throw ShapeError("cross_entropy: predictions must be float with a class axis, got " + p.str());
  const Shape rows = Shape(std::vector<int64_t>(p.dims().begin(), p.dims().end() - 1));
  if (a.b("sparse")) {
    if (is_float(in[1].dtype) || in[1].shape != rows)
      throw ShapeError("cross_entropy: sparse labels must be integers of shape " + rows.str() + " for predictions " +
                       p.str() + ", got " + dtype_name(in[1].dtype) + " " + in[1].shape.str());
  } else if (in[1].shape != p || in[1].dtype != in[0].dtype) {
    throw ShapeError("cross_entropy: targets must match predictions " + p.str() + ", got " + in[1].shape.str());
  }
  return one({rows, in[0].dtype});
}
}  // namespace

REGISTER_OP(.name = "cross_entropy", .infer = infer_ce, .grad = [](GradContext& c) {
  c.set(0, c.g.add("cross_entropy_grad", {c.dy(), c.input(0), c.input(1)}, c.attrs()));
  // The gradient with respect to a dense target is −log q; labels are data, not trained.
}, .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "cross_entropy_grad",
            .infer = [](const Attrs&, const std::vector<TensorType>& in) { return one(in[1]); }, .layout = rows({.batch_inputs = {0, 1, 2}}));

Value cross_entropy(Graph& g, Value pred, Value target, bool sparse, bool from_logits) {
  return g.add("cross_entropy", {pred, target}, {{"sparse", sparse}, {"from_logits", from_logits}});
}

}  // namespace tandem::ops
