// Add and Multiply: elementwise merges of a list of inputs. They differ only in the op, so they
// share one class.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
using MergeOp = graph::Value (*)(graph::Graph&, graph::Value, graph::Value);

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
  ElementwiseMerge(std::string cls, const char* prefix, MergeOp op, MergeArgs a)
      : Layer(prefix, a.name), class_name_(std::move(cls)), op_(op), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return class_name_; }
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
    graph::Value y = inputs[0];
    for (std::size_t i = 1; i < inputs.size(); ++i) y = op_(ctx.g, y, inputs[i]);
    return y;
  }

 private:
  std::string class_name_;
  MergeOp op_;
  MergeArgs args_;
};

const RegisterLayer registered_add("Add", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ElementwiseMerge>("Add", "add", ops::add, kFields.read(c, {.name = c.name()}));
});
const RegisterLayer registered_multiply("Multiply", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ElementwiseMerge>("Multiply", "multiply", ops::mul, kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Add(const std::string& name) { return LayerRef(std::make_shared<ElementwiseMerge>("Add", "add", ops::add, MergeArgs{name})); }
LayerRef Multiply(const std::string& name) {
  return LayerRef(std::make_shared<ElementwiseMerge>("Multiply", "multiply", ops::mul, MergeArgs{name}));
}

}  // namespace tandem::layers
