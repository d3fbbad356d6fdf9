// resize2d and its adjoint resize2d_grad (each the other's gradient): both are linear in their
// input, so the gradient of one is the other applied to the output gradient.
#include <cmath>
#include <string>

#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/resize.h"
#include "tandem/errors.h"

namespace tandem::ops {

ResizeAxis resize_axis(int64_t in, int64_t out, ResizeMethod method) {
  ResizeAxis a;
  a.index.resize(static_cast<std::size_t>(2 * out));
  a.weight.resize(static_cast<std::size_t>(2 * out));
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = 0, i1 = 0;
    double w1 = 0;
    if (method == ResizeMethod::nearest) {
      // JAX: floor((arange(out, float32) + 0.5) * in / out), each step in float32.
      const float f = (static_cast<float>(o) + 0.5f) * static_cast<float>(in) / static_cast<float>(out);
      i0 = i1 = std::min<int64_t>(static_cast<int64_t>(std::floor(f)), in - 1);
    } else {
      const double f = (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
      if (f <= 0) {
        i0 = i1 = 0;
      } else if (f >= static_cast<double>(in - 1)) {
        i0 = i1 = in - 1;
      } else {
        i0 = static_cast<int64_t>(std::floor(f));
        i1 = i0 + 1;
        w1 = f - static_cast<double>(i0);
      }
    }
    a.index[2 * o] = i0, a.index[2 * o + 1] = i1;
    a.weight[2 * o] = 1 - w1, a.weight[2 * o + 1] = w1;
  }
  // The reverse lists, in output order for each input (a fixed summation order).
  std::vector<std::vector<std::pair<int64_t, double>>> readers(static_cast<std::size_t>(in));
  for (int64_t t = 0; t < 2 * out; ++t)
    if (a.weight[t] != 0) readers[a.index[t]].push_back({t / 2, a.weight[t]});
  a.start.push_back(0);
  for (const auto& r : readers) {
    for (const auto& [o, w] : r) a.source.push_back(o), a.share.push_back(w);
    a.start.push_back(static_cast<int64_t>(a.source.size()));
  }
  return a;
}

namespace {
InferFn infer_resize(const char* op, const char* height, const char* width) {
  return [=](const Attrs& a, const std::vector<TensorType>& in) {
    const Shape& x = in[0].shape;
    if (x.rank() != 4)
      throw ShapeError(std::string(op) + ": expected an input of rank 4 (batch, height, width, channels), got " + x.str());
    if (!is_float(in[0].dtype)) throw ShapeError(std::string(op) + ": expected a float input, got " + dtype_name(in[0].dtype));
    const int64_t h = a.i(height), w = a.i(width), method = a.i("method");
    if (h <= 0 || w <= 0)
      throw ShapeError(std::string(op) + ": the size must be positive, got (" + std::to_string(h) + ", " + std::to_string(w) + ")");
    if (x[1] <= 0 || x[2] <= 0) throw ShapeError(std::string(op) + ": the input's height and width must be positive, got " + x.str());
    if (method != 0 && method != 1) throw ShapeError(std::string(op) + ": method must be 0 (nearest) or 1 (bilinear)");
    return one({Shape{x[0], h, w, x[3]}, in[0].dtype});
  };
}
ResizeMethod method_of(const Attrs& a) { return static_cast<ResizeMethod>(a.i("method")); }
}  // namespace

REGISTER_OP(.name = "resize2d", .infer = infer_resize("resize2d", "height", "width"), .grad = [](GradContext& c) {
  const Shape& x = c.g.type(c.input(0)).shape;
  c.set(0, resize2d_grad(c.g, c.dy(), x[1], x[2], method_of(c.attrs())));
}, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}));

// Attributes in_height/in_width: the size of the resized images, which the output takes;
// height/width: the size they were resized to (dy's).
REGISTER_OP(.name = "resize2d_grad", .infer = infer_resize("resize2d_grad", "in_height", "in_width"), .grad = [](GradContext& c) {
  const Shape& dy = c.g.type(c.input(0)).shape;
  c.set(0, resize2d(c.g, c.dy(), dy[1], dy[2], method_of(c.attrs())));
}, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}));

Value resize2d(Graph& g, Value x, int64_t height, int64_t width, ResizeMethod method) {
  return g.add("resize2d", {x}, {{"height", height}, {"width", width}, {"method", static_cast<int64_t>(method)}});
}
Value resize2d_grad(Graph& g, Value dy, int64_t in_height, int64_t in_width, ResizeMethod method) {
  return g.add("resize2d_grad", {dy}, {{"in_height", in_height}, {"in_width", in_width}, {"method", static_cast<int64_t>(method)}});
}

}  // namespace tandem::ops
