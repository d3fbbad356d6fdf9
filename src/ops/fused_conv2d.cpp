// fused_conv2d(x, kernel, bias) = activation(conv2d(x, kernel) + bias), with conv2d's attrs and
// activation (ops/fused_activation.h): the convolution applies the bias and the activation to each
// image's output right after its GEMM. Made by the fusion pass (compile/fusion.h) from conv2d →
// bias_add → relu | sigmoid | tanh, or conv2d → bias_add ("linear").
#include "ops/conv.h"
#include "ops/fused_activation.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
Pair pair_attr(const Attrs& a, const char* key) {
  const std::vector<int64_t> v = a.ints(key);
  return {v[0], v[1]};
}
}  // namespace

REGISTER_OP(
    .name = "fused_conv2d",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_fused_activation(a, "fused_conv2d");
      std::vector<TensorType> out = find("conv2d").infer(a, {in[0], in[1]});
      if (in[2].shape != Shape{out[0].shape.back()} || in[2].dtype != out[0].dtype)
        throw ShapeError("fused_conv2d: expected a bias of shape (" + std::to_string(out[0].shape.back()) + ",) for the output " +
                         out[0].shape.str() + ", got " + in[2].shape.str());
      return out;
    },
    .grad = [](GradContext& c) {
      const Value dz = activation_grad(c.g, c.attrs().s("activation"), c.dy(), c.output());
      const Pair s = pair_attr(c.attrs(), "strides"), d = pair_attr(c.attrs(), "dilation");
      const std::string& p = c.attrs().s("padding");
      c.set(0, conv2d_backprop_input(c.g, dz, c.input(1), c.input_type(0).shape, s, d, p));
      c.set(1, conv2d_backprop_filter(c.g, c.input(0), dz, c.input_type(1).shape, s, d, p));
      c.set(2, sum_to(c.g, dz, c.input_type(2).shape));
    });

}  // namespace tandem::ops
