// What the parameter-only activation layers (ReLU, LeakyReLU, ELU) share: a layer whose
// arguments are a Fields table over `Args` (which holds `name`), that applies one function to
// its input and passes the input's mask on, as Keras's activation layers do.
#pragma once

#include <functional>
#include <utility>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"

namespace tandem::layers {

template <class Args>
struct ActivationLayerKind {
  const char* class_name;  // Keras's class
  const char* prefix;      // its automatic names' stem: Keras's snake case of the class ("re_lu")
  const Fields<Args>* fields;
  std::function<graph::Value(graph::Graph&, graph::Value, const Args&)> apply;
};

template <class Args>
class ActivationFunctionLayer : public Layer {
 public:
  ActivationFunctionLayer(const ActivationLayerKind<Args>& kind, Args a) : Layer(kind.prefix, a.name), kind_(kind), args_(std::move(a)) {
    kind_.fields->check(who(), args_);
  }
  std::string class_name() const override { return kind_.class_name; }
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kind_.fields->config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    return kind_.apply(ctx.g, inputs[0], args_);
  }

 private:
  const ActivationLayerKind<Args>& kind_;
  Args args_;
};

// The layer of `kind` with arguments `a`, and its registration for loading.
template <class Args>
LayerRef make_activation_layer(const ActivationLayerKind<Args>& kind, Args a) {
  return LayerRef(std::make_shared<ActivationFunctionLayer<Args>>(kind, std::move(a)));
}
template <class Args>
RegisterLayer register_activation_layer(const ActivationLayerKind<Args>& kind) {
  return RegisterLayer(kind.class_name, [&kind](const ConfigReader& c) -> std::shared_ptr<Layer> {
    Args a{};
    a.name = c.name();
    return std::make_shared<ActivationFunctionLayer<Args>>(kind, kind.fields->read(c, std::move(a)));
  });
}

}  // namespace tandem::layers
