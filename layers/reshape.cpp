// Reshape: each sample to target_shape (batch excluded); one dimension may be -1.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ReshapeArgs {
  Shape target_shape;
  std::string name;
};

// Each dimension positive, or -1 (inferred) for one of them at most.
std::string sizes_or_one_unknown(const Shape& s) {
  int unknown = 0;
  for (int64_t d : s.dims()) {
    if (d == -1) ++unknown;
    else if (d <= 0) return "positive sizes or -1";
  }
  return unknown > 1 ? "positive sizes with at most one -1" : "";
}

const Fields<ReshapeArgs> kFields{
    required<ReshapeArgs>("target_shape", [](auto& a) -> auto& { return a.target_shape; }, sizes_or_one_unknown),
};

class ReshapeLayer : public Layer {
 public:
  explicit ReshapeLayer(ReshapeArgs a) : Layer("reshape", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Reshape"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& s = ctx.g.type(inputs[0]).shape;
    const int64_t per_sample = s.num_elements() / std::max<int64_t>(1, s[0]);
    int64_t known = 1;
    const Shape& target = args_.target_shape;
    for (int64_t d : target.dims()) known *= d == -1 ? 1 : d;
    Shape out = target.with_batch(s[0]);
    for (int i = 1; i < out.rank(); ++i)
      if (out[i] == -1) out[i] = known ? per_sample / known : 0;
    if (out.num_elements() != s.num_elements())
      throw ShapeError(who() + ": cannot reshape input " + s.without_batch().with_batch(-1).str() +
                       " (" + std::to_string(per_sample) + " values per sample) to target shape " + target.str());
    return ops::reshape(ctx.g, inputs[0], out);
  }

 private:
  ReshapeArgs args_;
};

const RegisterLayer registered("Reshape", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ReshapeLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Reshape(Shape target_shape, const std::string& name) {
  return LayerRef(std::make_shared<ReshapeLayer>(ReshapeArgs{std::move(target_shape), name}));
}

}  // namespace tandem::layers
