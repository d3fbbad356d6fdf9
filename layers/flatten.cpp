// Flatten: (batch, d1, d2, ...) -> (batch, d1·d2·...).
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(const std::string& name) : Layer("flatten", name) {}
  std::string class_name() const override { return "Flatten"; }
  std::string config_json() const override { return config_text(*this, {{"data_format", "channels_last"}}); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& s = ctx.g.type(inputs[0]).shape;
    return ops::reshape(ctx.g, inputs[0], {s[0], s.num_elements() / std::max<int64_t>(1, s[0])});
  }
};

const RegisterLayer registered("Flatten", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  // Flattening channels-first data would only reorder it; Tandem has channels-last images only.
  c.expect("data_format", "channels_last");
  return std::make_shared<FlattenLayer>(c.name());
});
}  // namespace

LayerRef Flatten(const std::string& name) { return LayerRef(std::make_shared<FlattenLayer>(name)); }

}  // namespace tandem::layers
