// MaxPooling2D and AveragePooling2D: one class, like Keras's shared pooling base; they differ only
// in the op they emit.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct Pooling2DArgs {
  Int2 pool_size = 2;  // MaxPooling2D's and AveragePooling2D's default (tandem/layers/conv.h), as Keras's
  Pooling2DOptions options;
};

const Fields<Pooling2DArgs> kFields{
    field<Pooling2DArgs>("pool_size", [](auto& a) -> auto& { return a.pool_size; }, rules::positive),
    field<Pooling2DArgs>("padding", [](auto& a) -> auto& { return a.options.padding; }, rules::one_of({"valid", "same"})),
    field<Pooling2DArgs>("strides", [](auto& a) -> auto& { return a.options.strides; }, rules::positive),
    fixed<Pooling2DArgs>("data_format", "channels_last"),
};

class Pooling2DLayer : public Layer {
 public:
  Pooling2DLayer(bool max, Pooling2DArgs a)
      : Layer(max ? "max_pooling2d" : "average_pooling2d", a.options.name), max_(max), args_(std::move(a)) {
    if (!args_.pool_size.given) throw ValueError(who() + ": pool_size must be given");
    if (!args_.options.strides.given) args_.options.strides = args_.pool_size;  // Keras: strides=None means pool_size
    args_.options.padding = detail::padding_mode(who(), args_.options.padding);  // Keras accepts any case
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return max_ ? "MaxPooling2D" : "AveragePooling2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    check_input(ctx.g.type(inputs[0]).shape);
    const Int2& p = args_.pool_size;
    const Pooling2DOptions& o = args_.options;
    const ops::Pair pool{p.h, p.w}, strides{o.strides.h, o.strides.w};
    return max_ ? ops::max_pool2d(ctx.g, inputs[0], pool, strides, o.padding) : ops::avg_pool2d(ctx.g, inputs[0], pool, strides, o.padding);
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_image(who(), x);
    detail::check_window_fits(who(), "pool_size", args_.pool_size, Int2(1), args_.options.padding, x);
  }

  bool max_;
  Pooling2DArgs args_;
};

std::shared_ptr<Layer> pooling_from(bool max, const ConfigReader& c) {
  return std::make_shared<Pooling2DLayer>(max, kFields.read(c, {.options = {.name = c.name()}}));
}
const RegisterLayer registered_max("MaxPooling2D", [](const ConfigReader& c) { return pooling_from(true, c); });
const RegisterLayer registered_average("AveragePooling2D", [](const ConfigReader& c) { return pooling_from(false, c); });
}  // namespace

LayerRef MaxPooling2D(Int2 pool_size, const Pooling2DOptions& options) {
  return LayerRef(std::make_shared<Pooling2DLayer>(true, Pooling2DArgs{pool_size, options}));
}
LayerRef AveragePooling2D(Int2 pool_size, const Pooling2DOptions& options) {
  return LayerRef(std::make_shared<Pooling2DLayer>(false, Pooling2DArgs{pool_size, options}));
}

}  // namespace tandem::layers
