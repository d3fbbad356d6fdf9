// Per-row losses that compare predictions with same-shaped targets elementwise and average over
// the last axis: binary cross-entropy (Keras's clipping), squared and absolute error, Huber,
// log-cosh and Poisson; KL divergence sums over it (Keras's formulas: backend/loss_math.h).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
InferFn infer_rowwise(const char* op) {
  return [op](const Attrs&, const std::vector<TensorType>& in) {
    const Shape& p = in[0].shape;
    if (!is_float(in[0].dtype) || p.rank() < 1 || in[1].shape != p || in[1].dtype != in[0].dtype)
      throw ShapeError(std::string(op) + ": targets must be float and match predictions " + p.str() + ", got " +
                       dtype_name(in[1].dtype) + " " + in[1].shape.str());
    return one({Shape(std::vector<int64_t>(p.dims().begin(), p.dims().end() - 1)), in[0].dtype});
  };
}

// The gradient op gets (dy per row, pred, target) and returns d/dpred (and, if asked, d/dtarget).
GradFn grad_rowwise(const char* grad_op) {
  return [grad_op](GradContext& c) {
    Attrs a = c.attrs();
    c.set(0, c.g.add(grad_op, {c.dy(), c.input(0), c.input(1)}, a.set("wrt", int64_t{0})));
    c.set(1, c.g.add(grad_op, {c.dy(), c.input(0), c.input(1)}, a.set("wrt", int64_t{1})));
  };
}
std::vector<TensorType> infer_pred(const Attrs&, const std::vector<TensorType>& in) { return one(in[1]); }
}  // namespace

REGISTER_OP(.name = "binary_cross_entropy", .infer = infer_rowwise("binary_cross_entropy"),
            .grad = grad_rowwise("binary_cross_entropy_grad"), .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "squared_error", .infer = infer_rowwise("squared_error"), .grad = grad_rowwise("squared_error_grad"), .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "absolute_error", .infer = infer_rowwise("absolute_error"), .grad = grad_rowwise("absolute_error_grad"), .layout = rows({.batch_inputs = {0, 1}}));
// huber carries its attr "delta" (Keras's δ) into huber_grad.
REGISTER_OP(.name = "huber", .infer = infer_rowwise("huber"), .grad = grad_rowwise("huber_grad"), .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "log_cosh", .infer = infer_rowwise("log_cosh"), .grad = grad_rowwise("log_cosh_grad"), .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "poisson", .infer = infer_rowwise("poisson"), .grad = grad_rowwise("poisson_grad"), .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "kl_divergence", .infer = infer_rowwise("kl_divergence"), .grad = grad_rowwise("kl_divergence_grad"),
            .layout = rows({.batch_inputs = {0, 1}}));
REGISTER_OP(.name = "binary_cross_entropy_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "squared_error_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "absolute_error_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "huber_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "log_cosh_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "poisson_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));
REGISTER_OP(.name = "kl_divergence_grad", .infer = infer_pred, .layout = rows({.batch_inputs = {0, 1, 2}}));

Value binary_cross_entropy(Graph& g, Value pred, Value target, bool from_logits) {
  return g.add("binary_cross_entropy", {pred, target}, {{"from_logits", from_logits}});
}
Value squared_error(Graph& g, Value pred, Value target) { return g.add("squared_error", {pred, target}); }
Value absolute_error(Graph& g, Value pred, Value target) { return g.add("absolute_error", {pred, target}); }
Value huber(Graph& g, Value pred, Value target, double delta) { return g.add("huber", {pred, target}, {{"delta", delta}}); }
Value log_cosh(Graph& g, Value pred, Value target) { return g.add("log_cosh", {pred, target}); }
Value poisson(Graph& g, Value pred, Value target) { return g.add("poisson", {pred, target}); }
Value kl_divergence(Graph& g, Value pred, Value target) { return g.add("kl_divergence", {pred, target}); }

}  // namespace tandem::ops
