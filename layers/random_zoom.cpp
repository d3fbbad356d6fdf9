// RandomZoom: while training, each image is scaled about its centre by a random zoom per axis
// (Keras's zoom matrix, sampled by image_affine_transform).
#include "layers/augmentation_util.h"

namespace tandem::layers {

namespace {
struct RandomZoomArgs {
  Factor height_factor;
  std::optional<Factor> width_factor;
  RandomTransformOptions options;
};

using A = RandomZoomArgs;
const Fields<A> kFields{
    fixed<A>("data_format", "channels_last"),
    augmentation::value_field<A>("height_factor", [](auto& a) -> auto& { return a.height_factor; }, augmentation::each_in(-1, 1, true)),
    augmentation::value_field<A>("width_factor", [](auto& a) -> auto& { return a.width_factor; }, augmentation::each_in_or_none(-1, 1, true)),
    augmentation::fill_mode_field<A>(),
    augmentation::interpolation_field<A>(),
    augmentation::seed_field<A>(),
    augmentation::fill_value_field<A>(),
};

class RandomZoomLayer : public Layer {
 public:
  explicit RandomZoomLayer(RandomZoomArgs a) : Layer("random_zoom", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    args_.options.seed = layer_seed(args_.options.seed);
  }
  std::string class_name() const override { return "RandomZoom"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const auto [h_lower, h_upper] = augmentation::range(args_.height_factor);
    const auto [w_lower, w_upper] = augmentation::range(args_.width_factor.value_or(Factor()));
    return augmentation::transform(ctx, who(), inputs[0],
                                   {.kind = "zoom", .h_lower = h_lower, .h_upper = h_upper, .w_lower = w_lower, .w_upper = w_upper,
                                    .same_zoom = !args_.width_factor, .seed = *args_.options.seed},
                                   args_.options);
  }

 private:
  RandomZoomArgs args_;
};

const RegisterLayer registered("RandomZoom", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  RandomZoomArgs a;
  a.options.name = c.name();
  return std::make_shared<RandomZoomLayer>(kFields.read(c, a));
});
}  // namespace

LayerRef RandomZoom(Factor height_factor, std::optional<Factor> width_factor, const RandomTransformOptions& options) {
  return LayerRef(std::make_shared<RandomZoomLayer>(RandomZoomArgs{height_factor, width_factor, options}));
}

}  // namespace tandem::layers
