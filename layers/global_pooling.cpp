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
    return kind_.max ? ops::reduce_max(ctx.g, inputs[0], axes, args_.keepdims) : ops::reduce_mean(ctx.g, inputs[0], axes, args_.keepdims);
  }

 private:
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
