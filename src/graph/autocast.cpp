#include "graph/autocast.h"

#include <optional>
#include <set>
#include <string>

namespace tandem::graph {
namespace {

// Ops that gain from 16-bit inputs: what a GPU's tensor cores and AVX512-BF16 / AMX run.
const std::set<std::string>& low_precision_ops() {
  static const std::set<std::string> ops{"matmul", "batch_matmul", "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"};
  return ops;
}

// Elementwise ops and pooling with 16-bit kernels on every backend (each computes in float32 and
// rounds once; a maximum is exact), and the ops that only move values (reshape, transpose), so a
// chain of them between products stays in 16 bits.
const std::set<std::string>& follow_ops() {
  static const std::set<std::string> ops{
      "bias_add", "add", "sub", "mul", "div", "relu", "sigmoid", "tanh", "gelu", "relu_grad", "sigmoid_grad", "tanh_grad", "gelu_grad",
      "activation_bias_grad", "fused_matmul", "fused_conv2d", "reshape", "transpose", "dropout",
      "max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad"};
  return ops;
}

}  // namespace

bool is_16bit(DType t) { return t == DType::BF16 || t == DType::F16; }

Precision precision_of(const std::string& op) {
  if (low_precision_ops().count(op)) return Precision::Low;
  if (follow_ops().count(op)) return Precision::Follow;
  return Precision::Float32;
}

namespace {
// What the float32 and 16-bit inputs of an op of class `c` become when they are cast at all.
DType target(Precision c, std::optional<DType> compute, bool any_16bit) {
  if (compute && is_16bit(*compute) && (c == Precision::Low || (c == Precision::Follow && any_16bit))) return *compute;
  return DType::F32;  // a float32 layer's inputs; ops without 16-bit kernels; operands that disagree
}
}  // namespace

std::vector<Value> autocast_inputs(Graph& g, const std::string& op, std::vector<Value> inputs) {
  if (op == "cast") return inputs;
  bool any_16bit = false, any_f32 = false;
  DType first_16bit = DType::F32;
  bool mixed = false;  // 16-bit inputs of two dtypes, or 16-bit beside float32
  for (const Value v : inputs) {
    const DType t = g.type(v).dtype;
    if (is_16bit(t)) {
      mixed = mixed || (any_16bit && t != first_16bit);
      if (!any_16bit) first_16bit = t;
      any_16bit = true;
    }
    any_f32 = any_f32 || t == DType::F32;
  }
  mixed = mixed || (any_16bit && any_f32);
  const Precision c = precision_of(op);
  const std::optional<DType> compute = g.compute_dtype;
  const bool in_mixed_layer = compute && is_16bit(*compute);
  // Nothing 16-bit in sight: the graph is left as it was.
  if (!any_16bit && !(in_mixed_layer && c == Precision::Low)) return inputs;
  // Outside any policy, ops whose inputs agree and that have 16-bit kernels keep them.
  if (!compute && !mixed && c != Precision::Float32) return inputs;
  const DType to = target(c, compute, any_16bit);
  for (Value& v : inputs) {
    const DType t = g.type(v).dtype;
    if (t != to && (t == DType::F32 || is_16bit(t))) v = g.cast(v, to);  // integers and float64 untouched
  }
  return inputs;
}

}  // namespace tandem::graph
