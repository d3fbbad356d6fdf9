// GlobalAveragePooling1D: the mean over the steps of each channel.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv1d_util.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
const Fields<GlobalPooling1DOptions> kFields{
    fixed<GlobalPooling1DOptions>("data_format", "channels_last"),
    field<GlobalPooling1DOptions>("keepdims", [](auto& a) -> auto& { return a.keepdims; }),
};

class GlobalAveragePooling1DLayer : public Layer {
 public:
  explicit GlobalAveragePooling1DLayer(GlobalPooling1DOptions o) : Layer("global_average_pooling1d", o.name), args_(std::move(o)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "GlobalAveragePooling1D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_sequence(who(), ctx.g.type(inputs[0]).shape);
    return ops::reduce_mean(ctx.g, inputs[0], {1}, args_.keepdims);
  }

 private:
  GlobalPooling1DOptions args_;
};

const RegisterLayer registered("GlobalAveragePooling1D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<GlobalAveragePooling1DLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef GlobalAveragePooling1D(const GlobalPooling1DOptions& options) {
  return LayerRef(std::make_shared<GlobalAveragePooling1DLayer>(options));
}

}  // namespace tandem::layers
