// Keras 3's further activations. Each forward op takes x and its attributes; its gradient is
// "<op>_grad" on (dy, x) with the same attributes, one fused elementwise kernel (backend/
// activation_functions.h lists both). The input, not the output, feeds the gradient: softplus,
// hard_sigmoid, relu6 and the general relu are flat in places, so x cannot be recovered from y.
#include "ops/activation_functions.h"

#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> float_input(const char* op, const TensorType& x) {
  if (!is_float(x.dtype)) throw ShapeError(std::string(op).append(": expected a float tensor, got ").append(dtype_name(x.dtype)));
  return one(x);
}

// (dy, x): the same float type.
InferFn grad_infer(const char* op) {
  return [op](const Attrs&, const std::vector<TensorType>& in) {
    if (in[0] != in[1])
      throw ShapeError(std::string(op).append(": the gradient ").append(in[0].shape.str()).append(" and the input ")
                           .append(in[1].shape.str()).append(" must have the same shape and dtype"));
    return float_input(op, in[1]);
  };
}

// Registers `op` and "<op>_grad" once the registry exists (static initialisation, as REGISTER_OP).
void register_activation(const char* op, const char* grad_op) {
  Registration(OpDef{.name = op,
                     .infer = [op](const Attrs&, const std::vector<TensorType>& in) { return float_input(op, in[0]); },
                     .grad = [grad_op](GradContext& c) { c.set(0, c.g.add(grad_op, {c.dy(), c.input(0)}, c.attrs())); },
                     .layout = elementwise()});
  Registration(OpDef{.name = grad_op, .infer = grad_infer(grad_op), .layout = elementwise()});
}

const bool registered = [] {
  for (const auto& [op, grad_op] : std::initializer_list<std::pair<const char*, const char*>>{
           {"silu", "silu_grad"},
           {"selu", "selu_grad"},
           {"elu", "elu_grad"},
           {"leaky_relu", "leaky_relu_grad"},
           {"softplus", "softplus_grad"},
           {"softsign", "softsign_grad"},
           {"hard_sigmoid", "hard_sigmoid_grad"},
           {"hard_silu", "hard_silu_grad"},
           {"mish", "mish_grad"},
           {"relu6", "relu6_grad"},
           {"relu_general", "relu_general_grad"}})
    register_activation(op, grad_op);
  return true;
}();
}  // namespace

Value silu(Graph& g, Value x) { return g.add("silu", {x}); }
Value selu(Graph& g, Value x) { return g.add("selu", {x}); }
Value softplus(Graph& g, Value x) { return g.add("softplus", {x}); }
Value softsign(Graph& g, Value x) { return g.add("softsign", {x}); }
Value hard_sigmoid(Graph& g, Value x) { return g.add("hard_sigmoid", {x}); }
Value hard_silu(Graph& g, Value x) { return g.add("hard_silu", {x}); }
Value mish(Graph& g, Value x) { return g.add("mish", {x}); }
Value relu6(Graph& g, Value x) { return g.add("relu6", {x}); }
Value elu(Graph& g, Value x, double alpha) { return g.add("elu", {x}, {{"alpha", alpha}}); }
Value leaky_relu(Graph& g, Value x, double negative_slope) { return g.add("leaky_relu", {x}, {{"negative_slope", negative_slope}}); }

Value relu_general(Graph& g, Value x, const ReluOptions& o) {
  return g.add("relu_general", {x},
               {{"negative_slope", o.negative_slope},
                {"max_value", o.max_value.value_or(0.0)},
                {"has_max_value", o.max_value.has_value()},
                {"threshold", o.threshold}});
}

}  // namespace tandem::ops
