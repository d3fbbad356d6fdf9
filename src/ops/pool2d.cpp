// max_pool2d and avg_pool2d over channels-last images, with their gradient ops.
// max_pool2d_grad(x, dy) routes each window's gradient to the window's first maximal element in
// row-major window order (top-most row, then left-most column); padded positions never win.
// avg_pool2d_grad(dy) spreads each window's gradient evenly over its real (unpadded) elements.
#include "ops/conv.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
Attrs pool_attrs(Pair pool, Pair strides, const std::string& padding) {
  return {{"pool", std::vector<int64_t>{pool[0], pool[1]}},
          {"strides", std::vector<int64_t>{strides[0], strides[1]}},
          {"padding", padding}};
}

Shape pool_output(const Attrs& a, const Shape& x, const char* op) {
  const std::vector<int64_t> pool = a.ints("pool");
  if (pool.size() != 2) throw ShapeError(std::string(op) + ": pool must be two integers");
  const Window2D w = window2d(x, pool[0], pool[1], a, op);
  return Shape{w.n, w.oh, w.ow, w.c};
}

InferFn infer_pool(const char* op) {
  return [op](const Attrs& a, const std::vector<TensorType>& in) {
    if (!is_float(in[0].dtype)) throw ShapeError(std::string(op) + ": expected a float tensor");
    return one({pool_output(a, in[0].shape, op), in[0].dtype});
  };
}
}  // namespace

REGISTER_OP(.name = "max_pool2d", .infer = infer_pool("max_pool2d"), .grad = [](GradContext& c) {
  c.set(0, c.g.add("max_pool2d_grad", {c.input(0), c.dy()}, c.attrs()));
}, .layout = rows({.batch_inputs = {0}}));

// Inputs (x, dy) -> dx. Not differentiable itself (no second derivatives through max pooling).
// Attr "relu" (set by the fusion pass, compile/fusion.h, when x is a relu's output): dx is
// relu_grad(dx, x) as well, zero wherever x <= 0.
REGISTER_OP(
    .name = "max_pool2d_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const Shape y = pool_output(a, in[0].shape, "max_pool2d_grad");
      if (in[1].shape != y || in[1].dtype != in[0].dtype)
        throw ShapeError("max_pool2d_grad: expected an output gradient of shape " + y.str() + ", got " + in[1].shape.str());
      return one(in[0]);
    }, .layout = rows({.batch_inputs = {0, 1}}));

REGISTER_OP(.name = "avg_pool2d", .infer = infer_pool("avg_pool2d"), .grad = [](GradContext& c) {
  Attrs a = c.attrs();
  a.set("input_shape", c.input_type(0).shape.dims());
  c.set(0, c.g.add("avg_pool2d_grad", {c.dy()}, std::move(a)));
}, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}));

// Input dy, attr "input_shape" -> dx. Linear in dy; its adjoint is avg_pool2d itself.
REGISTER_OP(
    .name = "avg_pool2d_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const Shape x(a.ints("input_shape"));
      const Shape y = pool_output(a, x, "avg_pool2d_grad");
      if (in[0].shape != y)
        throw ShapeError("avg_pool2d_grad: expected an output gradient of shape " + y.str() + ", got " + in[0].shape.str());
      return one({x, in[0].dtype});
    },
    .grad = [](GradContext& c) { c.set(0, c.g.add("avg_pool2d", {c.dy()}, c.attrs())); }, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}), .localize = local_batch_extent("input_shape"));

Value max_pool2d(Graph& g, Value x, Pair pool, Pair strides, const std::string& padding) {
  return g.add("max_pool2d", {x}, pool_attrs(pool, strides, padding));
}
Value avg_pool2d(Graph& g, Value x, Pair pool, Pair strides, const std::string& padding) {
  return g.add("avg_pool2d", {x}, pool_attrs(pool, strides, padding));
}

}  // namespace tandem::ops
