// LayerNormalization (Keras 3) over the last axis; the same in training and inference.
#include <sstream>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

class LayerNormalizationLayer : public Layer {
 public:
  explicit LayerNormalizationLayer(LayerNormalizationOptions o) : Layer("layer_normalization", o.name), opts_(std::move(o)) {
    if (!(opts_.epsilon > 0.0)) throw ValueError(who() + ": epsilon must be positive, got " + number(opts_.epsilon));
    if (opts_.axis == 0) throw ValueError(who() + ": axis 0 is the batch axis; expected -1 (the last axis)");
  }
  std::string class_name() const override { return "LayerNormalization"; }
  std::string config_json() const override {
    // Keras writes the axis it was given (-1) until the layer is built, then the list of axes.
    return config_text(*this, {{"axis", built() ? Json::array({opts_.axis}) : Json(opts_.axis)},
                               {"epsilon", opts_.epsilon},
                               {"center", opts_.center},
                               {"scale", opts_.scale},
                               {"rms_scaling", false},
                               {"beta_initializer", initializer_json(opts_.beta_initializer)},
                               {"gamma_initializer", initializer_json(opts_.gamma_initializer)}},
                       {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    const int rank = in[0].rank() + 1;
    const int axis = opts_.axis < 0 ? opts_.axis + rank : opts_.axis;
    if (axis <= 0 || axis >= rank)
      throw ValueError(who() + ": axis " + std::to_string(opts_.axis) + " is out of range for input " + in[0].with_batch(-1).str() +
                       "; expected -1 or " + std::to_string(rank - 1));
    // Keras also normalises over other axes (or several); only the last one is implemented.
    if (axis != rank - 1)
      throw ValueError(who() + ": only the last axis is supported (axis -1 or " + std::to_string(rank - 1) + "), got " +
                       std::to_string(opts_.axis));
    dim_ = in[0].back();
    if (opts_.scale) gamma_ = add_weight("gamma", {dim_}, opts_.gamma_initializer, true);
    if (opts_.center) beta_ = add_weight("beta", {dim_}, opts_.beta_initializer, true);
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
    return ops::layer_norm(g, inputs[0], gamma, beta, opts_.epsilon);
  }

 private:
  std::string who() const { return "LayerNormalization \"" + name() + "\""; }

  LayerNormalizationOptions opts_;
  int64_t dim_ = 0;
  VariablePtr gamma_, beta_;
};

const RegisterLayer registered("LayerNormalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("rms_scaling", false);
  const LayerNormalizationOptions d;
  // Keras may write the axis as a one-element list.
  const Json* axis = c.value("axis");
  const bool listed = axis && axis->is_array() && axis->size() == 1 && (*axis)[0].is_number_integer();
  return std::make_shared<LayerNormalizationLayer>(LayerNormalizationOptions{
      .axis = listed ? (*axis)[0].get<int>() : static_cast<int>(c.integer("axis", d.axis)),
      .epsilon = c.number("epsilon", d.epsilon),
      .center = c.boolean("center", d.center),
      .scale = c.boolean("scale", d.scale),
      .beta_initializer = c.initializer("beta_initializer", d.beta_initializer),
      .gamma_initializer = c.initializer("gamma_initializer", d.gamma_initializer),
      .name = c.name()});
});
}  // namespace

LayerRef LayerNormalization(const LayerNormalizationOptions& options) {
  return LayerRef(std::make_shared<LayerNormalizationLayer>(options));
}

}  // namespace tandem::layers
