#include "layers/recurrent_layer.h"

#include "layer_base/call_context.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::layers {

namespace {
using A = RecurrentArgs;

// Which seed each of a layer's dropout masks draws from: Keras draws them one after another from
// the layer's SeedGenerator; here each has its own stream off the layer's seed.
constexpr uint64_t kInputMaskStream = 0, kRecurrentMaskStream = 1;
}  // namespace

std::vector<Field<A>> recurrent_fields(std::vector<Field<A>> cell, bool writes_seed) {
  std::vector<Field<A>> f{
      field<A>("return_sequences", [](auto& a) -> auto& { return a.options.return_sequences; }),
      field<A>("return_state", [](auto& a) -> auto& { return a.options.return_state; }),
      field<A>("go_backwards", [](auto& a) -> auto& { return a.options.go_backwards; }),
      fixed<A>("stateful", false),
      field<A>("unroll", [](auto& a) -> auto& { return a.unroll; }),
      field<A>("zero_output_for_mask", [](auto& a) -> auto& { return a.zero_output_for_mask; }),
      required<A>("units", [](auto& a) -> auto& { return a.units; }, rules::positive),
      activation<A>("activation", [](auto& a) -> auto& { return a.options.activation; }),
      field<A>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
      initializer<A>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
      initializer<A>("recurrent_initializer", [](auto& a) -> auto& { return a.options.recurrent_initializer; }),
      initializer<A>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
  };
  f.insert(f.end(), cell.begin(), cell.end());
  f.push_back(regularizer<A>("kernel_regularizer", [](auto& a) -> auto& { return a.options.kernel_regularizer; }));
  f.push_back(regularizer<A>("recurrent_regularizer", [](auto& a) -> auto& { return a.options.recurrent_regularizer; }));
  f.push_back(regularizer<A>("bias_regularizer", [](auto& a) -> auto& { return a.options.bias_regularizer; }));
  f.push_back(regularizer<A>("activity_regularizer", [](auto& a) -> auto& { return a.options.activity_regularizer; }));
  f.push_back(constraint<A>("kernel_constraint", [](auto& a) -> auto& { return a.options.kernel_constraint; }));
  f.push_back(constraint<A>("recurrent_constraint", [](auto& a) -> auto& { return a.options.recurrent_constraint; }));
  f.push_back(constraint<A>("bias_constraint", [](auto& a) -> auto& { return a.options.bias_constraint; }));
  f.push_back(field<A>("dropout", [](auto& a) -> auto& { return a.options.dropout; }, rules::in_range(0, 1, false)));
  f.push_back(field<A>("recurrent_dropout", [](auto& a) -> auto& { return a.options.recurrent_dropout; }, rules::in_range(0, 1, false)));
  const Field<A> seed = field<A>("seed", [](auto& a) -> auto& { return a.options.seed; });
  f.push_back(writes_seed ? seed : read_only(seed));
  return f;
}

RecurrentLayer::RecurrentLayer(const char* prefix, RecurrentArgs args, const Fields<RecurrentArgs>& fields)
    : Layer(prefix, args.options.name), args_(std::move(args)), fields_(fields) {
  args_.options.seed = layer_seed(args_.options.seed);
  set_activity_regularizer(args_.options.activity_regularizer);
}

void RecurrentLayer::check_args() const {
  fields_.check(who(), args_);
  for (const std::string* a : {&args_.options.activation, &args_.options.recurrent_activation})
    if (!a->empty() && *a != "tanh" && *a != "sigmoid" && *a != "relu" && *a != "linear")
      throw ValueError(who() + ": " + (a == &args_.options.activation ? "activation" : "recurrent_activation") +
                       " must be \"tanh\", \"sigmoid\", \"relu\" or \"linear\" (what the recurrent kernels implement), got \"" + *a + "\"");
}

std::string RecurrentLayer::config_json() const { return fields_.config_text(*this, args_); }

Shape RecurrentLayer::bias_shape() const { return Shape{gates() * args_.units}; }

graph::Value RecurrentLayer::input_bias(CallContext& ctx) { return ctx.variable(*bias_); }

ops::RecurrentAttrs RecurrentLayer::op_attrs() const {
  auto name = [](const std::string& a) { return a.empty() ? std::string("linear") : a; };
  return {.activation = name(args_.options.activation),
          .recurrent_activation = name(args_.options.recurrent_activation),
          .go_backwards = args_.options.go_backwards,
          .zero_output_for_mask = args_.zero_output_for_mask};
}

void RecurrentLayer::build(const std::vector<Shape>& in) {
  if (in.empty() || in[0].rank() != 2)
    throw ValueError(who() + ": expected a sequence input (batch, steps, features), got " +
                     (in.empty() ? std::string("no input") : in[0].with_batch(-1).str()));
  const int64_t features = in[0][1], g = gates(), units = args_.units;
  const RecurrentOptions& o = args_.options;
  kernel_ = add_weight("kernel", {features, g * units}, o.kernel_initializer, true, o.kernel_regularizer, o.kernel_constraint);
  recurrent_kernel_ =
      add_weight("recurrent_kernel", {units, g * units}, o.recurrent_initializer, true, o.recurrent_regularizer, o.recurrent_constraint);
  if (o.use_bias) {
    bias_ = add_weight("bias", bias_shape(), o.bias_initializer, true, o.bias_regularizer, o.bias_constraint);
    initialize_bias(*bias_);
  }
}

