// SpatialDropout2D: Dropout of whole channels of channels-last images (see ops::spatial_dropout).
#include <optional>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct SpatialDropout2DArgs {
  double rate = 0.0;
  std::optional<uint64_t> seed;  // the mask's; none: drawn from the global seed
  std::string name;
};

const Fields<SpatialDropout2DArgs> kFields{
    required<SpatialDropout2DArgs>("rate", [](auto& a) -> auto& { return a.rate; }, rules::in_range(0, 1, false)),
    field<SpatialDropout2DArgs>("seed", [](auto& a) -> auto& { return a.seed; }),
    fixed<SpatialDropout2DArgs>("data_format", "channels_last"),
};

class SpatialDropout2DLayer : public Layer {
 public:
  // The mask seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  explicit SpatialDropout2DLayer(SpatialDropout2DArgs a) : Layer("spatial_dropout2d", a.name), args_(std::move(a)) {
    args_.seed = layer_seed(args_.seed);
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "SpatialDropout2D"; }
  // Keras's spatial dropout layers write rate, seed, name, the dtype's name (not a DTypePolicy) and
  // data_format: no "trainable".
  std::string config_json() const override {
    Json config = Json::parse(kFields.config_text(*this, args_));
    config.erase("trainable");
    config["dtype"] = dtype_name(dtype());
    return config.dump();
  }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(who(), ctx.g.type(inputs[0]).shape);
    if (!ctx.training || args_.rate == 0.0) return inputs[0];
    return ops::spatial_dropout(ctx.g, inputs[0], ctx.step, args_.rate, *args_.seed);
  }

 private:
  SpatialDropout2DArgs args_;
};

const RegisterLayer registered("SpatialDropout2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<SpatialDropout2DLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef SpatialDropout2D(double rate, std::optional<uint64_t> seed, const std::string& name) {
  return LayerRef(std::make_shared<SpatialDropout2DLayer>(SpatialDropout2DArgs{.rate = rate, .seed = seed, .name = name}));
}

}  // namespace tandem::layers
