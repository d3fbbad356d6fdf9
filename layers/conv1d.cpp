// Conv1D: y = activation(conv1d(x, kernel) + bias), kernel (kernel_size, in_channels, filters) as
// Keras stores it, input (batch, steps, channels). Computed by conv2d on the (batch, 1, steps,
// channels) view with the (1, kernel_size, in_channels, filters) view of the kernel; "causal"
// padding is (kernel_size − 1)·dilation_rate zero steps before the first, then "valid", as Keras
// does it.
#include <algorithm>
#include <cctype>

#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/conv1d_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct Conv1DArgs {
  int64_t filters = 0;
  int64_t kernel_size = 0;
  Conv1DOptions options;
};

const Fields<Conv1DArgs> kFields({
    required<Conv1DArgs>("filters", [](auto& a) -> auto& { return a.filters; }, rules::positive),
    int1<Conv1DArgs>("kernel_size", [](auto& a) -> auto& { return a.kernel_size; }, rules::positive, true),
    int1<Conv1DArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    field<Conv1DArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same", "causal"})),
    fixed<Conv1DArgs>("data_format", "channels_last"),
    int1<Conv1DArgs>("dilation_rate", [](auto& a) -> auto& { return a.options.dilation_rate; }, rules::positive),
    fixed<Conv1DArgs>("groups", 1),
    activation<Conv1DArgs>("activation", [](auto& a) -> auto& { return a.options.activation; }),
    field<Conv1DArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<Conv1DArgs>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
    initializer<Conv1DArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
    regularizer<Conv1DArgs>("activity_regularizer", [](auto& a) -> auto& { return a.options.activity_regularizer; })},
    kernel_bias_penalties<Conv1DArgs>([](auto& a) -> auto& { return a.options; }));

class Conv1DLayer : public Layer {
 public:
  explicit Conv1DLayer(Conv1DArgs a) : Layer("conv1d", a.options.name), args_(std::move(a)) {
    std::string& padding = args_.options.padding;  // Keras accepts any case and stores the lower-case name
    std::transform(padding.begin(), padding.end(), padding.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
    const Conv1DOptions& o = args_.options;
    // Keras rejects this combination too.
    if (o.strides > 1 && o.dilation_rate > 1)
      throw ValueError(who() + ": strides > 1 is not supported together with dilation_rate > 1; got strides " +
                       std::to_string(o.strides) + " and dilation_rate " + std::to_string(o.dilation_rate));
  }
  std::string class_name() const override { return "Conv1D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
    kernel_ = add_weight("kernel", {args_.kernel_size, in[0][1], args_.filters}, args_.options.kernel_initializer, true,
                         args_.options.kernel_regularizer, args_.options.kernel_constraint);
    if (args_.options.use_bias)
      bias_ = add_weight("bias", {args_.filters}, args_.options.bias_initializer, true, args_.options.bias_regularizer, args_.options.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const Shape& ks = kernel_->value().shape();
    if (x[2] != ks[1])
      throw ShapeError(who() + ": expected input with " + std::to_string(ks[1]) + " channels (last axis), got " + detail::batch_str(x));
    const Conv1DOptions& o = args_.options;
    graph::Value x4 = ops::reshape(ctx.g, inputs[0], Shape{x[0], 1, x[1], x[2]});
    std::string padding = o.padding;
    if (padding == "causal") {
      x4 = ops::pad2d(ctx.g, x4, {0, 0, (ks[0] - 1) * o.dilation_rate, 0});
      padding = "valid";
    }
    const graph::Value k4 = ops::reshape(ctx.g, ctx.variable(*kernel_), Shape{1, ks[0], ks[1], ks[2]});
    graph::Value y = ops::conv2d(ctx.g, x4, k4, {1, o.strides}, {1, o.dilation_rate}, padding);
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    y = apply_activation(ctx.g, y, o.activation);
    const Shape& ys = ctx.g.type(y).shape;
    return ops::reshape(ctx.g, y, Shape{ys[0], ys[2], ys[3]});
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_sequence(who(), x);
    detail::check_window_fits_1d(who(), "kernel_size", args_.kernel_size, args_.options.dilation_rate, args_.options.padding, x);
  }

  Conv1DArgs args_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Conv1D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<Conv1DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Conv1D(int64_t filters, int64_t kernel_size, const Conv1DOptions& options) {
  return LayerRef(std::make_shared<Conv1DLayer>(Conv1DArgs{filters, kernel_size, options}));
}

}  // namespace tandem::layers
