// batch_matmul: one matrix product per item of identical leading (batch) dimensions.
#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> infer_batch_matmul(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape &x = in[0].shape, &y = in[1].shape;
  const bool ta = a.b("transpose_a"), tb = a.b("transpose_b");
  if (in[0].dtype != in[1].dtype || !is_float(in[0].dtype))
    throw ShapeError(std::string("batch_matmul: operands must share a float dtype, got ") + dtype_name(in[0].dtype) + " and " +
                     dtype_name(in[1].dtype));
  const std::string desc = x.str() + (ta ? "ᵀ" : "") + " · " + y.str() + (tb ? "ᵀ" : "");
  if (x.rank() < 2 || x.rank() != y.rank())
    throw ShapeError("batch_matmul: expected operands of equal rank >= 2, got " + desc);
  const int r = x.rank();
  for (int i = 0; i < r - 2; ++i)
    if (x[i] != y[i]) throw ShapeError("batch_matmul: batch dimensions differ: " + desc);
  const int64_t m = ta ? x[-1] : x[-2], k_left = ta ? x[-2] : x[-1];
  const int64_t k_right = tb ? y[-1] : y[-2], n = tb ? y[-2] : y[-1];
  if (k_left != k_right) throw ShapeError("batch_matmul: inner dimensions differ: " + desc);
  std::vector<int64_t> out = x.dims();
  out[static_cast<std::size_t>(r - 2)] = m;
  out[static_cast<std::size_t>(r - 1)] = n;
  return one({Shape(out), in[0].dtype});
}
}  // namespace

REGISTER_OP(
    .name = "batch_matmul", .infer = infer_batch_matmul, .grad = [](GradContext& c) {
      // C = op(A)·op(B): dop(A) = dC·op(B)ᵀ and dop(B) = op(A)ᵀ·dC, transposed back where op did.
      const bool ta = c.attrs().b("transpose_a"), tb = c.attrs().b("transpose_b");
      const Value a = c.input(0), b = c.input(1), dy = c.dy();
      c.set(0, ta ? batch_matmul(c.g, b, dy, tb, true) : batch_matmul(c.g, dy, b, false, !tb));
      c.set(1, tb ? batch_matmul(c.g, dy, a, true, ta) : batch_matmul(c.g, a, dy, !ta, false));
    }, .layout = rows({.batch_inputs = {0, 1}, .linear = {{0}, {1}}, .min_rank = 3, .leading = 2}));

Value batch_matmul(Graph& g, Value a, Value b, bool ta, bool tb) {
  return g.add("batch_matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}

}  // namespace tandem::ops
