// In-place variable updates emitted by optimizers (phase Update). Inputs that are variables are
// written in place; the ops have no outputs.
#include "graph/layout.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> check_update(const Attrs&, const std::vector<TensorType>& in) {
  // (variable, gradient, learning rate, ...slots shaped like the variable, ...)
  if (in[0] != in[1]) throw ShapeError("optimizer update: gradient " + in[1].shape.str() + " does not match variable " + in[0].shape.str());
  if (in[2].shape.rank() != 0) throw ShapeError("optimizer update: learning rate must be a scalar");
  return {};
}

// Nadam's update also reads the optimizer-wide u_product, a scalar.
std::vector<TensorType> check_nadam_update(const Attrs& a, const std::vector<TensorType>& in) {
  if (in[6].shape.rank() != 0) throw ShapeError("nadam_update: u_product must be a scalar, got " + in[6].shape.str());
  return check_update(a, in);
}

std::vector<TensorType> check_scalar_state(const Attrs&, const std::vector<TensorType>& in) {
  if (in[0].shape.rank() != 0 || !is_float(in[0].dtype)) throw ShapeError("nadam_u_product_update: expected a float scalar");
  if (in[1].dtype != DType::I64 || in[1].shape.rank() != 0) throw ShapeError("nadam_u_product_update: expected an int64 iteration count");
  return {};
}

// A variable split over its devices is updated block by block: its gradient and slots (the
// inputs of its shape) in the same blocks, the scalars whole.
std::optional<graph::Signature> update_layout(const graph::LayoutQuery& q) {
  const graph::Layout& var = q.in[0];
  if (!var.is_split()) return std::nullopt;
  graph::Signature s{std::vector<graph::Layout>(q.in.size()), {}};
  for (std::size_t i = 0; i < q.in.size(); ++i)
    if (q.input_type(static_cast<int>(i)).shape == q.input_type(0).shape) s.in[i] = var;
  return s;
}
}  // namespace

// sgd_update(var, grad, lr[, velocity]); attrs momentum, nesterov.
REGISTER_OP(.name = "sgd_update", .infer = check_update, .writes_inputs = {0, 3}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// adam_update(var, grad, lr, iteration, m, v); attrs beta_1, beta_2, epsilon, weight_decay.
REGISTER_OP(.name = "adam_update", .infer = check_update, .writes_inputs = {0, 4, 5}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// rmsprop_update(var, grad, lr, mean_square[, momentum]); attrs rho, epsilon, momentum.
REGISTER_OP(.name = "rmsprop_update", .infer = check_update, .writes_inputs = {0, 3, 4}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// adagrad_update(var, grad, lr, accumulator); attr epsilon.
REGISTER_OP(.name = "adagrad_update", .infer = check_update, .writes_inputs = {0, 3}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// nadam_update(var, grad, lr, iteration, m, v, u_product); attrs beta_1, beta_2, epsilon. Reads
// u_product as it was before the step.
REGISTER_OP(.name = "nadam_update", .infer = check_nadam_update, .writes_inputs = {0, 4, 5}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// nadam_u_product_update(u_product, iteration): u_product ·= μ of this step, after every
// nadam_update that read it. Scalars only, so every device updates its whole copy (like increment).
REGISTER_OP(.name = "nadam_u_product_update", .infer = check_scalar_state, .writes_inputs = {0}, .has_side_effects = true);
// adamax_update(var, grad, lr, iteration, momentum, norm); attrs beta_1, beta_2, epsilon.
REGISTER_OP(.name = "adamax_update", .infer = check_update, .writes_inputs = {0, 4, 5}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// lion_update(var, grad, lr, momentum); attrs beta_1, beta_2.
REGISTER_OP(.name = "lion_update", .infer = check_update, .writes_inputs = {0, 3}, .has_side_effects = true,
            .gradient_input = 1, .layout = update_layout);
// increment(counter): counter += 1, after every update that read it.
REGISTER_OP(
    .name = "increment",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[0].dtype != DType::I64 || in[0].shape.rank() != 0) throw ShapeError("increment: expected an int64 scalar");
      return std::vector<TensorType>{};
    },
    .writes_inputs = {0}, .has_side_effects = true);

}  // namespace tandem::ops
