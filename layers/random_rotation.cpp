// RandomRotation: while training, each image is rotated about its centre by a random fraction of a
// turn (Keras's rotation matrix, sampled by image_affine_transform).
#include "layers/augmentation_util.h"

namespace tandem::layers {

namespace {
struct RandomRotationArgs {
  Factor factor;
  RandomTransformOptions options;
};

using A = RandomRotationArgs;
const Fields<A> kFields{
    fixed<A>("data_format", "channels_last"),
    augmentation::value_field<A>("factor", [](auto& a) -> auto& { return a.factor; }, augmentation::within_bounds(-1, 1)),
    augmentation::fill_mode_field<A>(),
    augmentation::fill_value_field<A>(),
    augmentation::interpolation_field<A>(),
    augmentation::seed_field<A>(),
};

class RandomRotationLayer : public Layer {
 public:
  // Keras keeps (and writes) the factor as its range (lower, upper): 0.2 becomes [-0.2, 0.2].
  explicit RandomRotationLayer(RandomRotationArgs a) : Layer("random_rotation", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    const auto [lower, upper] = augmentation::range(args_.factor, -1.0);
    args_.factor = Factor(lower, upper);
    args_.options.seed = layer_seed(args_.options.seed);
  }
  std::string class_name() const override { return "RandomRotation"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    return augmentation::transform(ctx, who(), inputs[0],
                                   {.kind = "rotation", .h_lower = args_.factor.first, .h_upper = args_.factor.second, .seed = *args_.options.seed},
                                   args_.options);
  }

 private:
  RandomRotationArgs args_;
};

const RegisterLayer registered("RandomRotation", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  RandomRotationArgs a;
  a.options.name = c.name();
  return std::make_shared<RandomRotationLayer>(kFields.read(c, a));
});
}  // namespace

LayerRef RandomRotation(Factor factor, const RandomTransformOptions& options) {
  return LayerRef(std::make_shared<RandomRotationLayer>(RandomRotationArgs{factor, options}));
}

}  // namespace tandem::layers
