// fused_matmul(a, b, bias) = activation(matmul(a, b) + bias), attrs transpose_a, transpose_b and
// activation (ops/fused_activation.h): one kernel whose GEMM applies the bias and the activation to
// each block of the product while it is still in cache. Made by the fusion pass (compile/fusion.h)
// from matmul → bias_add → relu | sigmoid | tanh, or matmul → bias_add ("linear").
#include "ops/fused_activation.h"
#include "ops/ops.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "fused_matmul",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) { return infer_fused_product("fused_matmul", "matmul", a, in); },
    .grad = [](GradContext& c) {
      const Value dz = activation_grad(c.g, c.attrs().s("activation"), c.dy(), c.output());
      const auto [da, db] = matmul_gradients(c.g, c.input(0), c.input(1), dz, c.attrs().b("transpose_a"), c.attrs().b("transpose_b"));
      c.set(0, da);
      c.set(1, db);
      c.set(2, sum_to(c.g, dz, c.input_type(2).shape));
    });

}  // namespace tandem::ops
