// Activations. Each gradient is a "<op>_grad" op taking (dy, x or y) so the kernel can fuse it.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> same_float(const Attrs&, const std::vector<TensorType>& in) {
  if (!is_float(in[0].dtype)) throw ShapeError(std::string("activation: expected a float tensor, got ") + dtype_name(in[0].dtype));
  return one(in[0]);
}

// relu, sigmoid and tanh differentiate cheaply from their output; gelu needs its input.
GradFn grad_from_output(const char* grad_op) {
  return [grad_op](GradContext& c) { c.set(0, c.g.add(grad_op, {c.dy(), c.output()})); };
}
}  // namespace

REGISTER_OP(.name = "relu", .infer = same_float, .grad = grad_from_output("relu_grad"), .layout = elementwise());
REGISTER_OP(.name = "sigmoid", .infer = same_float, .grad = grad_from_output("sigmoid_grad"), .layout = elementwise());
REGISTER_OP(.name = "tanh", .infer = same_float, .grad = grad_from_output("tanh_grad"), .layout = elementwise());
REGISTER_OP(.name = "gelu", .infer = same_float, .grad = [](GradContext& c) {
  c.set(0, c.g.add("gelu_grad", {c.dy(), c.input(0)}, {{"approximate", c.attrs().b("approximate")}}));
}, .layout = elementwise());
REGISTER_OP(.name = "relu_grad", .infer = same_float, .layout = elementwise());
REGISTER_OP(.name = "sigmoid_grad", .infer = same_float, .layout = elementwise());
REGISTER_OP(.name = "tanh_grad", .infer = same_float, .layout = elementwise());
REGISTER_OP(.name = "gelu_grad", .infer = same_float, .layout = elementwise());

Value relu(Graph& g, Value x) { return g.add("relu", {x}); }
Value sigmoid(Graph& g, Value x) { return g.add("sigmoid", {x}); }
Value tanh(Graph& g, Value x) { return g.add("tanh", {x}); }
Value gelu(Graph& g, Value x, bool approximate) { return g.add("gelu", {x}, {{"approximate", approximate}}); }

}  // namespace tandem::ops
