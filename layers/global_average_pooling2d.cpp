// GlobalAveragePooling2D: the mean over height and width of each channel.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class GlobalAveragePooling2DLayer : public Layer {
 public:
  explicit GlobalAveragePooling2DLayer(GlobalPooling2DOptions o)
      : Layer("global_average_pooling2d", o.name), keepdims_(o.keepdims) {}
  std::string class_name() const override { return "GlobalAveragePooling2D"; }
  std::string config_json() const override {
    return config_text(*this, {{"data_format", "channels_last"}, {"keepdims", keepdims_}});
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image("GlobalAveragePooling2D \"" + name() + "\"", ctx.g.type(inputs[0]).shape);
    return ops::reduce_mean(ctx.g, inputs[0], {1, 2}, keepdims_);
  }

 private:
  bool keepdims_;
};

const RegisterLayer registered("GlobalAveragePooling2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("data_format", "channels_last");
  return std::make_shared<GlobalAveragePooling2DLayer>(GlobalPooling2DOptions{.keepdims = c.boolean("keepdims", false), .name = c.name()});
});
}  // namespace

LayerRef GlobalAveragePooling2D(const GlobalPooling2DOptions& options) {
  return LayerRef(std::make_shared<GlobalAveragePooling2DLayer>(options));
}

}  // namespace tandem::layers
