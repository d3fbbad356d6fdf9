// Cropping2D: removes rows above and below and columns left and right of each image.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct Cropping2DArgs {
  Padding2D cropping = 0;  // Keras's cropping: 1, [1, 2] (height, width) or [[top, bottom], [left, right]]
  std::string name;
};

const Fields<Cropping2DArgs> kFields{
    field<Cropping2DArgs>("cropping", [](auto& a) -> auto& { return a.cropping; },
                          [](const Padding2D& p) { return std::min({p.top, p.bottom, p.left, p.right}) >= 0 ? "" : "non-negative"; }),
    fixed<Cropping2DArgs>("data_format", "channels_last"),
};

class Cropping2DLayer : public Layer {
 public:
  explicit Cropping2DLayer(Cropping2DArgs a) : Layer("cropping2d", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Cropping2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    detail::check_image(who(), x);
    const Padding2D& c = args_.cropping;
    if (c.top + c.bottom >= x[1] || c.left + c.right >= x[2])
      throw ShapeError(who() + ": cropping " + fields_detail::show(c) + " leaves nothing of the input's height and width " +
                       detail::pair_str(x[1], x[2]) + "; input shape " + detail::batch_str(x));
    if (c.top + c.bottom + c.left + c.right == 0) return inputs[0];
    return ops::crop2d(ctx.g, inputs[0], {c.top, c.bottom, c.left, c.right});
  }

 private:
  Cropping2DArgs args_;
};

const RegisterLayer registered("Cropping2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<Cropping2DLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Cropping2D(Padding2D cropping, const std::string& name) {
  return LayerRef(std::make_shared<Cropping2DLayer>(Cropping2DArgs{cropping, name}));
}

}  // namespace tandem::layers
