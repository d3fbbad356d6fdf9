// Elementwise math for user code (the public tandem::ops): exp, log, sqrt, square, abs and sign.
// Each gradient is written with ops that already have kernels, so no *_grad kernels are needed.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
InferFn same_float(const char* op) {
  return [op](const Attrs&, const std::vector<TensorType>& in) {
    if (!is_float(in[0].dtype)) throw ShapeError(std::string(op) + ": expected a float tensor, got " + dtype_name(in[0].dtype));
    return one(in[0]);
  };
}
}  // namespace

REGISTER_OP(.name = "exp", .infer = same_float("exp"), .grad = [](GradContext& c) { c.set(0, mul(c.g, c.dy(), c.output())); },
            .layout = elementwise());
REGISTER_OP(.name = "log", .infer = same_float("log"), .grad = [](GradContext& c) { c.set(0, div(c.g, c.dy(), c.input(0))); },
            .layout = elementwise());
// d√x = 1 / (2√x)
REGISTER_OP(.name = "sqrt", .infer = same_float("sqrt"), .grad = [](GradContext& c) {
  c.set(0, scale(c.g, div(c.g, c.dy(), c.output()), 0.5));
}, .layout = elementwise());
REGISTER_OP(.name = "square", .infer = same_float("square"), .grad = [](GradContext& c) {
  c.set(0, mul(c.g, c.dy(), scale(c.g, c.input(0), 2.0)));
}, .layout = elementwise());
// |x|' = sign(x), 0 at 0 as in PyTorch and JAX.
REGISTER_OP(.name = "abs", .infer = same_float("abs"), .grad = [](GradContext& c) {
  c.set(0, mul(c.g, c.dy(), sign(c.g, c.input(0))));
}, .layout = elementwise());
REGISTER_OP(.name = "sign", .infer = same_float("sign"), .zero_grad = true, .layout = elementwise());

Value exp(Graph& g, Value x) { return g.add("exp", {x}); }
Value log(Graph& g, Value x) { return g.add("log", {x}); }
Value sqrt(Graph& g, Value x) { return g.add("sqrt", {x}); }
Value square(Graph& g, Value x) { return g.add("square", {x}); }
Value abs(Graph& g, Value x) { return g.add("abs", {x}); }
Value sign(Graph& g, Value x) { return g.add("sign", {x}); }

}  // namespace tandem::ops
