// The public tandem::ops on Symbols. Inside a traced call an op is emitted into the call's graph
// at once; on a model's symbols it becomes a node of the functional model (an OpLayer), emitted
// each time the model is traced.
#include <functional>

#include "layer_base/call_context.h"
#include "layer_base/symbol.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/ops.h"

namespace tandem::ops {

namespace {
using Emit = std::function<graph::Value(graph::Graph&, const std::vector<graph::Value>&)>;

// Runs `emit`, prefixing the op's own shape and value errors with where it was called.
graph::Value emit_op(const std::string& where, const Emit& emit, graph::Graph& g, const std::vector<graph::Value>& ins) {
  try {
    return emit(g, ins);
  } catch (const ShapeError& e) {
    throw ShapeError(where + ": " + e.what());
  } catch (const ValueError& e) {
    throw ValueError(where + ": " + e.what());
  }
}

// An op applied to a model's symbols: a layer without weights. It cannot be saved whole, since
// a config cannot hold the function; a custom layer can.
class OpLayer : public Layer {
 public:
  OpLayer(const std::string& op, Emit emit) : Layer(op, ""), op_(op), emit_(std::move(emit)) {}
  std::string class_name() const override { return "ops." + op_; }
  std::string config_json() const override {
    throw ValueError("ops::" + op_ + " \"" + name() + "\": an op applied to a model's symbols cannot be saved with Model::save; " +
                     "use save_weights, or do the op inside a custom layer's call() and register that layer");
  }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& ins) override {
    return emit_op("ops::" + op_ + " \"" + name() + "\"", emit_, ctx.g, ins);
  }

 private:
  std::string op_;
  Emit emit_;
};

Symbol apply(const std::string& op, const std::vector<Symbol>& xs, Emit emit) {
  const std::shared_ptr<Trace> trace = common_trace(xs, "ops::" + op);
  if (!trace) return (*std::make_shared<OpLayer>(op, std::move(emit)))(xs);
  std::vector<graph::Value> ins;
  for (const Symbol& x : xs) ins.push_back(x.node()->value);
  return traced_symbol(trace, emit_op(trace->owner + ": ops::" + op, emit, trace->g, ins));
}

graph::Value constant_like(graph::Graph& g, graph::Value x, double c) { return fill(g, {Shape{}, g.type(x).dtype}, c); }

Symbol binary(const char* op, const Symbol& a, const Symbol& b, graph::Value (*f)(graph::Graph&, graph::Value, graph::Value)) {
  return apply(op, {a, b}, [f](graph::Graph& g, const std::vector<graph::Value>& v) { return f(g, v[0], v[1]); });
}
Symbol comparison(const char* op, const char* internal, const Symbol& a, const Symbol& b) {
  return apply(op, {a, b}, [internal](graph::Graph& g, const std::vector<graph::Value>& v) { return compare(g, internal, v[0], v[1]); });
}
Symbol unary(const char* op, const Symbol& x, graph::Value (*f)(graph::Graph&, graph::Value)) {
  return apply(op, {x}, [f](graph::Graph& g, const std::vector<graph::Value>& v) { return f(g, v[0]); });
}

std::vector<int64_t> axes_or_all(const std::vector<int64_t>& axes, int rank) {
  if (!axes.empty()) return axes;
  std::vector<int64_t> all;
  for (int i = 0; i < rank; ++i) all.push_back(i);
  return all;
}
using Reduce = graph::Value (*)(graph::Graph&, graph::Value, std::vector<int64_t>, bool);
Symbol reduction(const char* op, Reduce f, const Symbol& x, const std::vector<int64_t>& axes, bool keepdims) {
  return apply(op, {x}, [=](graph::Graph& g, const std::vector<graph::Value>& v) {
    return f(g, v[0], axes_or_all(axes, g.type(v[0]).shape.rank()), keepdims);
  });
}

std::string dims_text(const Shape& s) {  // with -1 as written, where Shape::str shows None
  std::string t = "(";
  for (int i = 0; i < s.rank(); ++i) t.append(i ? ", " : "").append(std::to_string(s[i]));
  return t + ")";
}

// `want` with its one -1 worked out from `have`'s element count.
Shape resolve_shape(const Shape& want, const Shape& have) {
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < want.rank(); ++i) {
    if (want[i] == -1) {
      if (unknown >= 0) throw ValueError("reshape: at most one dimension may be -1, got " + dims_text(want));
      unknown = i;
    } else if (want[i] < 0) {
      throw ValueError("reshape: dimensions must be positive or -1, got " + dims_text(want));
    } else {
      known *= want[i];
    }
  }
  Shape out = want;
  if (unknown >= 0 && known > 0 && have.num_elements() % known == 0) out[unknown] = have.num_elements() / known;
  if (out.num_elements() != have.num_elements() || (unknown >= 0 && out[unknown] == -1))
    throw ValueError("reshape: cannot reshape " + have.str() + " (" + std::to_string(have.num_elements()) + " elements) into " +
                     dims_text(want));
  return out;
}
}  // namespace

