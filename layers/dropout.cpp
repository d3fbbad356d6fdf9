// Dropout: zeroes a fraction `rate` of elements during training and scales the rest by 1/(1−rate).
#include <optional>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct DropoutArgs {
  double rate = 0.0;
  std::optional<uint64_t> seed;  // the mask's; none: drawn from the global seed
  std::string name;
};

const Fields<DropoutArgs> kFields{
    required<DropoutArgs>("rate", [](auto& a) -> auto& { return a.rate; }, rules::in_range(0, 1, false)),
    field<DropoutArgs>("seed", [](auto& a) -> auto& { return a.seed; }),
    unused<DropoutArgs>("noise_shape"),
};

class DropoutLayer : public Layer {
 public:
  // The mask seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  explicit DropoutLayer(DropoutArgs a) : Layer("dropout", a.name), args_(std::move(a)) {
    args_.seed = layer_seed(args_.seed);
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "Dropout"; }
  // Keras: the input's mask passes through unchanged (steps stay steps).
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    if (!ctx.training || args_.rate == 0.0) return inputs[0];
    return ops::dropout(ctx.g, inputs[0], ctx.step, args_.rate, *args_.seed);
  }

 private:
  DropoutArgs args_;
};

const RegisterLayer registered("Dropout", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<DropoutLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Dropout(double rate, const std::string& name) {
  return LayerRef(std::make_shared<DropoutLayer>(DropoutArgs{.rate = rate, .name = name}));
}

}  // namespace tandem::layers
