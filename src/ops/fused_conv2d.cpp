// fused_conv2d(x, kernel, bias) = activation(conv2d(x, kernel) + bias), with conv2d's attrs and
// activation (ops/fused_activation.h): the convolution applies the bias and the activation to each
// image's output right after its GEMM. Made by the fusion pass (compile/fusion.h) from conv2d →
// bias_add → relu | sigmoid | tanh, or conv2d → bias_add ("linear").
#include "ops/conv.h"
#include "ops/fused_activation.h"
#include "ops/ops.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "fused_conv2d",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) { return infer_fused_product("fused_conv2d", "conv2d", a, in); },
    .grad = [](GradContext& c) {
      const Value dz = activation_grad(c.g, c.attrs().s("activation"), c.dy(), c.output());
      const auto [dx, dkernel] = conv2d_gradients(c.g, c.input(0), c.input(1), dz, c.attrs());
      c.set(0, dx);
      c.set(1, dkernel);
      c.set(2, sum_to(c.g, dz, c.input_type(2).shape));
    });

}  // namespace tandem::ops
