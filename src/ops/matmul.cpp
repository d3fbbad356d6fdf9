// matmul: (M,K)·(K,N) with optional transposes; a leading batch of rows on the left operand is
// folded into M, so Dense works on (batch, ..., in).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/widened.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> infer_matmul(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape &x = in[0].shape, &w = in[1].shape;
  const bool ta = a.b("transpose_a"), tb = a.b("transpose_b");
  if (in[0].dtype != in[1].dtype || !is_float(in[0].dtype))
    throw ShapeError(std::string("matmul: operands must share a float dtype, got ") + dtype_name(in[0].dtype) + " and " +
                     dtype_name(in[1].dtype));
  if (w.rank() != 2 || x.rank() < 2 || (ta && x.rank() != 2))
    throw ShapeError("matmul: expected a matrix right operand and a left operand of rank >= 2, got " + x.str() +
                     " and " + w.str());
  const int64_t k_left = ta ? x[0] : x.back();
  const int64_t k_right = tb ? w[1] : w[0];
  if (k_left != k_right)
    throw ShapeError("matmul: inner dimensions differ: " + x.str() + (ta ? "ᵀ" : "") + " · " + w.str() + (tb ? "ᵀ" : ""));
  std::vector<int64_t> out = x.dims();
  if (ta) out = {x[1], 0};
  out.back() = tb ? w[0] : w[1];
  // output_dtype float32 on 16-bit operands: the float32 sums kept, not rounded (a weight's gradient).
  const DType out_dtype = output_dtype(a, in[0].dtype, "matmul");
  return one({Shape(out), out_dtype});
}

// In (M, K)·(K, N) terms: a split of the left operand's M axes (rows of the batch) splits the
// product's rows; a split of the right operand's N axis (a column-parallel weight) splits its
// columns; a split of K on either side (a row-parallel weight, a weight's gradient xᵀ·dy over
// split rows) leaves each device a partial sum. A split right operand decides: weights stay put.
std::optional<graph::Signature> matmul_layout(const graph::LayoutQuery& q) {
  using graph::Layout;
  const bool ta = q.node.attrs.b("transpose_a"), tb = q.node.attrs.b("transpose_b");
  const graph::Layout &a = q.in[0], &b = q.in[1];
  const int a_rank = q.input_type(0).shape.rank(), out_last = q.output_type().shape.rank() - 1;
  const int a_k = ta ? 0 : a_rank - 1, b_k = tb ? 1 : 0, b_n = tb ? 0 : 1;
  const bool same_k = q.input_type(0).shape[a_k] == q.input_type(1).shape[b_k];
  auto contract = [&](const std::vector<int64_t>& shares) {
    return graph::Signature{{Layout::split(a_k, shares), Layout::split(b_k, shares)}, {Layout::partial()}};
  };
  if (b.is_split() && b.axis == b_n) return graph::Signature{{Layout::replicated(), b}, {Layout::split(out_last, b.shares)}};
  if (b.is_split() && same_k) return contract(b.shares);
  if (a.is_split() && a.axis == a_k && same_k) return contract(a.shares);
  if (a.is_split() && !b.is_split()) {  // an M axis: with ta the only one, axis 1, is the product's rows
    const int out_axis = ta ? 0 : a.axis;
    return graph::Signature{{a, Layout::replicated()}, {Layout::split(out_axis, a.shares)}};
  }
  return partial_signature(q, {{0}, {1}});
}
}  // namespace

REGISTER_OP(
    .name = "matmul", .infer = infer_matmul,
    .grad = [](GradContext& c) {
      const Value dy = cast(c.g, c.dy(), c.input_type(0).dtype);  // a wide product's gradient in its operands' dtype
      const auto [da, db] = matmul_gradients(c.g, c.input(0), c.input(1), dy, c.attrs().b("transpose_a"), c.attrs().b("transpose_b"));
      c.set(0, da);
      c.set(1, db);
    }, .layout = matmul_layout);

std::pair<Value, Value> matmul_gradients(Graph& g, Value a, Value b, Value dy, bool ta, bool tb) {
  const Shape a_shape = g.type(a).shape;
  // Fold leading dims of a left operand of rank > 2 into rows: (B, ..., K) -> (B*..., K).
  if (a_shape.rank() > 2) {
    const int64_t k = a_shape.back();
    a = reshape(g, a, {a_shape.num_elements() / k, k});
    const Shape& ys = g.type(dy).shape;
    dy = reshape(g, dy, {ys.num_elements() / ys.back(), ys.back()});
  }
  Value da = ta ? matmul(g, b, dy, tb, true) : matmul(g, dy, b, false, !tb);
  const Value db = tb ? matmul(g, dy, a, true, ta) : matmul(g, a, dy, !ta, false);
  if (a_shape.rank() > 2) da = reshape(g, da, a_shape);
  return {da, db};
}

Value matmul(Graph& g, Value a, Value b, bool ta, bool tb) {
  return g.add("matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}

}  // namespace tandem::ops
