// UpSampling2D (Keras 3): images enlarged by whole factors; "nearest" repeats each pixel (the same
// as resize2d's nearest at a whole factor), "bilinear" resizes as Keras's ops.image.resize.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "ops/resize.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct UpSampling2DArgs {
  Int2 size = 2;
  UpSampling2DOptions options;
};

const Fields<UpSampling2DArgs> kFields{
    field<UpSampling2DArgs>("size", [](auto& a) -> auto& { return a.size; }, rules::positive),
    fixed<UpSampling2DArgs>("data_format", "channels_last"),
    field<UpSampling2DArgs>("interpolation", [](auto& a) -> auto& { return a.options.interpolation; }, rules::one_of({"nearest", "bilinear"})),
};

class UpSampling2DLayer : public Layer {
 public:
  explicit UpSampling2DLayer(UpSampling2DArgs a) : Layer("up_sampling2d", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "UpSampling2D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const TensorType& t = ctx.g.type(inputs[0]);
    detail::check_image(who(), t.shape);
    if (!ops::is_float(t.dtype)) throw ValueError(who() + ": expected float images, got " + dtype_name(t.dtype));
    if (args_.size.h == 1 && args_.size.w == 1) return inputs[0];
    const auto method = args_.options.interpolation == "nearest" ? ops::ResizeMethod::nearest : ops::ResizeMethod::bilinear;
    return ops::resize2d(ctx.g, inputs[0], t.shape[1] * args_.size.h, t.shape[2] * args_.size.w, method);
  }

 private:
  UpSampling2DArgs args_;
};

const RegisterLayer registered("UpSampling2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<UpSampling2DLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef UpSampling2D(Int2 size, const UpSampling2DOptions& options) {
  return LayerRef(std::make_shared<UpSampling2DLayer>(UpSampling2DArgs{size, options}));
}

}  // namespace tandem::layers
