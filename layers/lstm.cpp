// LSTM: Keras's layer (arguments, defaults, config, weights kernel, recurrent_kernel and bias with
// gates i, f, c, o) over the lstm op (ops/recurrent.h).
#include "layer_base/call_context.h"
#include "layers/recurrent_layer.h"
#include "ops/recurrent.h"

namespace tandem::layers {

namespace {
using A = RecurrentArgs;

const Fields<A> kFields(recurrent_fields({
    activation<A>("recurrent_activation", [](auto& a) -> auto& { return a.options.recurrent_activation; }),
    field<A>("unit_forget_bias", [](auto& a) -> auto& { return a.options.unit_forget_bias; }),
}));

class LstmLayer : public RecurrentLayer {
 public:
  explicit LstmLayer(A a) : RecurrentLayer("lstm", std::move(a), kFields) {
    check_args();
    if (!args_.options.reset_after) throw ValueError(who() + ": reset_after is a GRU argument; LSTM has none");
  }
  std::string class_name() const override { return "LSTM"; }
  std::shared_ptr<RecurrentLayer> with_args(A a) const override { return std::make_shared<LstmLayer>(std::move(a)); }

 protected:
  int gates() const override { return 4; }
  // Keras's unit_forget_bias: the forget gate's part of the bias starts at 1 whatever the initializer.
  void initialize_bias(Variable& bias) const override {
    if (!args_.options.unit_forget_bias) return;
    Tensor value = bias.value().cast(DType::F64);
    auto v = value.values<double>();
    for (int64_t j = args_.units; j < 2 * args_.units; ++j) v[static_cast<std::size_t>(j)] = 1.0;
    bias.assign(value.cast(bias.value().dtype()));
  }
  Run recur(CallContext& ctx, graph::Value xw, const std::vector<graph::Value>& states, graph::Value mask,
            graph::Value recurrent_scale) override {
    const ops::LstmResult r = ops::lstm(ctx.g, xw, states[0], states[1], ctx.variable(*recurrent_kernel_), mask, recurrent_scale, op_attrs());
    return {r.y, {r.h, r.c}};
  }
};

const RegisterLayer registered("LSTM", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<LstmLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef LSTM(int64_t units, const RecurrentOptions& options) {
  return LayerRef(std::make_shared<LstmLayer>(A{.units = units, .options = options}));
}

}  // namespace tandem::layers
