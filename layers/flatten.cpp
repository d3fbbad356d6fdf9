// Flatten: (batch, d1, d2, ...) -> (batch, d1·d2·...).
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct FlattenArgs {
  std::string name;
};

const Fields<FlattenArgs> kFields{
    // Flattening channels-first data would only reorder it; Tandem has channels-last images only.
    fixed<FlattenArgs>("data_format", "channels_last"),
};

class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(FlattenArgs a) : Layer("flatten", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Flatten"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& s = ctx.g.type(inputs[0]).shape;
    return ops::reshape(ctx.g, inputs[0], {s[0], s.num_elements() / std::max<int64_t>(1, s[0])});
  }

 private:
  FlattenArgs args_;
};

const RegisterLayer registered("Flatten", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<FlattenLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Flatten(const std::string& name) { return LayerRef(std::make_shared<FlattenLayer>(FlattenArgs{name})); }

}  // namespace tandem::layers
