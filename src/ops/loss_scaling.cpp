// Dynamic loss scaling (LossScaleOptimizer): a gradient divided by the loss scale with a flag that
// says whether it held an inf or NaN, and the scale's own update from the step's flag.
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
bool is_scalar(const TensorType& t, DType dtype) { return t.shape.rank() == 0 && t.dtype == dtype; }
std::string describe(const TensorType& t) { return std::string(dtype_name(t.dtype)).append(" ").append(t.shape.str()); }
}  // namespace

// unscale_gradient(grad, scale) -> (grad / scale, nonfinite): nonfinite is a float32 scalar, 1 when
// grad holds an inf or NaN, else 0. It reads the gradient as the strategy sums it (gradient_input),
// so every replica sees the same flag.
REGISTER_OP(
    .name = "unscale_gradient",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (!is_float(in[0].dtype)) throw ShapeError(std::string("unscale_gradient: expected a float gradient, got ").append(dtype_name(in[0].dtype)));
      if (!is_scalar(in[1], DType::F32)) throw ShapeError("unscale_gradient: expected a float32 scalar scale, got " + describe(in[1]));
      return std::vector<TensorType>{in[0], {Shape{}, DType::F32}};
    },
    .gradient_input = 0);

// loss_scale_update(scale, step_counter, nonfinite): with finite gradients, step_counter += 1, and
// when it reaches dynamic_growth_steps the scale doubles and the count restarts; otherwise the
// scale halves and the count restarts (Keras's LossScaleOptimizer). The scale comes first: an
// update runs where the variable it writes first lives, and the scale is read on every device
// that unscales a gradient, so each of them updates its own copy.
REGISTER_OP(
    .name = "loss_scale_update",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (!is_scalar(in[0], DType::F32) || !is_scalar(in[1], DType::I64) || !is_scalar(in[2], DType::F32))
        throw ShapeError("loss_scale_update: expected a float32 scale, an int64 step counter and a float32 flag, got " + describe(in[0]) + ", " +
                         describe(in[1]) + ", " + describe(in[2]));
      return std::vector<TensorType>{};
    },
    .writes_inputs = {0, 1}, .has_side_effects = true);

std::pair<Value, Value> unscale_gradient(Graph& g, Value grad, Value scale) {
  const std::vector<Value> out = g.add_multi("unscale_gradient", {grad, scale});
  return {out[0], out[1]};
}

void loss_scale_update(Graph& g, Value scale, Value step_counter, Value nonfinite, int64_t dynamic_growth_steps) {
  g.add_multi("loss_scale_update", {scale, step_counter, nonfinite}, {{"dynamic_growth_steps", dynamic_growth_steps}});
}

}  // namespace tandem::ops
