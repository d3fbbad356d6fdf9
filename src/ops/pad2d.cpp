// pad2d (zeros around H and W of a channels-last tensor) and crop2d, each the other's adjoint.
#include "ops/conv.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// attr `key` = {top, bottom, left, right}; sign +1 grows H and W (pad), −1 shrinks them (crop).
InferFn infer_border(const char* op, const char* key, int64_t sign) {
  return [=](const Attrs& a, const std::vector<TensorType>& in) {
    const Shape& x = in[0].shape;
    if (x.rank() != 4)
      throw ShapeError(std::string(op) + ": expected an input of rank 4 (batch, height, width, channels), got " + x.str());
    const std::vector<int64_t> p = a.ints(key);
    if (p.size() != 4 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0)
      throw ShapeError(std::string(op) + ": " + key + " must be four non-negative integers (top, bottom, left, right)");
    const int64_t h = x[1] + sign * (p[0] + p[1]), w = x[2] + sign * (p[2] + p[3]);
    if (h <= 0 || w <= 0)
      throw ShapeError(std::string(op) + ": cropping (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " +
                       std::to_string(p[2]) + ", " + std::to_string(p[3]) + ") leaves nothing of " + x.str());
    return one({Shape{x[0], h, w, x[3]}, in[0].dtype});
  };
}
}  // namespace

REGISTER_OP(.name = "pad2d", .infer = infer_border("pad2d", "padding", 1), .grad = [](GradContext& c) {
  const std::vector<int64_t> p = c.attrs().ints("padding");
  c.set(0, crop2d(c.g, c.dy(), {p[0], p[1], p[2], p[3]}));
}, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}));
REGISTER_OP(.name = "crop2d", .infer = infer_border("crop2d", "cropping", -1), .grad = [](GradContext& c) {
  const std::vector<int64_t> p = c.attrs().ints("cropping");
  c.set(0, pad2d(c.g, c.dy(), {p[0], p[1], p[2], p[3]}));
}, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}));

Value pad2d(Graph& g, Value x, std::array<int64_t, 4> p) {
  return g.add("pad2d", {x}, {{"padding", std::vector<int64_t>(p.begin(), p.end())}});
}
Value crop2d(Graph& g, Value x, std::array<int64_t, 4> p) {
  return g.add("crop2d", {x}, {{"cropping", std::vector<int64_t>(p.begin(), p.end())}});
}

}  // namespace tandem::ops
