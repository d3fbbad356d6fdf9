// Dropout: zeroes a fraction `rate` of elements during training and scales the rest by 1/(1−rate).
#include <optional>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class DropoutLayer : public Layer {
 public:
  // The mask seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  DropoutLayer(double rate, const std::string& name, std::optional<uint64_t> seed = std::nullopt)
      : Layer("dropout", name), rate_(rate), seed_(layer_seed(seed)) {
    if (!(rate >= 0.0 && rate < 1.0))
      throw ValueError("Dropout \"" + this->name() + "\": rate must be in [0, 1), got " + std::to_string(rate));
  }
  std::string class_name() const override { return "Dropout"; }
  std::string config_json() const override {
    return config_text(*this, {{"rate", rate_}, {"seed", seed_}, {"noise_shape", nullptr}});
  }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    if (!ctx.training || rate_ == 0.0) return inputs[0];
    return ops::dropout(ctx.g, inputs[0], ctx.step, rate_, seed_);
  }

 private:
  double rate_;
  uint64_t seed_;
};

const RegisterLayer registered("Dropout", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("noise_shape", nullptr);
  return std::make_shared<DropoutLayer>(c.number("rate"), c.name(), c.seed("seed"));
});
}  // namespace

LayerRef Dropout(double rate, const std::string& name) { return LayerRef(std::make_shared<DropoutLayer>(rate, name)); }

}  // namespace tandem::layers
