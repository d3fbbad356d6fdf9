// Comparisons (1 where true, 0 where false, in the operands' float dtype), maximum and minimum,
// and select — the op behind where(cond, x, y). All broadcast like NumPy.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
InferFn infer_float_binary(const char* op) {
  return [op](const Attrs&, const std::vector<TensorType>& in) {
    if (in[0].dtype != in[1].dtype)
      throw ShapeError(std::string(op) + ": operand dtypes differ: " + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
    if (!is_float(in[0].dtype)) throw ShapeError(std::string(op) + ": expected float operands, got " + dtype_name(in[0].dtype));
    return one({broadcast_shapes(in[0].shape, in[1].shape, op), in[0].dtype});
  };
}

void set_reduced(GradContext& c, int i, Value grad) { c.set(i, sum_to(c.g, grad, c.input_type(i).shape)); }

// Where a and b are equal each gets half of dy, as PyTorch's maximum and minimum do.
// `first_wins` is a > b for maximum and a < b for minimum.
GradFn extremum_grad(Value (*first_wins)(Graph&, Value, Value)) {
  return [first_wins](GradContext& c) {
    const Value a = c.input(0), b = c.input(1);
    const Value half_tie = scale(c.g, compare(c.g, "equal_to", a, b), 0.5);
    set_reduced(c, 0, mul(c.g, c.dy(), add(c.g, first_wins(c.g, a, b), half_tie)));
    set_reduced(c, 1, mul(c.g, c.dy(), add(c.g, first_wins(c.g, b, a), half_tie)));
  };
}

Value greater(Graph& g, Value a, Value b) { return compare(g, "greater", a, b); }
Value less(Graph& g, Value a, Value b) { return compare(g, "less", a, b); }
}  // namespace

REGISTER_OP(.name = "greater", .infer = infer_float_binary("greater"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "greater_equal", .infer = infer_float_binary("greater_equal"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "less", .infer = infer_float_binary("less"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "less_equal", .infer = infer_float_binary("less_equal"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "equal_to", .infer = infer_float_binary("equal_to"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "not_equal", .infer = infer_float_binary("not_equal"), .zero_grad = true, .layout = elementwise());
REGISTER_OP(.name = "maximum", .infer = infer_float_binary("maximum"), .grad = extremum_grad(greater), .layout = elementwise());
REGISTER_OP(.name = "minimum", .infer = infer_float_binary("minimum"), .grad = extremum_grad(less), .layout = elementwise());

// select(x, y, cond): x where cond != 0, else y; all three of one shape and dtype (where() below
// broadcasts and casts first). dy goes to x where cond holds and to y elsewhere.
REGISTER_OP(
    .name = "select",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[0] != in[1] || in[0] != in[2])
        throw ShapeError("where: x, y and the condition must match after broadcasting, got " + std::string(dtype_name(in[0].dtype)) +
                         " " + in[0].shape.str() + ", " + dtype_name(in[1].dtype) + " " + in[1].shape.str() + " and " +
                         dtype_name(in[2].dtype) + " " + in[2].shape.str());
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      const Value zeros = fill(c.g, c.input_type(0), 0.0);
      c.set(0, c.g.add("select", {c.dy(), zeros, c.input(2)}));
      c.set(1, c.g.add("select", {zeros, c.dy(), c.input(2)}));
    },
    .layout = elementwise({{0, 1}}));

Value compare(Graph& g, const char* op, Value a, Value b) { return g.add(op, {a, b}); }
Value maximum(Graph& g, Value a, Value b) { return g.add("maximum", {a, b}); }
Value minimum(Graph& g, Value a, Value b) { return g.add("minimum", {a, b}); }

Value where(Graph& g, Value cond, Value x, Value y) {
  const TensorType tx = g.type(x), ty = g.type(y);
  if (tx.dtype != ty.dtype)
    throw ShapeError(std::string("where: x and y dtypes differ: ") + dtype_name(tx.dtype) + " and " + dtype_name(ty.dtype));
  const Shape out = broadcast_shapes(broadcast_shapes(tx.shape, ty.shape, "where"), g.type(cond).shape, "where");
  auto to_out = [&](Value v) { return g.type(v).shape == out ? v : broadcast_to(g, v, out); };
  if (g.type(cond).dtype != tx.dtype) cond = cast(g, cond, tx.dtype);
  return g.add("select", {to_out(x), to_out(y), to_out(cond)});
}

}  // namespace tandem::ops
