// GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D: the mean or the max of each channel over
// the steps (1-D) or over height and width (2-D). One class: the four differ only in the axes and
// the reduction.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv1d_util.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct GlobalPoolingArgs {
  bool keepdims = false;
  std::string name;
};

const Fields<GlobalPoolingArgs> kFields{
    fixed<GlobalPoolingArgs>("data_format", "channels_last"),
    field<GlobalPoolingArgs>("keepdims", [](auto& a) -> auto& { return a.keepdims; }),
};

struct Kind {
  const char* class_name;
  const char* prefix;  // of automatic names
  int spatial_axes;    // 1: (batch, steps, channels); 2: (batch, height, width, channels)
  bool max;
};
constexpr Kind kAverage1D{"GlobalAveragePooling1D", "global_average_pooling1d", 1, false};
constexpr Kind kMax1D{"GlobalMaxPooling1D", "global_max_pooling1d", 1, true};
constexpr Kind kAverage2D{"GlobalAveragePooling2D", "global_average_pooling2d", 2, false};
constexpr Kind kMax2D{"GlobalMaxPooling2D", "global_max_pooling2d", 2, true};

class GlobalPoolingLayer : public Layer {
 public:
  GlobalPoolingLayer(const Kind& kind, GlobalPoolingArgs a) : Layer(kind.prefix, a.name), kind_(kind), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return kind_.class_name; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    std::vector<int64_t> axes{1};
    if (kind_.spatial_axes == 1) {
      detail::check_sequence(who(), x);
    } else {
      detail::check_image(who(), x);
      axes.push_back(2);
    }
    if (const graph::Value mask = ctx.input_mask(0); mask.valid() && consumes_mask()) return masked_mean(ctx, inputs[0], mask);
    return kind_.max ? ops::reduce_max(ctx.g, inputs[0], axes, args_.keepdims) : ops::reduce_mean(ctx.g, inputs[0], axes, args_.keepdims);
  }

  // GlobalAveragePooling1D takes the mean over the unmasked steps and ends the mask (Keras); the
  // other three do not take masks (Keras's do not either), so a masked input is refused.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                              const std::vector<graph::Value>& outputs) override {
    if (consumes_mask()) return {graph::Value{}};
    return Layer::emit_output_masks(ctx, inputs, outputs);
  }

 private:
  bool consumes_mask() const { return &kind_ == &kAverage1D; }

  // Σ x·m / Σ m over the steps: masked steps are chosen away (not multiplied, as Keras does, so
  // that whatever they hold does not matter).
  graph::Value masked_mean(CallContext& ctx, graph::Value x, graph::Value mask) const {
    graph::Graph& g = ctx.g;
    const TensorType t = g.type(x);
    const Shape ms = g.type(mask).shape;
    if (ms.rank() != 2 || ms[0] != t.shape[0] || ms[1] != t.shape[1])
      throw ShapeError(who() + ": expected a mask (batch, steps) = (" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) +
                       ") for its input " + t.shape.str() + ", got " + ms.str());
    const graph::Value m = ops::reshape(g, mask.valid() && g.type(mask).dtype != t.dtype ? ops::cast(g, mask, t.dtype) : mask,
                                        {ms[0], ms[1], 1});
    const graph::Value sum = ops::reduce_sum(g, ops::where(g, m, x, ops::fill(g, t, 0.0)), {1}, args_.keepdims);
    const graph::Value count = ops::reduce_sum(g, m, {1}, args_.keepdims);  // (batch, 1): divides every channel
    return ops::div(g, sum, count);
  }

  const Kind& kind_;
  GlobalPoolingArgs args_;
};

LayerRef make(const Kind& kind, bool keepdims, const std::string& name) {
  return LayerRef(std::make_shared<GlobalPoolingLayer>(kind, GlobalPoolingArgs{keepdims, name}));
}

ConfigFactory from_config(const Kind& kind) {
  return [&kind](const ConfigReader& c) -> std::shared_ptr<Layer> {
    return std::make_shared<GlobalPoolingLayer>(kind, kFields.read(c, {.name = c.name()}));
  };
}

const RegisterLayer average1d(kAverage1D.class_name, from_config(kAverage1D));
const RegisterLayer max1d(kMax1D.class_name, from_config(kMax1D));
const RegisterLayer average2d(kAverage2D.class_name, from_config(kAverage2D));
const RegisterLayer max2d(kMax2D.class_name, from_config(kMax2D));
}  // namespace

LayerRef GlobalAveragePooling1D(const GlobalPooling1DOptions& o) { return make(kAverage1D, o.keepdims, o.name); }
LayerRef GlobalMaxPooling1D(const GlobalPooling1DOptions& o) { return make(kMax1D, o.keepdims, o.name); }
LayerRef GlobalAveragePooling2D(const GlobalPooling2DOptions& o) { return make(kAverage2D, o.keepdims, o.name); }
LayerRef GlobalMaxPooling2D(const GlobalPooling2DOptions& o) { return make(kMax2D, o.keepdims, o.name); }

}  // namespace tandem::layers
