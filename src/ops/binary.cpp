// Elementwise add, sub, mul, div with NumPy broadcasting. Gradients sum over broadcast axes.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
InferFn infer_binary(const char* op) {
  return [op](const Attrs&, const std::vector<TensorType>& in) {
    if (in[0].dtype != in[1].dtype)
      throw ShapeError(std::string(op) + ": operand dtypes differ: " + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
    return one({broadcast_shapes(in[0].shape, in[1].shape, op), in[0].dtype});
  };
}

void set_reduced(GradContext& c, int i, Value grad) { c.set(i, sum_to(c.g, grad, c.input_type(i).shape)); }
}  // namespace

REGISTER_OP(.name = "add", .infer = infer_binary("add"), .grad = [](GradContext& c) {
  set_reduced(c, 0, c.dy());
  set_reduced(c, 1, c.dy());
}, .layout = elementwise({{0, 1}}));
REGISTER_OP(.name = "sub", .infer = infer_binary("sub"), .grad = [](GradContext& c) {
  set_reduced(c, 0, c.dy());
  set_reduced(c, 1, scale(c.g, c.dy(), -1.0));
}, .layout = elementwise({{0, 1}}));
REGISTER_OP(.name = "mul", .infer = infer_binary("mul"), .grad = [](GradContext& c) {
  set_reduced(c, 0, mul(c.g, c.dy(), c.input(1)));
  set_reduced(c, 1, mul(c.g, c.dy(), c.input(0)));
}, .layout = elementwise({{0}, {1}}));
REGISTER_OP(.name = "div", .infer = infer_binary("div"), .grad = [](GradContext& c) {
  // d(a/b)/da = 1/b ; d(a/b)/db = -a/b² = -(a/b)/b
  set_reduced(c, 0, div(c.g, c.dy(), c.input(1)));
  set_reduced(c, 1, scale(c.g, div(c.g, mul(c.g, c.dy(), c.output()), c.input(1)), -1.0));
}, .layout = elementwise({{0}}));

Value add(Graph& g, Value a, Value b) { return g.add("add", {a, b}); }
Value sub(Graph& g, Value a, Value b) { return g.add("sub", {a, b}); }
Value mul(Graph& g, Value a, Value b) { return g.add("mul", {a, b}); }
Value div(Graph& g, Value a, Value b) { return g.add("div", {a, b}); }

}  // namespace tandem::ops