std::vector<graph::Value> RecurrentLayer::emit_outputs(CallContext& ctx, const std::vector<graph::Value>& inputs) {
  const std::size_t states = static_cast<std::size_t>(state_count());
  if (inputs.size() != 1 && inputs.size() != 1 + states)
    throw ValueError(who() + ": expected the sequence alone or the sequence and " + std::to_string(states) + " initial state" +
                     (states > 1 ? "s (h, c)" : " (h)") + ", got " + std::to_string(inputs.size()) + " inputs");
  const std::vector<graph::Value> initial(inputs.begin() + 1, inputs.end());
  const Run r = run(ctx, inputs[0], initial, ctx.input_mask(0));
  std::vector<graph::Value> out{args_.options.return_sequences ? r.sequence : r.states[0]};
  if (args_.options.return_state) out.insert(out.end(), r.states.begin(), r.states.end());
  return out;
}

std::vector<graph::Value> RecurrentLayer::emit_output_masks(CallContext& ctx, const std::vector<graph::Value>&,
                                                            const std::vector<graph::Value>& outputs) {
  std::vector<graph::Value> masks(outputs.size());
  if (args_.options.return_sequences) masks[0] = ctx.input_mask(0);
  return masks;
}

RecurrentLayer::Run RecurrentLayer::run(CallContext& ctx, graph::Value x, const std::vector<graph::Value>& initial, graph::Value mask) {
  const Shape xs = ctx.g.type(x).shape;
  if (xs.rank() != 3 || xs[2] != kernel_->value().shape()[0])
    throw ShapeError(who() + ": expected input (batch, steps, " + std::to_string(kernel_->value().shape()[0]) + "), got " + detail::batch_str(xs));
  const DType dtype = ctx.g.type(x).dtype;
  const TensorType state{Shape{xs[0], args_.units}, dtype};
  std::vector<graph::Value> states = initial;
  for (std::size_t i = 0; i < states.size(); ++i)
    if (ctx.g.type(states[i]) != state)
      throw ShapeError(who() + ": expected initial state " + std::to_string(i) + " of shape " + detail::batch_str(state.shape) + ", got " +
                       detail::batch_str(ctx.g.type(states[i]).shape));
  if (states.empty()) states.assign(static_cast<std::size_t>(state_count()), ops::fill(ctx.g, state, 0.0));
  if (!mask.valid()) mask = ops::fill(ctx.g, {Shape{xs[0], xs[1]}, dtype}, 1.0);
  return recur(ctx, project(ctx, x), states, mask, recurrent_scale(ctx, xs[0]));
}

// x·kernel + bias for every step. With input dropout, Keras draws one mask per sequence; with
// recurrent dropout as well it switches to one mask per gate (its implementation 1), which is
// computed here as a batch of per-gate products.
graph::Value RecurrentLayer::project(CallContext& ctx, graph::Value x) {
  graph::Graph& g = ctx.g;
  const Shape xs = g.type(x).shape;
  const int64_t B = xs[0], T = xs[1], I = xs[2], G = gates(), H = args_.units;
  const DType dtype = g.type(x).dtype;
  const graph::Value kernel = ctx.variable(*kernel_);
  const double rate = args_.options.dropout;
  const uint64_t seed = rng_seed(kInputMaskStream);
  graph::Value xw;
  if (ctx.training && rate > 0 && args_.options.recurrent_dropout > 0 && G > 1) {
    const graph::Value masks = ops::reshape(g, ops::dropout(g, ops::fill(g, {Shape{B, G * I}, dtype}, 1.0), ctx.step, rate, seed), Shape{B, 1, G, I});
    const graph::Value xg = ops::mul(g, ops::reshape(g, x, Shape{B, T, 1, I}), masks);                       // (B, T, G, I)
    const graph::Value xt = ops::transpose(g, ops::reshape(g, xg, Shape{B * T, G, I}), {1, 0, 2});          // (G, B·T, I)
    const graph::Value wt = ops::transpose(g, ops::reshape(g, kernel, Shape{I, G, H}), {1, 0, 2});          // (G, I, H)
    xw = ops::reshape(g, ops::transpose(g, ops::batch_matmul(g, xt, wt), {1, 0, 2}), Shape{B * T, G * H});  // (B·T, G·H)
  } else {
    if (ctx.training && rate > 0) {
      const graph::Value mask = ops::dropout(g, ops::fill(g, {Shape{B, I}, dtype}, 1.0), ctx.step, rate, seed);
      x = ops::mul(g, x, ops::reshape(g, mask, Shape{B, 1, I}));
    }
    xw = ops::matmul(g, ops::reshape(g, x, Shape{B * T, I}), kernel);
  }
  if (bias_) xw = ops::bias_add(g, xw, input_bias(ctx));
  return ops::reshape(g, xw, Shape{B, T, G * H});
}

// Keras's recurrent dropout: one mask per gate and sequence on h where it enters the recurrent
// product (invalid when there is none).
graph::Value RecurrentLayer::recurrent_scale(CallContext& ctx, int64_t batch) {
  const double rate = args_.options.recurrent_dropout;
  if (!ctx.training || rate == 0) return {};
  graph::Graph& g = ctx.g;
  const int64_t G = gates(), H = args_.units;
  const graph::Value ones = ops::fill(g, {Shape{batch, G * H}, kernel_->value().dtype()}, 1.0);
  return ops::reshape(g, ops::dropout(g, ones, ctx.step, rate, rng_seed(kRecurrentMaskStream)), Shape{batch, G, H});
}

uint64_t RecurrentLayer::rng_seed(uint64_t stream) const { return (*args_.options.seed * 2 + stream) % kSeedLimit; }

}  // namespace tandem::layers
