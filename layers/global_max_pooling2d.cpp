// GlobalMaxPooling2D: the max over height and width of each channel.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
const Fields<GlobalPooling2DOptions> kFields{
    fixed<GlobalPooling2DOptions>("data_format", "channels_last"),
    field<GlobalPooling2DOptions>("keepdims", [](auto& a) -> auto& { return a.keepdims; }),
};

class GlobalMaxPooling2DLayer : public Layer {
 public:
  explicit GlobalMaxPooling2DLayer(GlobalPooling2DOptions o) : Layer("global_max_pooling2d", o.name), args_(std::move(o)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "GlobalMaxPooling2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(who(), ctx.g.type(inputs[0]).shape);
    return ops::reduce_max(ctx.g, inputs[0], {1, 2}, args_.keepdims);
  }

 private:
  GlobalPooling2DOptions args_;
};

const RegisterLayer registered("GlobalMaxPooling2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<GlobalMaxPooling2DLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef GlobalMaxPooling2D(const GlobalPooling2DOptions& options) {
  return LayerRef(std::make_shared<GlobalMaxPooling2DLayer>(options));
}

}  // namespace tandem::layers
