// RandomTranslation: while training, each image is shifted by a random fraction of its height and
// width (Keras's translation matrix, sampled by image_affine_transform).
#include "layers/augmentation_util.h"

namespace tandem::layers {

namespace {
struct RandomTranslationArgs {
  Factor height_factor, width_factor;
  RandomTransformOptions options;
};

using A = RandomTranslationArgs;
const Fields<A> kFields{
    fixed<A>("data_format", "channels_last"),
    augmentation::value_field<A>("height_factor", [](auto& a) -> auto& { return a.height_factor; }, augmentation::each_in(-1, 1, false)),
    augmentation::value_field<A>("width_factor", [](auto& a) -> auto& { return a.width_factor; }, augmentation::each_in(-1, 1, false)),
    augmentation::fill_mode_field<A>(),
    augmentation::interpolation_field<A>(),
    augmentation::seed_field<A>(),
    augmentation::fill_value_field<A>(),
};

class RandomTranslationLayer : public Layer {
 public:
  explicit RandomTranslationLayer(RandomTranslationArgs a) : Layer("random_translation", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    args_.options.seed = layer_seed(args_.options.seed);
  }
  std::string class_name() const override { return "RandomTranslation"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const auto [h_lower, h_upper] = augmentation::range(args_.height_factor);
    const auto [w_lower, w_upper] = augmentation::range(args_.width_factor);
    return augmentation::transform(ctx, who(), inputs[0],
                                   {.kind = "translation", .h_lower = h_lower, .h_upper = h_upper, .w_lower = w_lower, .w_upper = w_upper,
                                    .seed = *args_.options.seed},
                                   args_.options);
  }

 private:
  RandomTranslationArgs args_;
};

const RegisterLayer registered("RandomTranslation", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  RandomTranslationArgs a;
  a.options.name = c.name();
  return std::make_shared<RandomTranslationLayer>(kFields.read(c, a));
});
}  // namespace

LayerRef RandomTranslation(Factor height_factor, Factor width_factor, const RandomTransformOptions& options) {
  return LayerRef(std::make_shared<RandomTranslationLayer>(RandomTranslationArgs{height_factor, width_factor, options}));
}

}  // namespace tandem::layers
