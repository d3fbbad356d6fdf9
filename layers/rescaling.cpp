// Rescaling (Keras 3): x · scale + offset, in the layer's float dtype.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct RescalingArgs {
  double scale = 1.0;
  double offset = 0.0;
  std::string name;
};

// Keras also accepts arrays (one scale per channel); Tandem takes numbers, and a config with an
// array is refused naming the key.
const Fields<RescalingArgs> kFields{
    required<RescalingArgs>("scale", [](auto& a) -> auto& { return a.scale; }),
    field<RescalingArgs>("offset", [](auto& a) -> auto& { return a.offset; }),
};

class RescalingLayer : public Layer {
 public:
  explicit RescalingLayer(RescalingArgs a) : Layer("rescaling", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Rescaling"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  bool supports_masking() const override { return true; }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    // Integer inputs (image bytes read as int32) become floats first, as Keras casts them to the
    // compute dtype; dtype() is float32 for them.
    const graph::Value x = ops::cast(g, inputs[0], dtype());
    graph::Value y = args_.scale == 1.0 ? x : ops::scale(g, x, args_.scale);
    if (args_.offset != 0.0) y = ops::add(g, y, ops::fill(g, {Shape{}, dtype()}, args_.offset));
    return y;
  }

 private:
  RescalingArgs args_;
};

const RegisterLayer registered("Rescaling", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<RescalingLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Rescaling(double scale, double offset, const std::string& name) {
  return LayerRef(std::make_shared<RescalingLayer>(RescalingArgs{scale, offset, name}));
}

}  // namespace tandem::layers
