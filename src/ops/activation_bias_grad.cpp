// activation_bias_grad(dy, y) -> (dx, dbias): an activation's gradient dx = <activation>_grad(dy, y)
// and its sums over every axis but the last (the gradient of the bias added before the
// activation) in one pass. Made by the fusion pass (compile/fusion.h) from relu_grad, sigmoid_grad
// or tanh_grad followed by that column sum; not differentiable itself, like the gradients it fuses.
// Attr "output_dtype" float32 on 16-bit inputs: dbias is the float32 column sums, not rounded (from
// a 16-bit gradient cast to float32 before its sum, a float32 bias's gradient under mixed precision).
#include "ops/fused_activation.h"
#include "ops/ops.h"
#include "ops/widened.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "activation_bias_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_fused_activation(a, "activation_bias_grad");
      if (a.s("activation") == "linear") throw ShapeError("activation_bias_grad: activation must be relu, sigmoid or tanh, got 'linear'");
      if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype || !is_float(in[0].dtype) || in[0].shape.rank() < 1)
        throw ShapeError("activation_bias_grad: expected a gradient and an activation output of one float shape, got " + in[0].shape.str() +
                         " and " + in[1].shape.str());
      return std::vector<TensorType>{in[0], {Shape{in[0].shape.back()}, output_dtype(a, in[0].dtype, "activation_bias_grad")}};
    });

}  // namespace tandem::ops
