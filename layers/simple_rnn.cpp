// SimpleRNN: Keras's layer (arguments, defaults, config, weights kernel, recurrent_kernel and bias)
// over the simple_rnn op (ops/recurrent.h).
#include "layer_base/call_context.h"
#include "layers/recurrent_layer.h"
#include "ops/recurrent.h"

namespace tandem::layers {

namespace {
using A = RecurrentArgs;

// SimpleRNN has no arguments beyond the shared ones; Keras leaves its seed out of the config.
const Fields<A> kFields(recurrent_fields({}, false));

class SimpleRnnLayer : public RecurrentLayer {
 public:
  explicit SimpleRnnLayer(A a) : RecurrentLayer("simple_rnn", std::move(a), kFields) {
    check_args();
    const RecurrentOptions defaults;
    if (args_.options.recurrent_activation != defaults.recurrent_activation)
      throw ValueError(who() + ": recurrent_activation is an LSTM and GRU argument; SimpleRNN has none");
    if (!args_.options.reset_after) throw ValueError(who() + ": reset_after is a GRU argument; SimpleRNN has none");
    if (!args_.options.unit_forget_bias) throw ValueError(who() + ": unit_forget_bias is an LSTM argument; SimpleRNN has none");
  }
  std::string class_name() const override { return "SimpleRNN"; }
  std::shared_ptr<RecurrentLayer> with_args(A a) const override { return std::make_shared<SimpleRnnLayer>(std::move(a)); }

 protected:
  int gates() const override { return 1; }
  Run recur(CallContext& ctx, graph::Value xw, const std::vector<graph::Value>& states, graph::Value mask,
            graph::Value recurrent_scale) override {
    const ops::SimpleRnnResult r = ops::simple_rnn(ctx.g, xw, states[0], ctx.variable(*recurrent_kernel_), mask, recurrent_scale, op_attrs());
    return {r.y, {r.h}};
  }
};

const RegisterLayer registered("SimpleRNN", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<SimpleRnnLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef SimpleRNN(int64_t units, const RecurrentOptions& options) {
  return LayerRef(std::make_shared<SimpleRnnLayer>(A{.units = units, .options = options}));
}

}  // namespace tandem::layers
