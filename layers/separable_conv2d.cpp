// SeparableConv2D: a depthwise convolution (depthwise_kernel (kh, kw, in_channels,
// depth_multiplier)) then a 1x1 convolution (pointwise_kernel (1, 1, in_channels·depth_multiplier,
// filters)), bias and activation, as Keras computes and stores it.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct SeparableConv2DArgs {
  int64_t filters = 0;
  Int2 kernel_size;
  SeparableConv2DOptions options;
};

using O = SeparableConv2DOptions;
const Fields<SeparableConv2DArgs> kFields({
    field<SeparableConv2DArgs>("depth_multiplier", [](auto& a) -> auto& { return a.options.depth_multiplier; }, rules::positive),
    required<SeparableConv2DArgs>("filters", [](auto& a) -> auto& { return a.filters; }, rules::positive),
    required<SeparableConv2DArgs>("kernel_size", [](auto& a) -> auto& { return a.kernel_size; }, rules::positive),
    field<SeparableConv2DArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    field<SeparableConv2DArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same"})),
    fixed<SeparableConv2DArgs>("data_format", "channels_last"),
    field<SeparableConv2DArgs>("dilation_rate", [](auto& a) -> auto& { return a.options.dilation_rate; }, rules::positive),
    activation<SeparableConv2DArgs>("activation", [](auto& a) -> auto& { return a.options.activation; }),
    field<SeparableConv2DArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<SeparableConv2DArgs>("depthwise_initializer", [](auto& a) -> auto& { return a.options.depthwise_initializer; }),
    initializer<SeparableConv2DArgs>("pointwise_initializer", [](auto& a) -> auto& { return a.options.pointwise_initializer; }),
    initializer<SeparableConv2DArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
},
    weight_penalties<SeparableConv2DArgs>([](auto& a) -> auto& { return a.options; },
                                          {{"depthwise", &O::depthwise_regularizer, &O::depthwise_constraint},
                                           {"pointwise", &O::pointwise_regularizer, &O::pointwise_constraint},
                                           {"bias", &O::bias_regularizer, &O::bias_constraint}},
                                          &O::activity_regularizer));

class SeparableConv2DLayer : public Layer {
 public:
  explicit SeparableConv2DLayer(SeparableConv2DArgs a) : Layer("separable_conv2d", a.options.name), args_(std::move(a)) {
    if (!args_.kernel_size.given) throw ValueError(who() + ": kernel_size must be given");
    args_.options.padding = detail::padding_mode(who(), args_.options.padding);  // Keras accepts any case
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
  }
  std::string class_name() const override { return "SeparableConv2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
    const SeparableConv2DOptions& o = args_.options;
    const Int2& k = args_.kernel_size;
    const int64_t c = in[0][2], m = o.depth_multiplier;
    depthwise_ = add_weight("depthwise_kernel", {k.h, k.w, c, m}, o.depthwise_initializer, true, o.depthwise_regularizer,
                            o.depthwise_constraint);
    pointwise_ = add_weight("pointwise_kernel", {1, 1, c * m, args_.filters}, o.pointwise_initializer, true, o.pointwise_regularizer,
                            o.pointwise_constraint);
    if (o.use_bias) bias_ = add_weight("bias", {args_.filters}, o.bias_initializer, true, o.bias_regularizer, o.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const int64_t channels = depthwise_->value().shape()[2];
    if (x[3] != channels)
      throw ShapeError(who() + ": expected input with " + std::to_string(channels) + " channels (last axis), got " + detail::batch_str(x));
    const SeparableConv2DOptions& o = args_.options;
    const graph::Value d = ops::depthwise_conv2d(ctx.g, inputs[0], ctx.variable(*depthwise_), {o.strides.h, o.strides.w},
                                                 {o.dilation_rate.h, o.dilation_rate.w}, o.padding);
    graph::Value y = ops::conv2d(ctx.g, d, ctx.variable(*pointwise_));
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, o.activation);
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_image(who(), x);
    detail::check_window_fits(who(), "kernel_size", args_.kernel_size, args_.options.dilation_rate, args_.options.padding, x);
  }

  SeparableConv2DArgs args_;
  VariablePtr depthwise_, pointwise_, bias_;
};

const RegisterLayer registered("SeparableConv2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<SeparableConv2DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef SeparableConv2D(int64_t filters, Int2 kernel_size, const SeparableConv2DOptions& options) {
  return LayerRef(std::make_shared<SeparableConv2DLayer>(SeparableConv2DArgs{filters, kernel_size, options}));
}

}  // namespace tandem::layers
