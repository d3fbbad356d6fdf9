// layer_norm over the last axis, with a fused gradient op producing dx, dgamma and dbeta.
#include "ops/normalization.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
void check_layer_norm(const Attrs& a, const TensorType& x, const TensorType& gamma, const TensorType& beta, const char* op) {
  if (!is_float(x.dtype)) throw ShapeError(std::string(op) + ": expected a float input, got " + dtype_name(x.dtype));
  if (x.shape.rank() < 1) throw ShapeError(std::string(op) + ": expected an input of rank >= 1, got a scalar");
  if (!(a.f("epsilon") > 0.0)) throw ShapeError(std::string(op) + ": epsilon must be positive, got " + std::to_string(a.f("epsilon")));
  const Shape want{x.shape.back()};
  for (const TensorType* t : {&gamma, &beta}) {
    if (t->shape != want)
      throw ShapeError(std::string(op) + ": expected " + (t == &gamma ? "gamma" : "beta") + " of shape " + want.str() +
                       " for input " + x.shape.str() + ", got " + t->shape.str());
    if (t->dtype != x.dtype) throw ShapeError(std::string(op) + ": gamma and beta must have the input's dtype");
  }
}
}  // namespace

REGISTER_OP(
    .name = "layer_norm",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_layer_norm(a, in[0], in[1], in[2], "layer_norm");
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      const auto d = c.g.add_multi("layer_norm_grad", {c.dy(), c.input(0), c.input(1)}, c.attrs());
      c.set(0, d[0]);
      c.set(1, d[1]);
      c.set(2, d[2]);
    }, .layout = rows({.batch_inputs = {0}}));

// (dy, x, gamma) -> (dx, dgamma, dbeta)
REGISTER_OP(
    .name = "layer_norm_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0] != in[1]) throw ShapeError("layer_norm_grad: dy " + in[0].shape.str() + " does not match x " + in[1].shape.str());
      check_layer_norm(a, in[1], in[2], in[2], "layer_norm_grad");
      return std::vector<TensorType>{in[1], in[2], in[2]};
    }, .layout = rows({.batch_inputs = {0, 1}, .partial_outputs = {1, 2}}));

Value layer_norm(Graph& g, Value x, Value gamma, Value beta, double epsilon) {
  return g.add("layer_norm", {x, gamma, beta}, {{"epsilon", epsilon}});
}

}  // namespace tandem::ops
