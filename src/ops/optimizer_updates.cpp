// In-place variable updates emitted by optimizers (phase Update). Inputs that are variables are
// written in place; the ops have no outputs.
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
}  // namespace

// sgd_update(var, grad, lr[, velocity]); attrs momentum, nesterov.
REGISTER_OP(.name = "sgd_update", .infer = check_update, .writes_inputs = {0, 3}, .has_side_effects = true,
            .gradient_input = 1);
// adam_update(var, grad, lr, iteration, m, v); attrs beta_1, beta_2, epsilon, weight_decay.
REGISTER_OP(.name = "adam_update", .infer = check_update, .writes_inputs = {0, 4, 5}, .has_side_effects = true,
            .gradient_input = 1);
// rmsprop_update(var, grad, lr, mean_square[, momentum]); attrs rho, epsilon, momentum.
REGISTER_OP(.name = "rmsprop_update", .infer = check_update, .writes_inputs = {0, 3, 4}, .has_side_effects = true,
            .gradient_input = 1);
// increment(counter): counter += 1, after every update that read it.
REGISTER_OP(
    .name = "increment",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[0].dtype != DType::I64 || in[0].shape.rank() != 0) throw ShapeError("increment: expected an int64 scalar");
      return std::vector<TensorType>{};
    },
    .writes_inputs = {0}, .has_side_effects = true);

}  // namespace tandem::ops
