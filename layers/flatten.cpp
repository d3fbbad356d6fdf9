// Flatten: (batch, d1, d2, ...) -> (batch, d1·d2·...).
#include "model/call_context.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(const std::string& name) : Layer("flatten", name) {}
  std::string class_name() const override { return "Flatten"; }
  graph::Value call(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& s = ctx.g.type(inputs[0]).shape;
    return ops::reshape(ctx.g, inputs[0], {s[0], s.num_elements() / std::max<int64_t>(1, s[0])});
  }
};
}  // namespace

LayerRef Flatten(const std::string& name) { return LayerRef(std::make_shared<FlattenLayer>(name)); }

}  // namespace tandem::layers
