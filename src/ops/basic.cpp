// Sources and trivial ops: placeholders, variables, constants, scaling and casts; shape helpers.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16; }

int normalize_axis(int64_t axis, int rank, const char* op) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) {
    const int ia = a.rank() - r + i, ib = b.rank() - r + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + a.str() + " and " + b.str() + " cannot be broadcast together");
    out[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(out);
}

namespace {
TensorType type_from_attrs(const Attrs& a) {
  return {Shape(a.ints("shape")), static_cast<DType>(a.i("dtype"))};
}

void check_float(const TensorType& t, const char* op) {
  if (!is_float(t.dtype)) throw ShapeError(std::string(op) + ": expected a float tensor, got " + dtype_name(t.dtype));
}
}  // namespace

REGISTER_OP(.name = "placeholder", .infer = [](const Attrs& a, const auto&) { return one(type_from_attrs(a)); },
            .source = Source::Feed);
REGISTER_OP(.name = "variable", .infer = [](const Attrs& a, const auto&) { return one(type_from_attrs(a)); },
            .source = Source::Variable);
REGISTER_OP(.name = "fill", .infer = [](const Attrs& a, const auto&) { return one(type_from_attrs(a)); },
            .zero_grad = true);

REGISTER_OP(
    .name = "scale",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      check_float(in[0], "scale");
      return one(in[0]);
    },
    .grad = [](GradContext& c) { c.set(0, scale(c.g, c.dy(), c.attrs().f("factor"))); }, .layout = elementwise({{0}}));

REGISTER_OP(
    .name = "cast",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      return one({in[0].shape, static_cast<DType>(a.i("dtype"))});
    },
    .grad = [](GradContext& c) {
      // Into the input's dtype; a float32 weight's 16-bit copy gets its gradient in float32
      // already (autodiff widens it, ops/widened.h), so that cast is none.
      if (is_float(c.input_type(0).dtype)) c.set(0, cast(c.g, c.dy(), c.input_type(0).dtype));
    }, .layout = elementwise());

Value fill(Graph& g, const TensorType& t, double value) {
  return g.add("fill", {}, {{"shape", t.shape.dims()}, {"dtype", static_cast<int64_t>(t.dtype)}, {"value", value}});
}

Value scale(Graph& g, Value x, double factor) { return g.add("scale", {x}, {{"factor", factor}}); }

Value cast(Graph& g, Value x, DType to) {
  if (g.type(x).dtype == to) return x;
  return g.add("cast", {x}, {{"dtype", static_cast<int64_t>(to)}});
}

}  // namespace tandem::ops