Symbol add(const Symbol& a, const Symbol& b) { return binary("add", a, b, add); }
Symbol subtract(const Symbol& a, const Symbol& b) { return binary("subtract", a, b, sub); }
Symbol multiply(const Symbol& a, const Symbol& b) { return binary("multiply", a, b, mul); }
Symbol divide(const Symbol& a, const Symbol& b) { return binary("divide", a, b, div); }
Symbol maximum(const Symbol& a, const Symbol& b) { return binary("maximum", a, b, maximum); }
Symbol minimum(const Symbol& a, const Symbol& b) { return binary("minimum", a, b, minimum); }
Symbol negative(const Symbol& x) {
  return apply("negative", {x}, [](graph::Graph& g, const std::vector<graph::Value>& v) { return scale(g, v[0], -1.0); });
}
Symbol add(const Symbol& x, double c) {
  return apply("add", {x}, [c](graph::Graph& g, const std::vector<graph::Value>& v) { return add(g, v[0], constant_like(g, v[0], c)); });
}
Symbol multiply(const Symbol& x, double c) {
  return apply("multiply", {x}, [c](graph::Graph& g, const std::vector<graph::Value>& v) { return scale(g, v[0], c); });
}
Symbol subtract(double c, const Symbol& x) {
  return apply("subtract", {x}, [c](graph::Graph& g, const std::vector<graph::Value>& v) {
    return add(g, scale(g, v[0], -1.0), constant_like(g, v[0], c));
  });
}
Symbol divide(double c, const Symbol& x) {
  return apply("divide", {x}, [c](graph::Graph& g, const std::vector<graph::Value>& v) { return div(g, constant_like(g, v[0], c), v[0]); });
}

Symbol exp(const Symbol& x) { return unary("exp", x, exp); }
Symbol log(const Symbol& x) { return unary("log", x, log); }
Symbol sqrt(const Symbol& x) { return unary("sqrt", x, sqrt); }
Symbol square(const Symbol& x) { return unary("square", x, square); }
Symbol abs(const Symbol& x) { return unary("abs", x, abs); }
Symbol sign(const Symbol& x) { return unary("sign", x, sign); }
Symbol relu(const Symbol& x) { return unary("relu", x, relu); }
Symbol sigmoid(const Symbol& x) { return unary("sigmoid", x, sigmoid); }
Symbol tanh(const Symbol& x) { return unary("tanh", x, tanh); }
Symbol gelu(const Symbol& x, bool approximate) {
  return apply("gelu", {x}, [approximate](graph::Graph& g, const std::vector<graph::Value>& v) { return gelu(g, v[0], approximate); });
}
Symbol softmax(const Symbol& x, int axis) {
  return apply("softmax", {x}, [axis](graph::Graph& g, const std::vector<graph::Value>& v) { return softmax(g, v[0], axis); });
}
Symbol log_softmax(const Symbol& x, int axis) {
  return apply("log_softmax", {x}, [axis](graph::Graph& g, const std::vector<graph::Value>& v) { return log_softmax(g, v[0], axis); });
}

