// transpose: a permutation of axes. Its gradient is the inverse permutation.
#include <algorithm>

#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::string perm_str(const std::vector<int64_t>& p) {
  std::string s;
  for (int64_t v : p) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return "(" + s + ")";
}

std::vector<TensorType> infer_transpose(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape& s = in[0].shape;
  const std::vector<int64_t> perm = a.ints("perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(perm.size()) == s.rank();
  for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
  if (!ok) throw ShapeError("transpose: " + perm_str(perm) + " is not a permutation of the axes of " + s.str());
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(s[static_cast<int>(p)]);
  return one({Shape(out), in[0].dtype});
}

// A split moves with its axis; partial sums permute as they are.
std::optional<graph::Signature> transpose_layout(const graph::LayoutQuery& q) {
  const graph::Layout& in = q.in[0];
  if (in.is_partial()) return graph::Signature{q.in, {in}};
  if (!in.is_split()) return std::nullopt;
  const std::vector<int64_t> perm = q.node.attrs.ints("perm");  // output axis b is input axis perm[b]
  const auto b = std::find(perm.begin(), perm.end(), in.axis) - perm.begin();
  return graph::Signature{q.in, {graph::Layout::split(static_cast<int>(b), in.shares)}};
}
}  // namespace

REGISTER_OP(
    .name = "transpose", .infer = infer_transpose, .grad = [](GradContext& c) {
      const std::vector<int64_t> perm = c.attrs().ints("perm");
      std::vector<int64_t> inverse(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<int64_t>(i);
      c.set(0, transpose(c.g, c.dy(), inverse));
    }, .layout = transpose_layout);

Value transpose(Graph& g, Value x, std::vector<int64_t> perm) {
  const int rank = g.type(x).shape.rank();
  for (int64_t& p : perm)
    if (p < 0) p += rank;  // NumPy accepts negative axes
  bool identity = static_cast<int>(perm.size()) == rank;
  for (std::size_t i = 0; identity && i < perm.size(); ++i) identity = perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return g.add("transpose", {x}, {{"perm", std::move(perm)}});
}

}  // namespace tandem::ops
