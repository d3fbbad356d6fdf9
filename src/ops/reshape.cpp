// reshape (a view: the CPU kernel is a copy only when buffers differ) and broadcast_to.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// Rows stay rows when each device's block of input rows is a whole number of output rows
// (flattening (B, H, W, C) to (B, HWC), or folding a sequence (B, T, D) into (BT, D)).
std::optional<Signature> reshape_layout(const graph::LayoutQuery& q) {
  const Layout& in = q.in[0];
  if (in.is_partial()) return Signature{q.in, {in}};
  const Shape &from = q.input_type(0).shape, &to = q.output_type().shape;
  if (!in.is_split() || in.axis != 0 || to.rank() < 1 || from[0] == 0 || to[0] == 0) return std::nullopt;
  const int64_t row_in = from.num_elements() / from[0], row_out = to.num_elements() / to[0];
  std::vector<int64_t> shares;
  for (int64_t s : in.shares) {
    if (row_out == 0 || s * row_in % row_out != 0) return std::nullopt;
    shares.push_back(s * row_in / row_out);
  }
  return Signature{q.in, {Layout::split(0, std::move(shares))}};
}

// Broadcasting along other axes keeps a split on axis 0; a partial sum broadcasts to one.
std::optional<Signature> broadcast_layout(const graph::LayoutQuery& q) {
  const Layout& in = q.in[0];
  if (in.is_partial()) return Signature{q.in, {in}};
  const Shape &from = q.input_type(0).shape, &to = q.output_type().shape;
  if (!in.is_split() || in.axis != 0 || from.rank() != to.rank() || from[0] != to[0]) return std::nullopt;
  return Signature{q.in, {in}};
}
}  // namespace

REGISTER_OP(
    .name = "reshape",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      Shape s(a.ints("shape"));
      if (s.num_elements() != in[0].shape.num_elements())
        throw ShapeError("reshape: cannot reshape " + in[0].shape.str() + " (" + std::to_string(in[0].shape.num_elements()) +
                         " values) to " + s.str() + " (" + std::to_string(s.num_elements()) + " values)");
      return one({s, in[0].dtype});
    },
    .grad = [](GradContext& c) { c.set(0, reshape(c.g, c.dy(), c.input_type(0).shape)); },
    .outputs_alias_inputs = true, .layout = reshape_layout, .localize = local_batch_extent("shape"));

REGISTER_OP(
    .name = "broadcast_to",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      Shape s(a.ints("shape"));
      if (broadcast_shapes(in[0].shape, s, "broadcast_to") != s)
        throw ShapeError("broadcast_to: cannot broadcast " + in[0].shape.str() + " to " + s.str());
      return one({s, in[0].dtype});
    },
    .grad = [](GradContext& c) { c.set(0, sum_to(c.g, c.dy(), c.input_type(0).shape)); }, .layout = broadcast_layout, .localize = local_batch_extent("shape"));

Value reshape(Graph& g, Value x, Shape shape) {
  if (g.type(x).shape == shape) return x;
  return g.add("reshape", {x}, {{"shape", shape.dims()}});
}

Value broadcast_to(Graph& g, Value x, Shape shape) {
  if (g.type(x).shape == shape) return x;
  return g.add("broadcast_to", {x}, {{"shape", shape.dims()}});
}

}  // namespace tandem::ops
