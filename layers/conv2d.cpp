// Conv2D: y = activation(conv2d(x, kernel) + bias), kernel (kh, kw, in_channels, filters) as Keras
// stores it, channels-last input.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class Conv2DLayer : public Layer {
 public:
  Conv2DLayer(int64_t filters, Int2 kernel_size, Conv2DOptions o)
      : Layer("conv2d", o.name), filters_(filters), kernel_size_(kernel_size), opts_(std::move(o)) {
    const std::string me = owner();
    if (filters_ <= 0) throw ValueError(me + ": filters must be positive, got " + std::to_string(filters_));
    if (!kernel_size_.given) throw ValueError(me + ": kernel_size must be given");
    detail::check_positive(me, "kernel_size", kernel_size_);
    detail::check_positive(me, "strides", opts_.strides);
    detail::check_positive(me, "dilation_rate", opts_.dilation_rate);
    // Keras rejects this combination too (TensorFlow's CPU convolution does not support it).
    if (std::max(opts_.strides.h, opts_.strides.w) > 1 && std::max(opts_.dilation_rate.h, opts_.dilation_rate.w) > 1)
      throw ValueError(me + ": strides > 1 is not supported together with dilation_rate > 1; got strides " +
                       detail::pair_str(opts_.strides) + " and dilation_rate " + detail::pair_str(opts_.dilation_rate));
    opts_.padding = detail::padding_mode(me, opts_.padding);
    check_activation(opts_.activation, me);
  }
  std::string class_name() const override { return "Conv2D"; }
  std::string config_json() const override {
    return config_text(*this, {{"filters", filters_},
                               {"kernel_size", int2_json(kernel_size_)},
                               {"strides", int2_json(opts_.strides)},
                               {"padding", opts_.padding},
                               {"data_format", "channels_last"},
                               {"dilation_rate", int2_json(opts_.dilation_rate)},
                               {"groups", 1},
                               {"activation", opts_.activation.empty() ? "linear" : opts_.activation},
                               {"use_bias", opts_.use_bias},
                               {"kernel_initializer", initializer_json(opts_.kernel_initializer)},
                               {"bias_initializer", initializer_json(opts_.bias_initializer)}},
                       {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(owner() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
    kernel_ = add_weight("kernel", {kernel_size_.h, kernel_size_.w, in[0][2], filters_}, opts_.kernel_initializer);
    if (opts_.use_bias) bias_ = add_weight("bias", {filters_}, opts_.bias_initializer);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const int64_t channels = kernel_->value().shape()[2];
    if (x[3] != channels)
      throw ShapeError(owner() + ": expected input with " + std::to_string(channels) + " channels (last axis), got " +
                       detail::batch_str(x));
    graph::Value y = ops::conv2d(ctx.g, inputs[0], ctx.variable(*kernel_), {opts_.strides.h, opts_.strides.w},
                                 {opts_.dilation_rate.h, opts_.dilation_rate.w}, opts_.padding);
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, opts_.activation);
  }

 private:
  std::string owner() const { return "Conv2D \"" + name() + "\""; }
  void check_input(const Shape& x) const {
    detail::check_image(owner(), x);
    detail::check_window_fits(owner(), "kernel_size", kernel_size_, opts_.dilation_rate, opts_.padding, x);
  }

  int64_t filters_;
  Int2 kernel_size_;
  Conv2DOptions opts_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Conv2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("data_format", "channels_last");
  c.expect("groups", 1);
  return std::make_shared<Conv2DLayer>(c.integer("filters"), c.int2("kernel_size"),
                                       Conv2DOptions{.strides = c.int2("strides", 1),
                                                     .padding = c.string("padding", "valid"),
                                                     .dilation_rate = c.int2("dilation_rate", 1),
                                                     .activation = c.activation("activation"),
                                                     .use_bias = c.boolean("use_bias", true),
                                                     .kernel_initializer = c.initializer("kernel_initializer", "glorot_uniform"),
                                                     .bias_initializer = c.initializer("bias_initializer", "zeros"),
                                                     .name = c.name()});
});
}  // namespace

LayerRef Conv2D(int64_t filters, Int2 kernel_size, const Conv2DOptions& options) {
  return LayerRef(std::make_shared<Conv2DLayer>(filters, kernel_size, options));
}

}  // namespace tandem::layers
