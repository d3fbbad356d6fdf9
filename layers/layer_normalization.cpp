// LayerNormalization (Keras 3) over the last axis; the same in training and inference.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct LayerNormalizationArgs {
  LayerNormalizationOptions options;
};

using O = LayerNormalizationOptions;
const Fields<LayerNormalizationArgs> kFields({
    // Keras writes the axis it was given (-1) until the layer is built, then the list of axes
    // (config_json), so a one-element list is read as its axis.
    Field<LayerNormalizationArgs>{"axis", [](const LayerNormalizationArgs& a) { return Json(a.options.axis); },
                                  [](const ConfigReader& c, LayerNormalizationArgs& a) {
                                    const Json* axis = c.value("axis");
                                    if (axis && axis->is_array() && axis->size() == 1 && (*axis)[0].is_number_integer())
                                      a.options.axis = (*axis)[0].get<int>();
                                    else
                                      a.options.axis = static_cast<int>(c.integer("axis", a.options.axis));
                                  },
                                  nullptr},
    field<LayerNormalizationArgs>("epsilon", [](auto& a) -> auto& { return a.options.epsilon; }, rules::positive),
    field<LayerNormalizationArgs>("center", [](auto& a) -> auto& { return a.options.center; }),
    field<LayerNormalizationArgs>("scale", [](auto& a) -> auto& { return a.options.scale; }),
    fixed<LayerNormalizationArgs>("rms_scaling", false),
    initializer<LayerNormalizationArgs>("beta_initializer", [](auto& a) -> auto& { return a.options.beta_initializer; }),
    initializer<LayerNormalizationArgs>("gamma_initializer", [](auto& a) -> auto& { return a.options.gamma_initializer; }),
},
    weight_penalties<LayerNormalizationArgs>([](auto& a) -> auto& { return a.options; },
                             {{"beta", &O::beta_regularizer, &O::beta_constraint}, {"gamma", &O::gamma_regularizer, &O::gamma_constraint}}));

class LayerNormalizationLayer : public Layer {
 public:
  explicit LayerNormalizationLayer(LayerNormalizationArgs a) : Layer("layer_normalization", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    if (args_.options.axis == 0) throw ValueError(who() + ": axis 0 is the batch axis; expected -1 (the last axis)");
  }
  std::string class_name() const override { return "LayerNormalization"; }
  // Keras: the input's mask passes through unchanged (steps stay steps).
  bool supports_masking() const override { return true; }
  std::string config_json() const override {
    Json args = kFields.write(args_);
    if (built()) args["axis"] = Json::array({args_.options.axis});  // as Keras writes a built layer's
    return config_text(*this, args);
  }

  void build(const std::vector<Shape>& in) override {
    const LayerNormalizationOptions& o = args_.options;
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    const int rank = in[0].rank() + 1;
    const int axis = o.axis < 0 ? o.axis + rank : o.axis;
    if (axis <= 0 || axis >= rank)
      throw ValueError(who() + ": axis " + std::to_string(o.axis) + " is out of range for input " + in[0].with_batch(-1).str() +
                       "; expected -1 or " + std::to_string(rank - 1));
    // Keras also normalises over other axes (or several); only the last one is implemented.
    if (axis != rank - 1)
      throw ValueError(who() + ": only the last axis is supported (axis -1 or " + std::to_string(rank - 1) + "), got " +
                       std::to_string(o.axis));
    dim_ = in[0].back();
    if (o.scale) gamma_ = add_weight("gamma", {dim_}, o.gamma_initializer, true, o.gamma_regularizer, o.gamma_constraint);
    if (o.center) beta_ = add_weight("beta", {dim_}, o.beta_initializer, true, o.beta_regularizer, o.beta_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType& t = g.type(inputs[0]);
    if (t.shape.rank() < 2 || t.shape.back() != dim_)
      throw ShapeError(who() + ": expected input of rank >= 2 with last dimension " + std::to_string(dim_) + ", got " +
                       (t.shape.rank() ? t.shape.without_batch().with_batch(-1).str() : t.shape.str()));
    const TensorType per_feature{Shape{dim_}, t.dtype};
    const graph::Value gamma = gamma_ ? ctx.variable(*gamma_) : ops::fill(g, per_feature, 1.0);
    const graph::Value beta = beta_ ? ctx.variable(*beta_) : ops::fill(g, per_feature, 0.0);
    return ops::layer_norm(g, inputs[0], gamma, beta, args_.options.epsilon);
  }

 private:
  LayerNormalizationArgs args_;
  int64_t dim_ = 0;
  VariablePtr gamma_, beta_;
};

const RegisterLayer registered("LayerNormalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<LayerNormalizationLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef LayerNormalization(const LayerNormalizationOptions& options) {
  return LayerRef(std::make_shared<LayerNormalizationLayer>(LayerNormalizationArgs{options}));
}

}  // namespace tandem::layers
