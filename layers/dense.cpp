// Dense: y = activation(x · kernel + bias), kernel (in, units) as Keras stores it.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class DenseLayer : public Layer {
 public:
  DenseLayer(int64_t units, std::string activation, DenseOptions o)
      : Layer("dense", o.name), units_(units), activation_(std::move(activation)), opts_(std::move(o)) {
    if (units_ <= 0) throw ValueError("Dense \"" + name() + "\": units must be positive, got " + std::to_string(units_));
    check_activation(activation_, "Dense \"" + name() + "\"");
  }
  std::string class_name() const override { return "Dense"; }
  std::string config_json() const override {
    return config_text(*this, {{"units", units_},
                               {"activation", activation_.empty() ? "linear" : activation_},
                               {"use_bias", opts_.use_bias},
                               {"kernel_initializer", initializer_json(opts_.kernel_initializer)},
                               {"bias_initializer", initializer_json(opts_.bias_initializer)}},
                       {"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint", "quantization_config"});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError("Dense \"" + name() + "\": expected one input of rank >= 2 (batch included), got rank " +
                       std::to_string(in.empty() ? 0 : in[0].rank() + 1));
    kernel_ = add_weight("kernel", {in[0].back(), units_}, opts_.kernel_initializer);
    if (opts_.use_bias) bias_ = add_weight("bias", {units_}, opts_.bias_initializer);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    if (x.rank() < 2 || x.back() != kernel_->value().shape()[0])
      throw ShapeError("Dense \"" + name() + "\": expected input of last dimension " +
                       std::to_string(kernel_->value().shape()[0]) + ", got " + x.without_batch().with_batch(-1).str());
    graph::Value y = ops::matmul(ctx.g, inputs[0], ctx.variable(*kernel_));
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, activation_);
  }

 private:
  int64_t units_;
  std::string activation_;
  DenseOptions opts_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Dense", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect_null({"quantization_config", "lora_rank"});
  return std::make_shared<DenseLayer>(c.integer("units"), c.activation("activation"),
                                      DenseOptions{.use_bias = c.boolean("use_bias", true),
                                                   .kernel_initializer = c.initializer("kernel_initializer", "glorot_uniform"),
                                                   .bias_initializer = c.initializer("bias_initializer", "zeros"),
                                                   .name = c.name()});
});
}  // namespace

LayerRef Dense(int64_t units, const std::string& activation, const DenseOptions& options) {
  return LayerRef(std::make_shared<DenseLayer>(units, activation, options));
}

}  // namespace tandem::layers
