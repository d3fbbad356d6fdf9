// concat along one axis, and slice (one axis), which is concat's gradient.
#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::string shapes_str(const std::vector<TensorType>& in) {
  std::string s;
  for (const TensorType& t : in) s += (s.empty() ? "" : ", ") + t.shape.str();
  return "[" + s + "]";
}

std::vector<TensorType> infer_concat(const Attrs& a, const std::vector<TensorType>& in) {
  if (in.empty()) throw ShapeError("concat: expected at least one input");
  const int rank = in[0].shape.rank();
  if (rank == 0) throw ShapeError("concat: cannot concatenate scalars");
  const int axis = normalize_axis(a.i("axis"), rank, "concat");
  std::vector<int64_t> out = in[0].shape.dims();
  out[static_cast<std::size_t>(axis)] = 0;
  for (const TensorType& t : in) {
    if (t.dtype != in[0].dtype)
      throw ShapeError(std::string("concat: inputs must share a dtype, got ") + dtype_name(in[0].dtype) + " and " +
                       dtype_name(t.dtype));
    bool ok = t.shape.rank() == rank;
    for (int i = 0; ok && i < rank; ++i) ok = i == axis || t.shape[i] == in[0].shape[i];
    if (!ok)
      throw ShapeError("concat: shapes must match except along axis " + std::to_string(axis) + ", got " + shapes_str(in));
    out[static_cast<std::size_t>(axis)] += t.shape[axis];
  }
  return one({Shape(out), in[0].dtype});
}

std::vector<TensorType> infer_slice(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape& s = in[0].shape;
  const int axis = normalize_axis(a.i("axis"), s.rank(), "slice");
  const int64_t begin = a.i("begin"), size = a.i("size");
  if (begin < 0 || size < 0 || begin + size > s[axis])
    throw ShapeError("slice: [" + std::to_string(begin) + ", " + std::to_string(begin + size) + ") is out of range for axis " +
                     std::to_string(axis) + " of " + s.str());
  std::vector<int64_t> out = s.dims();
  out[static_cast<std::size_t>(axis)] = size;
  return one({Shape(out), in[0].dtype});
}
}  // namespace

namespace {
// Concatenating along another axis keeps a split on axis 0; partial sums concatenate as they are.
std::optional<graph::Signature> concat_layout(const graph::LayoutQuery& q) {
  RowsRule rule{.axis_attr = "axis"};
  rule.linear.emplace_back();
  for (int i = 0; i < static_cast<int>(q.in.size()); ++i) rule.batch_inputs.push_back(i), rule.linear[0].push_back(i);
  return rows(rule)(q);
}
}  // namespace

REGISTER_OP(
    .name = "concat", .infer = infer_concat, .grad = [](GradContext& c) {
      const std::size_t n = c.node().inputs.size();
      const int axis = normalize_axis(c.attrs().i("axis"), c.input_type(0).shape.rank(), "concat");
      std::vector<int64_t> sizes;
      for (std::size_t i = 0; i < n; ++i) sizes.push_back(c.input_type(static_cast<int>(i)).shape[axis]);
      int64_t begin = 0;
      for (std::size_t i = 0; i < n; ++i) {
        c.set(static_cast<int>(i), slice(c.g, c.dy(), axis, begin, sizes[i]));
        begin += sizes[i];
      }
    }, .layout = concat_layout);

REGISTER_OP(
    .name = "slice", .infer = infer_slice, .grad = [](GradContext& c) {
      // The slice's gradient is dy put back in place between zeros.
      const TensorType in = c.input_type(0);
      const int axis = normalize_axis(c.attrs().i("axis"), in.shape.rank(), "slice");
      const int64_t begin = c.attrs().i("begin"), size = c.attrs().i("size");
      const int64_t after = in.shape[axis] - begin - size;
      std::vector<Value> parts;
      auto zeros = [&](int64_t n) {
        std::vector<int64_t> dims = in.shape.dims();
        dims[static_cast<std::size_t>(axis)] = n;
        return fill(c.g, {Shape(dims), in.dtype}, 0.0);
      };
      if (begin > 0) parts.push_back(zeros(begin));
      parts.push_back(c.dy());
      if (after > 0) parts.push_back(zeros(after));
      c.set(0, parts.size() == 1 ? c.dy() : concat(c.g, parts, axis));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}}, .axis_attr = "axis"}));

Value concat(Graph& g, const std::vector<Value>& xs, int64_t axis) {
  if (xs.size() == 1) return xs[0];
  return g.add("concat", xs, {{"axis", axis}});
}

Value slice(Graph& g, Value x, int64_t axis, int64_t begin, int64_t size) {
  const Shape& s = g.type(x).shape;
  const int a = normalize_axis(axis, s.rank(), "slice");
  if (begin == 0 && size == s[a]) return x;
  return g.add("slice", {x}, {{"axis", int64_t{a}}, {"begin", begin}, {"size", size}});
}

}  // namespace tandem::ops
