// DepthwiseConv2D: y = activation(depthwise_conv2d(x, kernel) + bias), kernel (kh, kw, in_channels,
// depth_multiplier) and bias (in_channels·depth_multiplier) as Keras stores them.
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
struct DepthwiseConv2DArgs {
  Int2 kernel_size;
  DepthwiseConv2DOptions options;
};

using O = DepthwiseConv2DOptions;
const Fields<DepthwiseConv2DArgs> kFields({
    field<DepthwiseConv2DArgs>("depth_multiplier", [](auto& a) -> auto& { return a.options.depth_multiplier; }, rules::positive),
    required<DepthwiseConv2DArgs>("kernel_size", [](auto& a) -> auto& { return a.kernel_size; }, rules::positive),
    field<DepthwiseConv2DArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    field<DepthwiseConv2DArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same"})),
    fixed<DepthwiseConv2DArgs>("data_format", "channels_last"),
    field<DepthwiseConv2DArgs>("dilation_rate", [](auto& a) -> auto& { return a.options.dilation_rate; }, rules::positive),
    activation<DepthwiseConv2DArgs>("activation", [](auto& a) -> auto& { return a.options.activation; }),
    field<DepthwiseConv2DArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<DepthwiseConv2DArgs>("depthwise_initializer", [](auto& a) -> auto& { return a.options.depthwise_initializer; }),
    initializer<DepthwiseConv2DArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
},
    // Keras names the kernel's arguments depthwise_*, the weight itself "kernel".
    weight_penalties<DepthwiseConv2DArgs>([](auto& a) -> auto& { return a.options; },
                                          {{"depthwise", &O::depthwise_regularizer, &O::depthwise_constraint},
                                           {"bias", &O::bias_regularizer, &O::bias_constraint}},
                                          &O::activity_regularizer));

class DepthwiseConv2DLayer : public Layer {
 public:
  explicit DepthwiseConv2DLayer(DepthwiseConv2DArgs a) : Layer("depthwise_conv2d", a.options.name), args_(std::move(a)) {
    if (!args_.kernel_size.given) throw ValueError(who() + ": kernel_size must be given");
    args_.options.padding = detail::padding_mode(who(), args_.options.padding);  // Keras accepts any case
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
  }
  std::string class_name() const override { return "DepthwiseConv2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
    const Int2& k = args_.kernel_size;
    const DepthwiseConv2DOptions& o = args_.options;
    const int64_t c = in[0][2], m = o.depth_multiplier;
    kernel_ = add_weight("kernel", {k.h, k.w, c, m}, o.depthwise_initializer, true, o.depthwise_regularizer, o.depthwise_constraint);
    if (o.use_bias) bias_ = add_weight("bias", {c * m}, o.bias_initializer, true, o.bias_regularizer, o.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const int64_t channels = kernel_->value().shape()[2];
    if (x[3] != channels)
      throw ShapeError(who() + ": expected input with " + std::to_string(channels) + " channels (last axis), got " + detail::batch_str(x));
    const DepthwiseConv2DOptions& o = args_.options;
    graph::Value y = ops::depthwise_conv2d(ctx.g, inputs[0], ctx.variable(*kernel_), {o.strides.h, o.strides.w},
                                           {o.dilation_rate.h, o.dilation_rate.w}, o.padding);
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, o.activation);
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_image(who(), x);
    detail::check_window_fits(who(), "kernel_size", args_.kernel_size, args_.options.dilation_rate, args_.options.padding, x);
  }

  DepthwiseConv2DArgs args_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("DepthwiseConv2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<DepthwiseConv2DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef DepthwiseConv2D(Int2 kernel_size, const DepthwiseConv2DOptions& options) {
  return LayerRef(std::make_shared<DepthwiseConv2DLayer>(DepthwiseConv2DArgs{kernel_size, options}));
}

}  // namespace tandem::layers
