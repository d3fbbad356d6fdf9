// Dropout: zeroes a fraction `rate` of elements during training and scales the rest by 1/(1−rate).
#include "model/call_context.h"
#include "model/initializers.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class DropoutLayer : public Layer {
 public:
  DropoutLayer(double rate, const std::string& name) : Layer("dropout", name), rate_(rate), seed_(next_seed()) {
    if (!(rate >= 0.0 && rate < 1.0))
      throw ValueError("Dropout \"" + this->name() + "\": rate must be in [0, 1), got " + std::to_string(rate));
  }
  std::string class_name() const override { return "Dropout"; }
  graph::Value call(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    if (!ctx.training || rate_ == 0.0) return inputs[0];
    return ops::dropout(ctx.g, inputs[0], ctx.step, rate_, seed_, ctx.row_offset);
  }

 private:
  double rate_;
  uint64_t seed_;
};

}  // namespace

LayerRef Dropout(double rate, const std::string& name) { return LayerRef(std::make_shared<DropoutLayer>(rate, name)); }

}  // namespace tandem::layers
