// Dense: y = activation(x · kernel + bias), kernel (in, units) as Keras stores it.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct DenseArgs {
  int64_t units = 0;
  std::string activation;
  DenseOptions options;
};

const Fields<DenseArgs> kFields({
    required<DenseArgs>("units", [](auto& a) -> auto& { return a.units; }, rules::positive),
    activation<DenseArgs>("activation", [](auto& a) -> auto& { return a.activation; }),
    field<DenseArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<DenseArgs>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
    initializer<DenseArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
    unused<DenseArgs>("quantization_config")},
    kernel_bias_penalties<DenseArgs>([](auto& a) -> auto& { return a.options; }));

class DenseLayer : public Layer {
 public:
  explicit DenseLayer(DenseArgs a) : Layer("dense", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
  }
  std::string class_name() const override { return "Dense"; }
  // Keras: the input's mask passes through unchanged (steps stay steps).
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got rank " +
                       std::to_string(in.empty() ? 0 : in[0].rank() + 1));
    kernel_ = add_weight("kernel", {in[0].back(), args_.units}, args_.options.kernel_initializer, true,
                         args_.options.kernel_regularizer, args_.options.kernel_constraint);
    if (args_.options.use_bias)
      bias_ = add_weight("bias", {args_.units}, args_.options.bias_initializer, true, args_.options.bias_regularizer, args_.options.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    if (x.rank() < 2 || x.back() != kernel_->value().shape()[0])
      throw ShapeError(who() + ": expected input of last dimension " + std::to_string(kernel_->value().shape()[0]) + ", got " +
                       x.without_batch().with_batch(-1).str());
    graph::Value y = ops::matmul(ctx.g, inputs[0], ctx.variable(*kernel_));
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, args_.activation);
  }

 private:
  DenseArgs args_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Dense", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect_null({"lora_rank"});
  return std::make_shared<DenseLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Dense(int64_t units, const std::string& activation, const DenseOptions& options) {
  return LayerRef(std::make_shared<DenseLayer>(DenseArgs{units, activation, options}));
}

}  // namespace tandem::layers