Symbol greater(const Symbol& a, const Symbol& b) { return comparison("greater", "greater", a, b); }
Symbol greater_equal(const Symbol& a, const Symbol& b) { return comparison("greater_equal", "greater_equal", a, b); }
Symbol less(const Symbol& a, const Symbol& b) { return comparison("less", "less", a, b); }
Symbol less_equal(const Symbol& a, const Symbol& b) { return comparison("less_equal", "less_equal", a, b); }
Symbol equal(const Symbol& a, const Symbol& b) { return comparison("equal", "equal_to", a, b); }
Symbol not_equal(const Symbol& a, const Symbol& b) { return comparison("not_equal", "not_equal", a, b); }
Symbol where(const Symbol& condition, const Symbol& x, const Symbol& y) {
  return apply("where", {condition, x, y}, [](graph::Graph& g, const std::vector<graph::Value>& v) { return where(g, v[0], v[1], v[2]); });
}

Symbol matmul(const Symbol& a, const Symbol& b) {
  return apply("matmul", {a, b}, [](graph::Graph& g, const std::vector<graph::Value>& v) {
    const int ra = g.type(v[0]).shape.rank(), rb = g.type(v[1]).shape.rank();
    if (rb == 2 && ra >= 2) return matmul(g, v[0], v[1]);
    if (ra == rb && ra > 2) return batch_matmul(g, v[0], v[1]);
    throw ShapeError("matmul: expected (…, m, k) · (k, n) or two operands of one rank above 2, got " + g.type(v[0]).shape.str() +
                     " · " + g.type(v[1]).shape.str());
  });
}

Symbol sum(const Symbol& x, const std::vector<int64_t>& axes, bool keepdims) { return reduction("sum", reduce_sum, x, axes, keepdims); }
Symbol mean(const Symbol& x, const std::vector<int64_t>& axes, bool keepdims) { return reduction("mean", reduce_mean, x, axes, keepdims); }
Symbol max(const Symbol& x, const std::vector<int64_t>& axes, bool keepdims) { return reduction("max", reduce_max, x, axes, keepdims); }

Symbol reshape(const Symbol& x, const Shape& shape) {
  return apply("reshape", {x}, [shape](graph::Graph& g, const std::vector<graph::Value>& v) {
    return reshape(g, v[0], resolve_shape(shape, g.type(v[0]).shape));
  });
}
Symbol transpose(const Symbol& x, const std::vector<int64_t>& perm) {
  return apply("transpose", {x}, [perm](graph::Graph& g, const std::vector<graph::Value>& v) { return transpose(g, v[0], perm); });
}
Symbol concatenate(const std::vector<Symbol>& xs, int64_t axis) {
  return apply("concatenate", xs, [axis](graph::Graph& g, const std::vector<graph::Value>& v) { return concat(g, v, axis); });
}
Symbol slice(const Symbol& x, int64_t axis, int64_t begin, int64_t size) {
  return apply("slice", {x}, [=](graph::Graph& g, const std::vector<graph::Value>& v) {
    return ops::slice(g, v[0], normalize_axis(axis, g.type(v[0]).shape.rank(), "slice"), begin, size);
  });
}
Symbol take(const Symbol& table, const Symbol& ids) {
  return apply("take", {table, ids}, [](graph::Graph& g, const std::vector<graph::Value>& v) { return gather(g, v[0], v[1], "ops::take"); });
}
Symbol one_hot(const Symbol& ids, int64_t num_classes, DType dtype) {
  return apply("one_hot", {ids}, [=](graph::Graph& g, const std::vector<graph::Value>& v) { return one_hot(g, v[0], num_classes, dtype); });
}
Symbol cast(const Symbol& x, DType dtype) {
  return apply("cast", {x}, [dtype](graph::Graph& g, const std::vector<graph::Value>& v) { return cast(g, v[0], dtype); });
}

Symbol full_like(const Symbol& x, double value) {
  return apply("full_like", {x}, [value](graph::Graph& g, const std::vector<graph::Value>& v) { return fill(g, g.type(v[0]), value); });
}

}  // namespace tandem::ops
