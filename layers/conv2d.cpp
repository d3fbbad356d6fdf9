// Conv2D: y = activation(conv2d(x, kernel) + bias), kernel (kh, kw, in_channels, filters) as Keras
// stores it, channels-last input.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "layers/conv_util.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct Conv2DArgs {
  int64_t filters = 0;
  Int2 kernel_size;
  Conv2DOptions options;
};

const Fields<Conv2DArgs> kFields({
    required<Conv2DArgs>("filters", [](auto& a) -> auto& { return a.filters; }, rules::positive),
    required<Conv2DArgs>("kernel_size", [](auto& a) -> auto& { return a.kernel_size; }, rules::positive),
    field<Conv2DArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    field<Conv2DArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same"})),
    fixed<Conv2DArgs>("data_format", "channels_last"),
    field<Conv2DArgs>("dilation_rate", [](auto& a) -> auto& { return a.options.dilation_rate; }, rules::positive),
    fixed<Conv2DArgs>("groups", 1),
    activation<Conv2DArgs>("activation", [](auto& a) -> auto& { return a.options.activation; }),
    field<Conv2DArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<Conv2DArgs>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
    initializer<Conv2DArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
    regularizer<Conv2DArgs>("activity_regularizer", [](auto& a) -> auto& { return a.options.activity_regularizer; })},
    kernel_bias_penalties<Conv2DArgs>([](auto& a) -> auto& { return a.options; }));

class Conv2DLayer : public Layer {
 public:
  explicit Conv2DLayer(Conv2DArgs a) : Layer("conv2d", a.options.name), args_(std::move(a)) {
    if (!args_.kernel_size.given) throw ValueError(who() + ": kernel_size must be given");
    args_.options.padding = detail::padding_mode(who(), args_.options.padding);  // Keras accepts any case
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
    const Conv2DOptions& o = args_.options;
    // Keras rejects this combination too (TensorFlow's CPU convolution does not support it).
    if (std::max(o.strides.h, o.strides.w) > 1 && std::max(o.dilation_rate.h, o.dilation_rate.w) > 1)
      throw ValueError(who() + ": strides > 1 is not supported together with dilation_rate > 1; got strides " +
                       detail::pair_str(o.strides) + " and dilation_rate " + detail::pair_str(o.dilation_rate));
  }
  std::string class_name() const override { return "Conv2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
    const Int2& k = args_.kernel_size;
    kernel_ = add_weight("kernel", {k.h, k.w, in[0][2], args_.filters}, args_.options.kernel_initializer, true,
                         args_.options.kernel_regularizer, args_.options.kernel_constraint);
    if (args_.options.use_bias)
      bias_ = add_weight("bias", {args_.filters}, args_.options.bias_initializer, true, args_.options.bias_regularizer, args_.options.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const int64_t channels = kernel_->value().shape()[2];
    if (x[3] != channels)
      throw ShapeError(who() + ": expected input with " + std::to_string(channels) + " channels (last axis), got " + detail::batch_str(x));
    const Conv2DOptions& o = args_.options;
    graph::Value y = ops::conv2d(ctx.g, inputs[0], ctx.variable(*kernel_), {o.strides.h, o.strides.w}, {o.dilation_rate.h, o.dilation_rate.w},
                                 o.padding);
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, o.activation);
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_image(who(), x);
    detail::check_window_fits(who(), "kernel_size", args_.kernel_size, args_.options.dilation_rate, args_.options.padding, x);
  }

  Conv2DArgs args_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Conv2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<Conv2DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Conv2D(int64_t filters, Int2 kernel_size, const Conv2DOptions& options) {
  return LayerRef(std::make_shared<Conv2DLayer>(Conv2DArgs{filters, kernel_size, options}));
}

}  // namespace tandem::layers
