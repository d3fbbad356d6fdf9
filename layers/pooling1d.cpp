// MaxPooling1D and AveragePooling1D: one class, like Keras's shared pooling base; they differ only
// in the op they emit. Computed by max_pool2d / avg_pool2d with (1, pool_size) windows on the
// (batch, 1, steps, channels) view, so "same" padding never counts padded steps (the average
// divides by the real steps of each window, as Keras does).
#include <algorithm>
#include <cctype>
#include <limits>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv1d_util.h"
#include "layers/fields.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

struct Pooling1DArgs {
  int64_t pool_size = 2;
  int64_t strides = kNone;  // until resolved: Keras's None, pool_size
  std::string padding = "valid";
  std::string name{};
};

const Fields<Pooling1DArgs> kFields{
    int1<Pooling1DArgs>("pool_size", [](auto& a) -> auto& { return a.pool_size; }, rules::positive),
    field<Pooling1DArgs>("padding", [](auto& a) -> auto& { return a.padding; }, rules::one_of({"valid", "same"})),
    int1<Pooling1DArgs>("strides", [](auto& a) -> auto& { return a.strides; }, rules::positive),
    fixed<Pooling1DArgs>("data_format", "channels_last"),
};

class Pooling1DLayer : public Layer {
 public:
  Pooling1DLayer(bool max, Pooling1DArgs a)
      : Layer(max ? "max_pooling1d" : "average_pooling1d", a.name), max_(max), args_(std::move(a)) {
    if (args_.strides == kNone) args_.strides = args_.pool_size;  // Keras: strides=None means pool_size
    std::transform(args_.padding.begin(), args_.padding.end(), args_.padding.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return max_ ? "MaxPooling1D" : "AveragePooling1D"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1) throw ValueError(who() + ": expected one input, got " + std::to_string(in.size()));
    check_input(in[0].with_batch(-1));
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape& x = ctx.g.type(inputs[0]).shape;
    check_input(x);
    const graph::Value x4 = ops::reshape(ctx.g, inputs[0], Shape{x[0], 1, x[1], x[2]});
    const ops::Pair pool{1, args_.pool_size}, strides{1, args_.strides};
    const graph::Value y = max_ ? ops::max_pool2d(ctx.g, x4, pool, strides, args_.padding)
                                : ops::avg_pool2d(ctx.g, x4, pool, strides, args_.padding);
    const Shape& ys = ctx.g.type(y).shape;
    return ops::reshape(ctx.g, y, Shape{ys[0], ys[2], ys[3]});
  }

 private:
  void check_input(const Shape& x) const {
    detail::check_sequence(who(), x);
    detail::check_window_fits_1d(who(), "pool_size", args_.pool_size, 1, args_.padding, x);
  }

  bool max_;
  Pooling1DArgs args_;
};

std::shared_ptr<Layer> pooling_from(bool max, const ConfigReader& c) {
  return std::make_shared<Pooling1DLayer>(max, kFields.read(c, {.name = c.name()}));
}
const RegisterLayer registered_max("MaxPooling1D", [](const ConfigReader& c) { return pooling_from(true, c); });
const RegisterLayer registered_average("AveragePooling1D", [](const ConfigReader& c) { return pooling_from(false, c); });

Pooling1DArgs args_of(int64_t pool_size, const Pooling1DOptions& o) {
  return {.pool_size = pool_size, .strides = o.strides.value_or(kNone), .padding = o.padding, .name = o.name};
}
}  // namespace

LayerRef MaxPooling1D(int64_t pool_size, const Pooling1DOptions& options) {
  return LayerRef(std::make_shared<Pooling1DLayer>(true, args_of(pool_size, options)));
}
LayerRef AveragePooling1D(int64_t pool_size, const Pooling1DOptions& options) {
  return LayerRef(std::make_shared<Pooling1DLayer>(false, args_of(pool_size, options)));
}

}  // namespace tandem::layers
