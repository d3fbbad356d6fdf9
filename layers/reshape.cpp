// Reshape: each sample to target_shape (batch excluded); one dimension may be -1.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class ReshapeLayer : public Layer {
 public:
  ReshapeLayer(Shape target, const std::string& name) : Layer("reshape", name), target_(std::move(target)) {
    int unknown = 0;
    for (int64_t d : target_.dims()) {
      if (d == -1) ++unknown;
      else if (d <= 0) throw ValueError("Reshape \"" + this->name() + "\": dimensions must be positive or -1, got " + target_.str());
    }
    if (unknown > 1) throw ValueError("Reshape \"" + this->name() + "\": at most one dimension may be -1, got " + target_.str());
  }
  std::string class_name() const override { return "Reshape"; }
  std::string config_json() const override { return config_text(*this, {{"target_shape", target_.dims()}}); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& s = ctx.g.type(inputs[0]).shape;
    const int64_t per_sample = s.num_elements() / std::max<int64_t>(1, s[0]);
    int64_t known = 1;
    for (int64_t d : target_.dims()) known *= d == -1 ? 1 : d;
    Shape out = target_.with_batch(s[0]);
    for (int i = 1; i < out.rank(); ++i)
      if (out[i] == -1) out[i] = known ? per_sample / known : 0;
    if (out.num_elements() != s.num_elements())
      throw ShapeError("Reshape \"" + name() + "\": cannot reshape input " + s.without_batch().with_batch(-1).str() +
                       " (" + std::to_string(per_sample) + " values per sample) to target shape " + target_.str());
    return ops::reshape(ctx.g, inputs[0], out);
  }

 private:
  Shape target_;
};

const RegisterLayer registered("Reshape", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ReshapeLayer>(Shape(c.integers("target_shape")), c.name());
});
}  // namespace

LayerRef Reshape(Shape target_shape, const std::string& name) {
  return LayerRef(std::make_shared<ReshapeLayer>(std::move(target_shape), name));
}

}  // namespace tandem::layers
