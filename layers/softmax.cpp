// Softmax along one axis; with a mask, as Keras 3 does: masked positions get a large negative
// logit before the softmax and probability 0 after it.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct SoftmaxArgs {
  int axis = -1;
  std::string name;
};

const Fields<SoftmaxArgs> kFields{
    // Keras also takes a list of axes; Tandem implements one axis (a one-element list is read as it).
    Field<SoftmaxArgs>{"axis", [](const SoftmaxArgs& a) { return Json(a.axis); },
                       [](const ConfigReader& c, SoftmaxArgs& a) {
                         const Json* v = c.value("axis");
                         if (v && v->is_array()) {
                           if (v->size() != 1 || !(*v)[0].is_number_integer())
                             c.fail("axis", "one integer axis (Tandem does not implement a softmax over several axes)");
                           a.axis = (*v)[0].get<int>();
                         } else {
                           a.axis = static_cast<int>(c.integer("axis", a.axis));
                         }
                       },
                       nullptr},
};

// Keras's _large_negative_number for float32 and float64.
constexpr double kMaskedLogit = -1e9;

class SoftmaxLayer : public Layer {
 public:
  explicit SoftmaxLayer(SoftmaxArgs a) : Layer("softmax", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "Softmax"; }
  bool supports_masking() const override { return true; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType t = g.type(inputs[0]);
    const int rank = t.shape.rank();
    if (args_.axis < -rank || args_.axis >= rank)
      throw ValueError(who() + ": axis " + std::to_string(args_.axis) + " is out of range for input " + t.shape.str());
    const graph::Value mask = ctx.input_mask(0);
    if (!mask.valid()) return ops::softmax(g, inputs[0], args_.axis);
    check_mask(g.type(mask).shape, t.shape);
    const graph::Value x = ops::where(g, mask, inputs[0], ops::fill(g, {Shape{}, t.dtype}, kMaskedLogit));
    return ops::where(g, mask, ops::softmax(g, x, args_.axis), ops::fill(g, {Shape{}, t.dtype}, 0.0));
  }

 private:
  // Keras: the mask broadcasts to the input, aligned on the last axes, each of its sizes 1 or the
  // input's.
  void check_mask(const Shape& m, const Shape& x) const {
    bool fits = m.rank() <= x.rank();
    for (int i = 1; fits && i <= m.rank(); ++i) fits = m[m.rank() - i] == 1 || m[m.rank() - i] == x[x.rank() - i];
    if (!fits)
      throw ValueError(who() + ": the mask must broadcast to the input (each of its last sizes 1 or the input's); got mask " +
                       m.str() + " for input " + x.str());
  }

  SoftmaxArgs args_;
};

const RegisterLayer registered("Softmax", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<SoftmaxLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

LayerRef Softmax(int axis, const std::string& name) { return LayerRef(std::make_shared<SoftmaxLayer>(SoftmaxArgs{axis, name})); }

}  // namespace tandem::layers
