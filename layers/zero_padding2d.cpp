// ZeroPadding2D: zero rows above and below and zero columns left and right of each image.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "ops/conv.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class ZeroPadding2DLayer : public Layer {
 public:
  ZeroPadding2DLayer(std::array<int64_t, 4> padding, const std::string& name)
      : Layer("zero_padding2d", name), padding_(padding) {
    for (int64_t p : padding_)
      if (p < 0)
        throw ValueError(owner() + ": padding must be non-negative, got ((" + std::to_string(padding_[0]) + ", " +
                         std::to_string(padding_[1]) + "), (" + std::to_string(padding_[2]) + ", " +
                         std::to_string(padding_[3]) + "))");
  }
  std::string class_name() const override { return "ZeroPadding2D"; }
  std::string config_json() const override {
    return config_text(*this, {{"padding", Json::array({Json::array({padding_[0], padding_[1]}), Json::array({padding_[2], padding_[3]})})},
                               {"data_format", "channels_last"}});
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    detail::check_image(owner(), ctx.g.type(inputs[0]).shape);
    return ops::pad2d(ctx.g, inputs[0], padding_);
  }

 private:
  std::string owner() const { return "ZeroPadding2D \"" + name() + "\""; }
  std::array<int64_t, 4> padding_;  // top, bottom, left, right
};

// Keras's padding argument: 1, [1, 2] (symmetric height and width) or [[top, bottom], [left, right]].
std::array<int64_t, 4> padding_from(const ConfigReader& c) {
  const Json& p = c.value("padding") ? *c.value("padding") : Json(1);
  auto pair = [&](const Json& v) {
    if (v.is_number_integer()) return Int2(v.get<int64_t>());
    if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
      return Int2(v[0].get<int64_t>(), v[1].get<int64_t>());
    c.fail("padding", "an integer, [height, width] or [[top, bottom], [left, right]]");
  };
  if (p.is_number_integer()) {
    const int64_t v = p.get<int64_t>();
    return {v, v, v, v};
  }
  if (!p.is_array() || p.size() != 2) c.fail("padding", "an integer, [height, width] or [[top, bottom], [left, right]]");
  const Int2 h = pair(p[0]), w = pair(p[1]);
  return {h.h, h.w, w.h, w.w};
}

const RegisterLayer registered("ZeroPadding2D", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("data_format", "channels_last");
  return std::make_shared<ZeroPadding2DLayer>(padding_from(c), c.name());
});
}  // namespace

LayerRef ZeroPadding2D(Padding2D padding, const std::string& name) {
  return LayerRef(std::make_shared<ZeroPadding2DLayer>(
      std::array<int64_t, 4>{padding.top, padding.bottom, padding.left, padding.right}, name));
}

}  // namespace tandem::layers
