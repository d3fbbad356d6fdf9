// Conv2DTranspose: y = activation(conv2d_transpose(x, kernel) + bias), kernel (kh, kw, filters,
// in_channels) as Keras stores it, with Keras 3's output size (see ops::conv2d_transpose).
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
struct Conv2DTransposeArgs {
  int64_t filters = 0;
  Int2 kernel_size;
  Conv2DTransposeOptions options;
};

// output_padding: null (Keras None) or [h, w].
Field<Conv2DTransposeArgs> output_padding_field() {
  return {"output_padding",
          [](const Conv2DTransposeArgs& a) { return a.options.output_padding.given ? int2_json(a.options.output_padding) : Json(nullptr); },
          [](const ConfigReader& c, Conv2DTransposeArgs& a) { a.options.output_padding = c.int2("output_padding", Int2{}); },
          [](const std::string& who, const Conv2DTransposeArgs& a) {
            const Int2& p = a.options.output_padding;
            if (!p.given) return;
            const Int2& s = a.options.strides;
            if (p.h < 0 || p.w < 0 || p.h >= s.h || p.w >= s.w)
              throw ValueError(who + ": output_padding must be non-negative and strictly less than strides; got output_padding " +
                               detail::pair_str(p) + " and strides " + detail::pair_str(s));
          }};
}

const Fields<Conv2DTransposeArgs> kFields({
    required<Conv2DTransposeArgs>("filters", [](auto& a) -> auto& { return a.filters; }, rules::positive),
    required<Conv2DTransposeArgs>("kernel_size", [](auto& a) -> auto& { return a.kernel_size; }, rules::positive),
    field<Conv2DTransposeArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    field<Conv2DTransposeArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same"})),
    output_padding_field(),
    fixed<Conv2DTransposeArgs>("data_format", "channels_last"),
    field<Conv2DTransposeArgs>("dilation_rate", [](auto& a) -> auto& { return a.options.dilation_rate; }, rules::positive),
    activation<Conv2DTransposeArgs>("activation", [](auto& a) -> auto& { return a.options.activation; }),
    field<Conv2DTransposeArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    initializer<Conv2DTransposeArgs>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
    initializer<Conv2DTransposeArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
},
    kernel_bias_penalties<Conv2DTransposeArgs>([](auto& a) -> auto& { return a.options; }, true));

class Conv2DTransposeLayer : public Layer {
 public:
  explicit Conv2DTransposeLayer(Conv2DTransposeArgs a) : Layer("conv2d_transpose", a.options.name), args_(std::move(a)) {
    if (!args_.kernel_size.given) throw ValueError(who() + ": kernel_size must be given");
    args_.options.padding = detail::padding_mode(who(), args_.options.padding);  // Keras accepts any case
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
  }
  std::string class_name() const override { return "Conv2DTranspose"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    detail::check_image(who(), in[0].with_batch(-1));
    const Int2& k = args_.kernel_size;
    const Conv2DTransposeOptions& o = args_.options;
    kernel_ = add_weight("kernel", {k.h, k.w, args_.filters, in[0][2]}, o.kernel_initializer, true, o.kernel_regularizer, o.kernel_constraint);
    if (o.use_bias) bias_ = add_weight("bias", {args_.filters}, o.bias_initializer, true, o.bias_regularizer, o.bias_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    detail::check_image(who(), x);
    const int64_t channels = kernel_->value().shape()[3];
    if (x[3] != channels)
      throw ShapeError(who() + ": expected input with " + std::to_string(channels) + " channels (last axis), got " + detail::batch_str(x));
    const Conv2DTransposeOptions& o = args_.options;
    const std::optional<ops::Pair> extra =
        o.output_padding.given ? std::optional<ops::Pair>(ops::Pair{o.output_padding.h, o.output_padding.w}) : std::nullopt;
    graph::Value y = ops::conv2d_transpose(ctx.g, inputs[0], ctx.variable(*kernel_), {o.strides.h, o.strides.w},
                                           {o.dilation_rate.h, o.dilation_rate.w}, o.padding, extra);
    if (bias_) y = ops::bias_add(ctx.g, y, ctx.variable(*bias_));
    return apply_activation(ctx.g, y, o.activation);
  }

 private:
  Conv2DTransposeArgs args_;
  VariablePtr kernel_, bias_;
};

const RegisterLayer registered("Conv2DTranspose", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<Conv2DTransposeLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Conv2DTranspose(int64_t filters, Int2 kernel_size, const Conv2DTransposeOptions& options) {
  return LayerRef(std::make_shared<Conv2DTransposeLayer>(Conv2DTransposeArgs{filters, kernel_size, options}));
}

}  // namespace tandem::layers
