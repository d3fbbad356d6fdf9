// reduce_sum, reduce_mean and reduce_max over a set of axes, and sum_to (the adjoint of broadcasting).
#include <algorithm>

#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<int64_t> normalized_axes(const Attrs& a, int rank, const char* op) {
  std::vector<int64_t> axes;
  for (int64_t ax : a.ints("axes")) axes.push_back(normalize_axis(ax, rank, op));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return Shape(out);
}

InferFn infer_reduce(const char* op) {
  return [op](const Attrs& a, const std::vector<TensorType>& in) {
    return one({reduced_shape(in[0].shape, normalized_axes(a, in[0].shape.rank(), op), a.b("keepdims")), in[0].dtype});
  };
}

// Gradient of a reduction: put the reduced axes back as size 1, then broadcast.
Value spread(GradContext& c, double factor) {
  const Shape in = c.input_type(0).shape;
  Shape kept = reduced_shape(in, normalized_axes(c.attrs(), in.rank(), "reduce"), true);
  Value dy = factor == 1.0 ? c.dy() : scale(c.g, c.dy(), factor);
  return broadcast_to(c.g, reshape(c.g, dy, kept), in);
}

// Reducing other axes keeps a split on axis 0; summing over it leaves each device a partial sum.
// (A mean over split rows would need the global row count: it falls back to replicated rows.)
// A split along a kept axis stays split (along that axis's place in the output); sums over the
// split axis are partial, means over it are not this rule's.
graph::LayoutFn reduce_layout(bool sum) {
  return [sum](const graph::LayoutQuery& q) -> std::optional<Signature> {
    const Layout& in = q.in[0];
    if (in.is_partial()) return Signature{q.in, {in}};
    if (!in.is_split()) return std::nullopt;
    const std::vector<int64_t> axes = normalized_axes(q.node.attrs, q.input_type(0).shape.rank(), q.node.op.c_str());
    if (std::find(axes.begin(), axes.end(), in.axis) != axes.end()) {
      if (!sum) return std::nullopt;
      return Signature{q.in, {Layout::partial()}};
    }
    int axis = in.axis;
    if (!q.node.attrs.b("keepdims"))
      axis -= static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return a < in.axis; }));
    return Signature{q.in, {Layout::split(axis, in.shares)}};
  };
}
}  // namespace

REGISTER_OP(.name = "reduce_sum", .infer = infer_reduce("reduce_sum"), .grad = [](GradContext& c) { c.set(0, spread(c, 1.0)); }, .layout = reduce_layout(true));
REGISTER_OP(.name = "reduce_mean", .infer = infer_reduce("reduce_mean"), .grad = [](GradContext& c) {
  const Shape& in = c.input_type(0).shape;
  const Shape& out = c.g.type(c.output()).shape;
  c.set(0, spread(c, static_cast<double>(out.num_elements()) / static_cast<double>(in.num_elements())));
}, .layout = reduce_layout(false));

// The gradient of a maximum is shared evenly among the elements equal to it, as JAX shares it.
REGISTER_OP(.name = "reduce_max", .infer = infer_reduce("reduce_max"), .grad = [](GradContext& c) {
  const Shape in = c.input_type(0).shape;
  const std::vector<int64_t> axes = normalized_axes(c.attrs(), in.rank(), "reduce_max");
  const Shape kept = reduced_shape(in, axes, true);
  const Value winners = compare(c.g, "equal_to", c.input(0), broadcast_to(c.g, reshape(c.g, c.output(), kept), in));
  const Value share = div(c.g, winners, reduce_sum(c.g, winners, axes, true));
  c.set(0, mul(c.g, share, spread(c, 1.0)));
}, .layout = reduce_layout(false));

Value reduce_sum(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims) {
  return g.add("reduce_sum", {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}
Value reduce_mean(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims) {
  return g.add("reduce_mean", {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}

Value reduce_max(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims) {
  return g.add("reduce_max", {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}

Value sum_to(Graph& g, Value x, Shape shape) {
  const Shape in = g.type(x).shape;
  if (in == shape) return x;
  std::vector<int64_t> axes;
  const int lead = in.rank() - shape.rank();
  for (int i = 0; i < in.rank(); ++i)
    if (i < lead || (shape[i - lead] == 1 && in[i] != 1)) axes.push_back(i);
  return reshape(g, reduce_sum(g, x, axes, false), shape);
}

}  // namespace tandem::ops
