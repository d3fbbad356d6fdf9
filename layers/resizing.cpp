// Resizing (Keras 3 on JAX): crop or pad to the target's aspect ratio if asked, then resize with
// ops::resize2d (half-pixel centres, no antialiasing).
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "ops/resize.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct ResizingArgs {
  int64_t height = 0, width = 0;
  ResizingOptions options;
};

const Fields<ResizingArgs> kFields{
    fixed<ResizingArgs>("data_format", "channels_last"),
    required<ResizingArgs>("height", [](auto& a) -> auto& { return a.height; }, rules::positive),
    required<ResizingArgs>("width", [](auto& a) -> auto& { return a.width; }, rules::positive),
    field<ResizingArgs>("interpolation", [](auto& a) -> auto& { return a.options.interpolation; }, rules::one_of({"bilinear", "nearest"})),
    field<ResizingArgs>("crop_to_aspect_ratio", [](auto& a) -> auto& { return a.options.crop_to_aspect_ratio; }),
    field<ResizingArgs>("pad_to_aspect_ratio", [](auto& a) -> auto& { return a.options.pad_to_aspect_ratio; }),
    field<ResizingArgs>("fill_mode", [](auto& a) -> auto& { return a.options.fill_mode; }, rules::one_of({"constant"})),
    field<ResizingArgs>("fill_value", [](auto& a) -> auto& { return a.options.fill_value; }),
    fixed<ResizingArgs>("antialias", false),
};

class ResizingLayer : public Layer {
 public:
  explicit ResizingLayer(ResizingArgs a) : Layer("resizing", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    if (args_.options.crop_to_aspect_ratio && args_.options.pad_to_aspect_ratio)
      throw ValueError(who() + ": only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be true");
  }
  std::string class_name() const override { return "Resizing"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType& t = g.type(inputs[0]);
    detail::check_image(who(), t.shape);
    if (!ops::is_float(t.dtype))
      throw ValueError(who() + ": expected float images, got " + dtype_name(t.dtype) + "; put a Rescaling layer first to make integer pixels floats");
    graph::Value x = inputs[0];
    const int64_t th = args_.height, tw = args_.width, h = t.shape[1], w = t.shape[2];
    const ResizingOptions& o = args_.options;
    // The integer arithmetic of Keras's JAX resize (int(float(...)) truncates).
    if (o.crop_to_aspect_ratio) {
      const int64_t ch = std::max<int64_t>(std::min<int64_t>(h, static_cast<int64_t>(static_cast<double>(w * th) / static_cast<double>(tw))), 1);
      const int64_t cw = std::max<int64_t>(std::min<int64_t>(w, static_cast<int64_t>(static_cast<double>(h * tw) / static_cast<double>(th))), 1);
      const int64_t top = (h - ch) / 2, left = (w - cw) / 2;
      if (ch != h || cw != w) x = ops::crop2d(g, x, {top, h - ch - top, left, w - cw - left});
    } else if (o.pad_to_aspect_ratio) {
      const int64_t ph = std::max<int64_t>(h, static_cast<int64_t>(static_cast<double>(w * th) / static_cast<double>(tw)));
      const int64_t pw = std::max<int64_t>(w, static_cast<int64_t>(static_cast<double>(h * tw) / static_cast<double>(th)));
      const int64_t top = (ph - h) / 2, left = (pw - w) / 2;
      // Keras puts a band of `top` rows on both sides (or `left` columns), never both.
      if (top > 0) x = band(g, x, 1, {t.shape[0], top, w, t.shape[3]}, t.dtype);
      else if (left > 0) x = band(g, x, 2, {t.shape[0], h, left, t.shape[3]}, t.dtype);
    }
    const Shape& s = g.type(x).shape;
    if (s[1] == th && s[2] == tw) return x;
    return ops::resize2d(g, x, th, tw, o.interpolation == "nearest" ? ops::ResizeMethod::nearest : ops::ResizeMethod::bilinear);
  }

 private:
  // x with a band of fill_value of shape `band` before and after it along `axis`.
  graph::Value band(graph::Graph& g, graph::Value x, int64_t axis, Shape shape, DType dtype) const {
    const graph::Value f = ops::fill(g, {shape, dtype}, args_.options.fill_value);
    return ops::concat(g, {f, x, f}, axis);
  }
  ResizingArgs args_;
};

const RegisterLayer registered("Resizing", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<ResizingLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Resizing(int64_t height, int64_t width, const ResizingOptions& options) {
  return LayerRef(std::make_shared<ResizingLayer>(ResizingArgs{height, width, options}));
}

}  // namespace tandem::layers
