// RandomContrast: while training, each image's channels are spread about their means by a random
// factor and clipped to value_range: (x − mean) · c + mean, as Keras's.
#include "layers/augmentation_util.h"
#include "ops/ops.h"

namespace tandem::layers {

namespace {
struct RandomContrastArgs {
  Factor factor;
  RandomContrastOptions options;
};

const Fields<RandomContrastArgs> kFields{
    fixed<RandomContrastArgs>("data_format", "channels_last"),
    augmentation::value_field<RandomContrastArgs>("factor", [](auto& a) -> auto& { return a.factor; }, augmentation::within_bounds(0, 1)),
    augmentation::value_field<RandomContrastArgs>("value_range", [](auto& a) -> auto& { return a.options.value_range; }),
    field<RandomContrastArgs>("seed", [](auto& a) -> auto& { return a.options.seed; }),
};

class RandomContrastLayer : public Layer {
 public:
  // Keras keeps (and writes) the factor as its range: a number f becomes [0, f] (its lower bound
  // max(−f, 0)), so c is drawn in [1, 1 + f].
  explicit RandomContrastLayer(RandomContrastArgs a) : Layer("random_contrast", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    const auto [lower, upper] = augmentation::range(args_.factor, 0.0);
    args_.factor = Factor(lower, upper);
    args_.options.seed = layer_seed(args_.options.seed);
  }
  std::string class_name() const override { return "RandomContrast"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const graph::Value x = inputs[0];
    const TensorType type = g.type(x);
    detail::check_image(who(), type.shape);
    if (!ctx.training) return x;
    const graph::Value c = ops::random_image_params(g, x, ctx.step,
                                                    {.kind = "contrast", .h_lower = args_.factor.first, .h_upper = args_.factor.second,
                                                     .seed = *args_.options.seed});
    const graph::Value mean = ops::reduce_mean(g, x, {1, 2}, true);
    const graph::Value y = ops::add(g, ops::mul(g, ops::sub(g, x, mean), ops::reshape(g, c, Shape{type.shape[0], 1, 1, 1})), mean);
    const TensorType scalar{Shape{}, type.dtype};
    const graph::Value low = ops::fill(g, scalar, args_.options.value_range.first), high = ops::fill(g, scalar, args_.options.value_range.second);
    return ops::minimum(g, ops::maximum(g, y, low), high);
  }

 private:
  RandomContrastArgs args_;
};

const RegisterLayer registered("RandomContrast", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  RandomContrastArgs a;
  a.options.name = c.name();
  return std::make_shared<RandomContrastLayer>(kFields.read(c, a));
});
}  // namespace

LayerRef RandomContrast(Factor factor, const RandomContrastOptions& options) {
  return LayerRef(std::make_shared<RandomContrastLayer>(RandomContrastArgs{factor, options}));
}

}  // namespace tandem::layers
