// Keras's elementwise merges of a list of inputs: Add, Multiply, Subtract, Average, Maximum and
// Minimum. They differ only in how the inputs combine, so they share one class.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
using MergeOp = graph::Value (*)(graph::Graph&, graph::Value, graph::Value);

// One merge class: its op folded over the inputs left to right, as Keras's _merge_function.
struct MergeKind {
  const char* cls;     // Keras's class name
  const char* prefix;  // automatic names
  MergeOp op;
  bool average = false;   // divide the sum by the input count (Average)
  bool two_only = false;  // exactly two inputs (Subtract)
  // Maximum and Minimum, which have no identity element: Keras takes a masked step of either side
  // from the other side before the op (base_merge's _apply_merge_op_and_or_mask).
  bool fill_masked = false;
};
constexpr MergeKind kAdd{"Add", "add", ops::add};
constexpr MergeKind kMultiply{"Multiply", "multiply", ops::mul};
constexpr MergeKind kSubtract{"Subtract", "subtract", ops::sub, false, true};
constexpr MergeKind kAverage{"Average", "average", ops::add, true};
constexpr MergeKind kMaximum{"Maximum", "maximum", ops::maximum, false, false, true};
constexpr MergeKind kMinimum{"Minimum", "minimum", ops::minimum, false, false, true};

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += (s.empty() ? "" : ", ") + sh.str();
  return "[" + s + "]";
}

// Keras's Add and Multiply take no arguments of their own.
struct MergeArgs {
  std::string name;
};

const Fields<MergeArgs> kFields{};

class ElementwiseMerge : public Layer {
 public:
  ElementwiseMerge(const MergeKind& kind, MergeArgs a) : Layer(kind.prefix, a.name), kind_(kind), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return kind_.cls; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  bool supports_masking() const override { return true; }
  // Keras's merge layers: a step counts where it counts in any input (logical or); if some input
  // has no mask, every step counts, so the output has none.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                              const std::vector<graph::Value>&) override {
    graph::Value mask;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const graph::Value m = ctx.input_mask(i);
      if (!m.valid()) return {graph::Value{}};
      mask = mask.valid() ? ops::maximum(ctx.g, mask, m) : m;
    }
    return {mask};
  }

  void build(const std::vector<Shape>& in) override {
    if (in.empty()) throw ValueError(who() + ": expected a list of at least one input, got none");
    if (kind_.two_only && in.size() != 2)
      throw ValueError(who() + ": a Subtract layer takes exactly 2 inputs, got " + std::to_string(in.size()));
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    std::vector<Shape> shapes;  // batch shown as None, like Keras
    for (graph::Value v : inputs) shapes.push_back(ctx.g.type(v).shape.without_batch().with_batch(-1));
    const DType dtype = ctx.g.type(inputs[0]).dtype;
    Shape out = ctx.g.type(inputs[0]).shape;
    for (graph::Value v : inputs) {
      const TensorType t = ctx.g.type(v);
      if (t.dtype != dtype)
        throw ShapeError(who() + ": inputs must share a dtype, got " + dtype_name(dtype) + " and " + dtype_name(t.dtype));
      try {
        out = ops::broadcast_shapes(out, t.shape, "merge");
      } catch (const ShapeError&) {
        throw ShapeError(who() + ": inputs have incompatible shapes " + shapes_str(shapes) +
                         "; they must be equal or broadcast (a dimension of 1)");
      }
    }
    if (kind_.fill_masked) return fold_masked(ctx, inputs);
    graph::Value y = inputs[0];
    for (std::size_t i = 1; i < inputs.size(); ++i) y = kind_.op(ctx.g, y, inputs[i]);
    // Keras divides by the count (output / len(inputs)), not multiplies by its inverse.
    if (kind_.average) y = ops::div(ctx.g, y, ops::fill(ctx.g, {Shape{}, dtype}, static_cast<double>(inputs.size())));
    return y;
  }

 private:
  // Keras's fold for Maximum and Minimum with masks (each (batch, steps), broadcast over the
  // features): x = where(mask_x, x, y); y = where(mask_y, y, x); y = op(y, x); the running mask is
  // the or of both while every input so far has one.
  graph::Value fold_masked(CallContext& ctx, const std::vector<graph::Value>& inputs) const {
    graph::Graph& g = ctx.g;
    auto expanded = [&](std::size_t i) -> graph::Value {
      graph::Value m = ctx.input_mask(i);
      if (!m.valid()) return m;
      const TensorType t = g.type(inputs[i]);
      std::vector<int64_t> dims = g.type(m).shape.dims();
      while (static_cast<int>(dims.size()) < t.shape.rank()) dims.push_back(1);
      return ops::broadcast_to(g, ops::reshape(g, ops::cast(g, m, t.dtype), Shape(dims)), t.shape);
    };
    graph::Value y = inputs[0], y_mask = expanded(0);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      graph::Value x = inputs[i];
      const graph::Value mask = expanded(i);
      if (mask.valid()) x = ops::where(g, mask, x, y);
      if (y_mask.valid()) y = ops::where(g, y_mask, y, x);
      y_mask = mask.valid() && y_mask.valid() ? ops::maximum(g, y_mask, mask) : graph::Value{};
      y = kind_.op(g, y, x);
    }
    return y;
  }

  const MergeKind& kind_;
  MergeArgs args_;
};

ConfigFactory factory(const MergeKind& kind) {
  return [&kind](const ConfigReader& c) -> std::shared_ptr<Layer> {
    return std::make_shared<ElementwiseMerge>(kind, kFields.read(c, {.name = c.name()}));
  };
}
const RegisterLayer registered_add("Add", factory(kAdd));
const RegisterLayer registered_multiply("Multiply", factory(kMultiply));
const RegisterLayer registered_subtract("Subtract", factory(kSubtract));
const RegisterLayer registered_average("Average", factory(kAverage));
const RegisterLayer registered_maximum("Maximum", factory(kMaximum));
const RegisterLayer registered_minimum("Minimum", factory(kMinimum));

LayerRef make(const MergeKind& kind, const std::string& name) { return LayerRef(std::make_shared<ElementwiseMerge>(kind, MergeArgs{name})); }
}  // namespace

LayerRef Add(const std::string& name) { return make(kAdd, name); }
LayerRef Multiply(const std::string& name) { return make(kMultiply, name); }
LayerRef Subtract(const std::string& name) { return make(kSubtract, name); }
LayerRef Average(const std::string& name) { return make(kAverage, name); }
LayerRef Maximum(const std::string& name) { return make(kMaximum, name); }
LayerRef Minimum(const std::string& name) { return make(kMinimum, name); }

}  // namespace tandem::layers
