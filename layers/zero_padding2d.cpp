// ZeroPadding2D: zero rows above and below and zero columns left and right of each image.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ZeroPadding2DArgs {
  Padding2D padding;  // Keras's padding: 1, [1, 2] (height, width) or [[top, bottom], [left, right]]
  std::string name;
};

const Fields<ZeroPadding2DArgs> kFields{
    field<ZeroPadding2DArgs>("padding", [](auto& a) -> auto& { return a.padding; },
                             [](const Padding2D& p) {
                               return std::min({p.top, p.bottom, p.left, p.right}) >= 0 ? "" : "non-negative";
                             }),
    fixed<ZeroPadding2DArgs>("data_format", "channels_last"),
};

class ZeroPadding2DLayer : public Layer {
 public:
  explicit ZeroPadding2DLayer(ZeroPadding2DArgs a) : Layer("zero_padding2d", a.name), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "ZeroPadding2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(who(), ctx.g.type(inputs[0]).shape);
    const Padding2D& p = args_.padding;
    return ops::pad2d(ctx.g, inputs[0], {p.top, p.bottom, p.left, p.right});
  }

 private:
  ZeroPadding2DArgs args_;
};

const RegisterLayer registered("ZeroPadding2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ZeroPadding2DLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef ZeroPadding2D(Padding2D padding, const std::string& name) {
  return LayerRef(std::make_shared<ZeroPadding2DLayer>(ZeroPadding2DArgs{padding, name}));
}

}  // namespace tandem::layers
