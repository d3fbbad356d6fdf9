// What the fused ops share: the activation attr, its gradient, and the shape rule of a product
// with a bias (ops/fused_activation.h).
#include "ops/fused_activation.h"

#include "tandem/errors.h"

namespace tandem::ops {

bool fusable_activation(const std::string& op) { return op == "relu" || op == "sigmoid" || op == "tanh"; }

void check_fused_activation(const Attrs& attrs, const char* op) {
  const std::string& a = attrs.s("activation");
  if (a != "linear" && !fusable_activation(a))
    throw ShapeError(std::string(op) + ": activation must be linear, relu, sigmoid or tanh, got '" + a + "'");
}

Value activation_grad(Graph& g, const std::string& activation, Value dy, Value y) {
  return activation == "linear" ? dy : g.add(activation + "_grad", {dy, y});
}

std::vector<TensorType> infer_fused_product(const char* op, const char* product, const Attrs& attrs, const std::vector<TensorType>& in) {
  check_fused_activation(attrs, op);
  std::vector<TensorType> out = find(product).infer(attrs, {in[0], in[1]});
  if (in[2].shape != Shape{out[0].shape.back()} || in[2].dtype != out[0].dtype)
    throw ShapeError(std::string(op) + ": expected a bias of shape (" + std::to_string(out[0].shape.back()) + ",) and dtype " +
                     dtype_name(out[0].dtype) + " for the output " + out[0].shape.str() + ", got " + in[2].shape.str() + " " +
                     dtype_name(in[2].dtype));
  return out;
}

}  // namespace tandem::ops
