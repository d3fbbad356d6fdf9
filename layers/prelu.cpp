// PReLU: x for x >= 0, alpha · x otherwise, with a learned alpha per element of the sample (shared
// along `shared_axes`), computed as Keras does: relu(x) − alpha · relu(−x).
#include <algorithm>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct PReLUArgs {
  PReLUOptions options;
};

std::string axes_text(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (std::size_t i = 0; i < axes.size(); ++i) s.append(i ? ", " : "").append(std::to_string(axes[i]));
  return s.append("]");
}

const Fields<PReLUArgs> kFields{
    initializer<PReLUArgs>("alpha_initializer", [](auto& a) -> auto& { return a.options.alpha_initializer; }),
    regularizer<PReLUArgs>("alpha_regularizer", [](auto& a) -> auto& { return a.options.alpha_regularizer; }),
    constraint<PReLUArgs>("alpha_constraint", [](auto& a) -> auto& { return a.options.alpha_constraint; }),
    // Keras keeps None, or the axes as a list (one integer given becomes [axis]).
    Field<PReLUArgs>{"shared_axes",
                     [](const PReLUArgs& a) { return a.options.shared_axes.empty() ? Json(nullptr) : Json(a.options.shared_axes); },
                     [](const ConfigReader& c, PReLUArgs& a) {
                       const Json* v = c.value("shared_axes");
                       if (!v || v->is_null()) return;
                       a.options.shared_axes = v->is_array() ? c.integers("shared_axes") : std::vector<int64_t>{c.integer("shared_axes")};
                     },
                     [](const std::string& who, const PReLUArgs& a) {
                       for (int64_t axis : a.options.shared_axes)
                         if (axis < 1)
                           throw ValueError(std::string(who).append(": shared_axes must be axes counted with the batch axis (1 or more), got ")
                                                .append(axes_text(a.options.shared_axes)));
                     }},
};

class PReLULayer : public Layer {
 public:
  explicit PReLULayer(PReLUArgs a) : Layer("p_re_lu", a.options.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "PReLU"; }
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    std::vector<int64_t> dims = in[0].dims();
    for (int64_t axis : args_.options.shared_axes) {
      if (axis > static_cast<int64_t>(dims.size()))
        throw ValueError(who() + ": shared_axes " + axes_text(args_.options.shared_axes) + " name an axis beyond input " +
                         in[0].with_batch(-1).str());
      dims[static_cast<std::size_t>(axis - 1)] = 1;
    }
    sample_ = in[0];
    alpha_ = add_weight("alpha", Shape(dims), args_.options.alpha_initializer, true, args_.options.alpha_regularizer,
                        args_.options.alpha_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const Shape& s = g.type(inputs[0]).shape;
    // Keras's InputSpec: the same rank, and the same size along every axis alpha does not share.
    bool fits = s.rank() == sample_.rank() + 1;
    const std::vector<int64_t>& shared = args_.options.shared_axes;
    for (int d = 0; fits && d < sample_.rank(); ++d)
      fits = s[d + 1] == sample_[d] || std::find(shared.begin(), shared.end(), d + 1) != shared.end();
    if (!fits)
      throw ShapeError(who() + ": expected input " + sample_.with_batch(-1).str() + " (alpha " + alpha_->value().shape().str() +
                       "), got " + s.str());
    const graph::Value x = inputs[0];
    const graph::Value alpha = ctx.variable(*alpha_);
    return ops::sub(g, ops::relu(g, x), ops::mul(g, alpha, ops::relu(g, ops::scale(g, x, -1.0))));
  }

 private:
  PReLUArgs args_;
  Shape sample_;
  VariablePtr alpha_;
};

const RegisterLayer registered("PReLU", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<PReLULayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef PReLU(const PReLUOptions& options) { return LayerRef(std::make_shared<PReLULayer>(PReLUArgs{options})); }

}  // namespace tandem::layers
