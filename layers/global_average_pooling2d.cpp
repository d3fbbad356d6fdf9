// GlobalAveragePooling2D: the mean over height and width of each channel.
#include "layers/conv_util.h"
#include "model/call_context.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class GlobalAveragePooling2DLayer : public Layer {
 public:
  explicit GlobalAveragePooling2DLayer(GlobalPooling2DOptions o)
      : Layer("global_average_pooling2d", o.name), keepdims_(o.keepdims) {}
  std::string class_name() const override { return "GlobalAveragePooling2D"; }

  graph::Value call(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image("GlobalAveragePooling2D \"" + name() + "\"", ctx.g.type(inputs[0]).shape);
    return ops::reduce_mean(ctx.g, inputs[0], {1, 2}, keepdims_);
  }

 private:
  bool keepdims_;
};
}  // namespace

LayerRef GlobalAveragePooling2D(const GlobalPooling2DOptions& options) {
  return LayerRef(std::make_shared<GlobalAveragePooling2DLayer>(options));
}

}  // namespace tandem::layers
