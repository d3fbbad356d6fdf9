// GlobalAveragePooling2D: the mean over height and width of each channel.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct GlobalAveragePooling2DArgs {
  GlobalPooling2DOptions options;
};

const Fields<GlobalAveragePooling2DArgs> kFields{
    fixed<GlobalAveragePooling2DArgs>("data_format", "channels_last"),
    field<GlobalAveragePooling2DArgs>("keepdims", [](auto& a) -> auto& { return a.options.keepdims; }),
};

class GlobalAveragePooling2DLayer : public Layer {
 public:
  explicit GlobalAveragePooling2DLayer(GlobalAveragePooling2DArgs a)
      : Layer("global_average_pooling2d", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "GlobalAveragePooling2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(who(), ctx.g.type(inputs[0]).shape);
    return ops::reduce_mean(ctx.g, inputs[0], {1, 2}, args_.options.keepdims);
  }

 private:
  GlobalAveragePooling2DArgs args_;
};

const RegisterLayer registered("GlobalAveragePooling2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<GlobalAveragePooling2DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef GlobalAveragePooling2D(const GlobalPooling2DOptions& options) {
  return LayerRef(std::make_shared<GlobalAveragePooling2DLayer>(GlobalAveragePooling2DArgs{options}));
}

}  // namespace tandem::layers
