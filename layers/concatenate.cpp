// Concatenate: joins a list of inputs along one axis.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ConcatenateArgs {
  ConcatenateOptions options;
};

const Fields<ConcatenateArgs> kFields{
    field<ConcatenateArgs>("axis", [](auto& a) -> auto& { return a.options.axis; }),
};

class ConcatenateLayer : public Layer {
 public:
  explicit ConcatenateLayer(ConcatenateArgs a) : Layer("concatenate", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "Concatenate"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.empty()) throw ValueError(who() + ": expected a list of at least one input, got none");
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    std::string shapes;  // batch shown as None, like Keras
    for (graph::Value v : inputs) shapes += (shapes.empty() ? "" : ", ") + ctx.g.type(v).shape.without_batch().with_batch(-1).str();
    shapes = "[" + shapes + "]";
    const TensorType first = ctx.g.type(inputs[0]);
    const int rank = first.shape.rank();
    const int64_t axis_arg = args_.options.axis;
    const int64_t axis = axis_arg < 0 ? axis_arg + rank : axis_arg;
    if (axis < 1 || axis >= rank)
      throw ValueError(who() + ": axis " + std::to_string(axis_arg) + " is out of range for inputs " + shapes +
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
  ConcatenateArgs args_;
};

const RegisterLayer registered("Concatenate", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ConcatenateLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Concatenate(const ConcatenateOptions& options) {
  return LayerRef(std::make_shared<ConcatenateLayer>(ConcatenateArgs{options}));
}

}  // namespace tandem::layers
