// ZeroPadding2D: zero rows above and below and zero columns left and right of each image.
#include "layers/conv_util.h"
#include "model/call_context.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class ZeroPadding2DLayer : public Layer {
 public:
  ZeroPadding2DLayer(std::array<int64_t, 4> padding, const std::string& name)
      : Layer("zero_padding2d", name), padding_(padding) {
    for (int64_t p : padding_)
      if (p < 0)
        throw ValueError(owner() + ": padding must be non-negative, got ((" + std::to_string(padding_[0]) + ", " +
                         std::to_string(padding_[1]) + "), (" + std::to_string(padding_[2]) + ", " +
                         std::to_string(padding_[3]) + "))");
  }
  std::string class_name() const override { return "ZeroPadding2D"; }

  graph::Value call(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(owner(), ctx.g.type(inputs[0]).shape);
    return ops::pad2d(ctx.g, inputs[0], padding_);
  }

 private:
  std::string owner() const { return "ZeroPadding2D \"" + name() + "\""; }
  std::array<int64_t, 4> padding_;  // top, bottom, left, right
};
}  // namespace

LayerRef ZeroPadding2D(Padding2D padding, const std::string& name) {
  return LayerRef(std::make_shared<ZeroPadding2DLayer>(
      std::array<int64_t, 4>{padding.top, padding.bottom, padding.left, padding.right}, name));
}

}  // namespace tandem::layers
