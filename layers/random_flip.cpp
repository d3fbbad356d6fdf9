// RandomFlip: while training, each image is mirrored (or not) on one draw with probability 1/2;
// in evaluate and predict it passes through.
#include "layers/augmentation_util.h"
#include "ops/attention.h"
#include "ops/ops.h"

namespace tandem::layers {

namespace {
struct RandomFlipArgs {
  std::string mode = "horizontal_and_vertical";
  std::optional<uint64_t> seed;
  std::string name;
};

const Fields<RandomFlipArgs> kFields{
    fixed<RandomFlipArgs>("data_format", "channels_last"),
    field<RandomFlipArgs>("seed", [](auto& a) -> auto& { return a.seed; }),
    field<RandomFlipArgs>("mode", [](auto& a) -> auto& { return a.mode; }, rules::one_of({"horizontal", "vertical", "horizontal_and_vertical"})),
};

class RandomFlipLayer : public Layer {
 public:
  // The seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  explicit RandomFlipLayer(RandomFlipArgs a) : Layer("random_flip", a.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    args_.seed = layer_seed(args_.seed);
  }
  std::string class_name() const override { return "RandomFlip"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const graph::Value x = inputs[0];
    const Shape& s = ctx.g.type(x).shape;
    detail::check_image(who(), s);
    if (!ctx.training) return x;
    // Keras flips both axes of an image on its one draw in "horizontal_and_vertical".
    graph::Value flipped = x;
    if (args_.mode != "vertical") flipped = ops::reverse(ctx.g, flipped, 2);
    if (args_.mode != "horizontal") flipped = ops::reverse(ctx.g, flipped, 1);
    const graph::Value flip = ops::random_image_params(ctx.g, x, ctx.step, {.kind = "flip", .seed = *args_.seed});
    return ops::where(ctx.g, ops::reshape(ctx.g, flip, Shape{s[0], 1, 1, 1}), flipped, x);
  }

 private:
  RandomFlipArgs args_;
};

const RegisterLayer registered("RandomFlip", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<RandomFlipLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef RandomFlip(const std::string& mode, std::optional<uint64_t> seed, const std::string& name) {
  return LayerRef(std::make_shared<RandomFlipLayer>(RandomFlipArgs{mode, seed, name}));
}

}  // namespace tandem::layers
