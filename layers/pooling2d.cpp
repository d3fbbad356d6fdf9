// MaxPooling2D and AveragePooling2D: one class, like Keras's shared pooling base; they differ only
// in the op they emit.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class Pooling2DLayer : public Layer {
 public:
  Pooling2DLayer(bool max, Int2 pool_size, Pooling2DOptions o)
      : Layer(max ? "max_pooling2d" : "average_pooling2d", o.name), max_(max), pool_(pool_size), opts_(std::move(o)) {
    const std::string me = owner();
    if (!pool_.given) throw ValueError(me + ": pool_size must be given");
    detail::check_positive(me, "pool_size", pool_);
    if (!opts_.strides.given) opts_.strides = pool_;  // Keras: strides=None means pool_size
    detail::check_positive(me, "strides", opts_.strides);
    opts_.padding = detail::padding_mode(me, opts_.padding);
  }
  std::string class_name() const override { return max_ ? "MaxPooling2D" : "AveragePooling2D"; }
  std::string config_json() const override {
    return config_text(*this, {{"pool_size", int2_json(pool_)},
                               {"padding", opts_.padding},
                               {"strides", int2_json(opts_.strides)},
                               {"data_format", "channels_last"}});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(owner() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    check_input(ctx.g.type(inputs[0]).shape);
    const ops::Pair pool{pool_.h, pool_.w}, strides{opts_.strides.h, opts_.strides.w};
    return max_ ? ops::max_pool2d(ctx.g, inputs[0], pool, strides, opts_.padding)
                : ops::avg_pool2d(ctx.g, inputs[0], pool, strides, opts_.padding);
  }

 private:
  std::string owner() const { return class_name() + " \"" + name() + "\""; }
  void check_input(const Shape& x) const {
    detail::check_image(owner(), x);
    detail::check_window_fits(owner(), "pool_size", pool_, Int2(1), opts_.padding, x);
  }

  bool max_;
  Int2 pool_;
  Pooling2DOptions opts_;
};

std::shared_ptr<Layer> pooling_from(bool max, const ConfigReader& c) {
  c.expect("data_format", "channels_last");
  return std::make_shared<Pooling2DLayer>(
      max, c.int2("pool_size", 2),
      Pooling2DOptions{.strides = c.int2("strides", Int2()), .padding = c.string("padding", "valid"), .name = c.name()});
}
const RegisterLayer registered_max("MaxPooling2D", [](const ConfigReader& c) { return pooling_from(true, c); });
const RegisterLayer registered_average("AveragePooling2D", [](const ConfigReader& c) { return pooling_from(false, c); });
}  // namespace

LayerRef MaxPooling2D(Int2 pool_size, const Pooling2DOptions& options) {
  return LayerRef(std::make_shared<Pooling2DLayer>(true, pool_size, options));
}
LayerRef AveragePooling2D(Int2 pool_size, const Pooling2DOptions& options) {
  return LayerRef(std::make_shared<Pooling2DLayer>(false, pool_size, options));
}

}  // namespace tandem::layers
