// reshape (a view: the CPU kernel is a copy only when buffers differ) and broadcast_to.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// A split axis stays split where the output has an axis that starts at the same outer block
// (the product of the axes before it is the same) and each device's block is a whole number of
// that axis's elements: rows stay rows when flattening (B, H, W, C) to (B, HWC) or folding
// (B, T, D) into (BT, D); attention's heads stay split when (B, T, H·D) becomes (B, T, H, D).
std::optional<Signature> reshape_layout(const graph::LayoutQuery& q) {
  const Layout& in = q.in[0];
  if (in.is_partial()) return Signature{q.in, {in}};
  const Shape &from = q.input_type(0).shape, &to = q.output_type().shape;
  if (!in.is_split() || to.rank() < 1 || from.num_elements() == 0) return std::nullopt;
  int64_t outer = 1, inner_in = 1;
  for (int i = 0; i < in.axis; ++i) outer *= from[i];
  for (int i = in.axis + 1; i < from.rank(); ++i) inner_in *= from[i];
  int64_t prefix = 1;
  for (int b = 0; b < to.rank(); prefix *= to[b], ++b) {
    if (prefix != outer || to[b] == 1) continue;
    const int64_t inner_out = to.num_elements() / (prefix * to[b]);
    std::vector<int64_t> shares;
    for (int64_t s : in.shares) {
      if (s * inner_in % inner_out != 0) return std::nullopt;
      shares.push_back(s * inner_in / inner_out);
    }
    return Signature{q.in, {Layout::split(b, std::move(shares))}};
  }
  return std::nullopt;
}

// Broadcasting along other axes keeps a split of an axis the output has whole as it is; a
// partial sum broadcasts to one.
std::optional<Signature> broadcast_layout(const graph::LayoutQuery& q) {
  const Layout& in = q.in[0];
  if (in.is_partial()) return Signature{q.in, {in}};
  const Shape &from = q.input_type(0).shape, &to = q.output_type().shape;
  if (!in.is_split() || from.rank() != to.rank() || from[in.axis] != to[in.axis]) return std::nullopt;
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
