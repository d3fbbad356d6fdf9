// Activation: applies a named activation function.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ActivationArgs {
  std::string activation;
  std::string name;
};

const Fields<ActivationArgs> kFields{
    activation<ActivationArgs>("activation", [](auto& a) -> auto& { return a.activation; }),
};

class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(ActivationArgs a) : Layer("activation", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Activation"; }
  // Keras: the input's mask passes through unchanged (steps stay steps).
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    return apply_activation(ctx.g, inputs[0], args_.activation);
  }

 private:
  ActivationArgs args_;
};

const RegisterLayer registered("Activation", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ActivationLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Activation(const std::string& activation, const std::string& name) {
  return LayerRef(std::make_shared<ActivationLayer>(ActivationArgs{activation, name}));
}

}  // namespace tandem::layers
