// Concatenate: joins a list of inputs along one axis.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class ConcatenateLayer : public Layer {
 public:
  explicit ConcatenateLayer(ConcatenateOptions o) : Layer("concatenate", o.name), axis_(o.axis) {}
  std::string class_name() const override { return "Concatenate"; }
  std::string config_json() const override { return config_text(*this, {{"axis", axis_}}); }

  void build(const std::vector<Shape>& in) override {
    if (in.empty()) throw ValueError(who() + ": expected a list of at least one input, got none");
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    std::string shapes;  // batch shown as None, like Keras
    for (graph::Value v : inputs) shapes += (shapes.empty() ? "" : ", ") + ctx.g.type(v).shape.without_batch().with_batch(-1).str();
    shapes = "[" + shapes + "]";
    const TensorType first = ctx.g.type(inputs[0]);
    const int rank = first.shape.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 1 || axis >= rank)
      throw ValueError(who() + ": axis " + std::to_string(axis_) + " is out of range for inputs " + shapes +
                       (axis == 0 ? " (the batch axis cannot be concatenated)" : ""));
    for (graph::Value v : inputs) {
      const TensorType t = ctx.g.type(v);
      if (t.dtype != first.dtype)
        throw ShapeError(who() + ": inputs must share a dtype, got " + dtype_name(first.dtype) + " and " + dtype_name(t.dtype));
      bool ok = t.shape.rank() == rank;
      for (int i = 0; ok && i < rank; ++i) ok = i == axis || t.shape[i] == first.shape[i];
      if (!ok)
        throw ShapeError(who() + ": inputs must have matching shapes except along the concatenation axis " +
                         std::to_string(axis) + ", got " + shapes);
    }
    return ops::concat(ctx.g, inputs, axis);
  }

 private:
  std::string who() const { return "Concatenate \"" + name() + "\""; }
  int64_t axis_;
};

const RegisterLayer registered("Concatenate", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ConcatenateLayer>(ConcatenateOptions{.axis = c.integer("axis", -1), .name = c.name()});
});
}  // namespace

LayerRef Concatenate(const ConcatenateOptions& options) { return LayerRef(std::make_shared<ConcatenateLayer>(options)); }

}  // namespace tandem::layers
