// Masking: marks as padding the steps whose features all equal mask_value. Those steps come out
// as zeros and the output carries the mask of the other steps, as Keras's Masking does.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct MaskingArgs {
  double mask_value = 0.0;
  std::string name;
};

const Fields<MaskingArgs> kFields{
    field<MaskingArgs>("mask_value", [](auto& a) -> auto& { return a.mask_value; }),
};

class MaskingLayer : public Layer {
 public:
  explicit MaskingLayer(MaskingArgs a) : Layer("masking", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Masking"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const graph::Value x = inputs[0];
    const TensorType t = ctx.g.type(x);
    // Zeroed by choice rather than by a product, so that masked steps are 0 whatever they held.
    return ops::where(ctx.g, kept(ctx, x, true), x, ops::fill(ctx.g, t, 0.0));
  }

  // The mask: 1 where some feature differs from mask_value, over the last axis.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                              const std::vector<graph::Value>&) override {
    return {kept(ctx, inputs[0], false)};
  }

 private:
  graph::Value kept(CallContext& ctx, graph::Value x, bool keepdims) const {
    const TensorType t = ctx.g.type(x);
    if (t.shape.rank() < 2 || !ops::is_float(t.dtype))
      throw ShapeError(who() + ": expected a float input of rank 2 or more (batch, ..., features), got " + dtype_name(t.dtype) + " " +
                       t.shape.str());
    const graph::Value differs = ops::compare(ctx.g, "not_equal", x, ops::fill(ctx.g, {Shape{}, t.dtype}, args_.mask_value));
    return ops::reduce_max(ctx.g, differs, {t.shape.rank() - 1}, keepdims);
  }

  MaskingArgs args_;
};

const RegisterLayer registered("Masking", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<MaskingLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Masking(double mask_value, const std::string& name) {
  return LayerRef(std::make_shared<MaskingLayer>(MaskingArgs{.mask_value = mask_value, .name = name}));
}

}  // namespace tandem::layers
