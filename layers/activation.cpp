// Activation: applies a named activation function.
#include "layer_base/call_context.h"
#include "layers/activations.h"
#include "layers/config.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class ActivationLayer : public Layer {
 public:
  ActivationLayer(std::string activation, const std::string& name) : Layer("activation", name), activation_(std::move(activation)) {
    check_activation(activation_, "Activation \"" + this->name() + "\"");
  }
  std::string class_name() const override { return "Activation"; }
  std::string config_json() const override {
    return config_text(*this, {{"activation", activation_.empty() ? "linear" : activation_}});
  }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    return apply_activation(ctx.g, inputs[0], activation_);
  }

 private:
  std::string activation_;
};

const RegisterLayer registered("Activation", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ActivationLayer>(c.activation("activation"), c.name());
});
}  // namespace

LayerRef Activation(const std::string& activation, const std::string& name) {
  return LayerRef(std::make_shared<ActivationLayer>(activation, name));
}

}  // namespace tandem::layers
