// GRU: Keras's layer (arguments, defaults, config, weights kernel, recurrent_kernel and bias with
// gates z, r, h; with reset_after the bias is (2, 3·units): the input bias, then the recurrent
// one) over the gru op (ops/recurrent.h).
#include "layer_base/call_context.h"
#include "layers/recurrent_layer.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "ops/recurrent.h"

namespace tandem::layers {

namespace {
using A = RecurrentArgs;

const Fields<A> kFields(recurrent_fields({
    activation<A>("recurrent_activation", [](auto& a) -> auto& { return a.options.recurrent_activation; }),
    field<A>("reset_after", [](auto& a) -> auto& { return a.options.reset_after; }),
}));

class GruLayer : public RecurrentLayer {
 public:
  explicit GruLayer(A a) : RecurrentLayer("gru", std::move(a), kFields) {
    check_args();
    if (!args_.options.unit_forget_bias) throw ValueError(who() + ": unit_forget_bias is an LSTM argument; GRU has none");
  }
  std::string class_name() const override { return "GRU"; }
  std::shared_ptr<RecurrentLayer> with_args(A a) const override { return std::make_shared<GruLayer>(std::move(a)); }

 protected:
  int gates() const override { return 3; }
  Shape bias_shape() const override {
    return args_.options.reset_after ? Shape{2, 3 * args_.units} : Shape{3 * args_.units};
  }
  graph::Value input_bias(CallContext& ctx) override {
    const graph::Value bias = ctx.variable(*bias_);
    if (!args_.options.reset_after) return bias;
    return ops::reshape(ctx.g, ops::slice(ctx.g, bias, 0, 0, 1), Shape{3 * args_.units});
  }
  Run recur(CallContext& ctx, graph::Value xw, const std::vector<graph::Value>& states, graph::Value mask,
            graph::Value recurrent_scale) override {
    // The op always takes a recurrent bias; it is zero where Keras has none.
    const Shape b{3 * args_.units};
    const graph::Value recurrent_bias = bias_ && args_.options.reset_after
                                            ? ops::reshape(ctx.g, ops::slice(ctx.g, ctx.variable(*bias_), 0, 1, 1), b)
                                            : ops::fill(ctx.g, {b, ctx.g.type(xw).dtype}, 0.0);
    const ops::GruResult r = ops::gru(ctx.g, xw, states[0], ctx.variable(*recurrent_kernel_), recurrent_bias, mask, recurrent_scale,
                                      op_attrs(), args_.options.reset_after);
    return {r.y, {r.h}};
  }
};

const RegisterLayer registered("GRU", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<GruLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef GRU(int64_t units, const RecurrentOptions& options) {
  return LayerRef(std::make_shared<GruLayer>(A{.units = units, .options = options}));
}

}  // namespace tandem::layers
