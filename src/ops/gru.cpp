// gru and gru_grad: a whole sequence through a GRU cell (ops/recurrent.h defines them).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/recurrent.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
using recurrent_detail::Sizes;

constexpr int kGates = 3;
constexpr int kReserve = 5;

// Inputs (xw, h0, recurrent_kernel, recurrent_bias, mask [, recurrent_scale]).
Sizes check_gru(const Attrs& a, const std::vector<TensorType>& in, const char* op) {
  const bool scaled = in.size() == 6;
  if (in.size() != 5 && !scaled) throw ShapeError(std::string(op) + ": expected 5 or 6 inputs, got " + std::to_string(in.size()));
  const Sizes s = recurrent_detail::check(a, in, kGates, 4, scaled ? &in[5] : nullptr, op);
  const DType t = in[0].dtype;
  if (in[2] != TensorType{Shape{s.units, kGates * s.units}, t})
    throw ShapeError(std::string(op) + ": expected recurrent_kernel of shape " + Shape{s.units, kGates * s.units}.str() + ", got " +
                     in[2].shape.str());
  if (in[3] != TensorType{Shape{kGates * s.units}, t})
    throw ShapeError(std::string(op) + ": expected recurrent_bias of shape " + Shape{kGates * s.units}.str() + ", got " + in[3].shape.str());
  return s;
}

Attrs with_reset_after(Attrs a, bool reset_after) {
  a.set("reset_after", reset_after);
  return a;
}
}  // namespace

REGISTER_OP(
    .name = "gru",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const Sizes s = check_gru(a, in, "gru");
      const DType t = in[0].dtype;
      return std::vector<TensorType>{{Shape{s.batch, s.steps, s.units}, t}, in[1], {Shape{s.batch, s.steps, kReserve * s.units}, t}};
    },
    .grad = [](GradContext& c) {
      std::vector<Value> in{recurrent_detail::dy_or_zeros(c, 0), recurrent_detail::dy_or_zeros(c, 1), c.input(1), c.input(2), c.input(3),
                            c.input(4), c.output(2)};
      if (c.node().inputs.size() == 6) in.push_back(c.input(5));
      const auto d = c.g.add_multi("gru_grad", in, c.attrs());
      for (int i = 0; i < 4; ++i) c.set(i, d[static_cast<std::size_t>(i)]);
    },
    .layout = rows({.batch_inputs = {0, 1, 4, 5}}));

// (dy, dh, h0, recurrent_kernel, recurrent_bias, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, drecurrent_kernel, drecurrent_bias)
REGISTER_OP(
    .name = "gru_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in.size() != 7 && in.size() != 8) throw ShapeError("gru_grad: expected 7 or 8 inputs, got " + std::to_string(in.size()));
      const TensorType& reserve = in[6];
      if (reserve.shape.rank() != 3 || reserve.shape[2] % kReserve != 0) throw ShapeError("gru_grad: bad reserve " + reserve.shape.str());
      const Sizes s{reserve.shape[0], reserve.shape[1], reserve.shape[2] / kReserve};
      const TensorType xw{Shape{s.batch, s.steps, kGates * s.units}, reserve.dtype};
      std::vector<TensorType> forward{xw, in[2], in[3], in[4], in[5]};
      if (in.size() == 8) forward.push_back(in[7]);
      check_gru(a, forward, "gru_grad");
      if (in[0] != TensorType{Shape{s.batch, s.steps, s.units}, xw.dtype} || in[1] != in[2])
        throw ShapeError("gru_grad: the output gradients do not match the outputs");
      return std::vector<TensorType>{xw, in[2], in[3], in[4]};
    },
    .layout = rows({.batch_inputs = {0, 1, 2, 5, 6, 7}, .partial_outputs = {2, 3}}));

GruResult gru(Graph& g, Value xw, Value h0, Value recurrent_kernel, Value recurrent_bias, Value mask, Value recurrent_scale,
              const RecurrentAttrs& attrs, bool reset_after) {
  std::vector<Value> in{xw, h0, recurrent_kernel, recurrent_bias, mask};
  if (recurrent_scale.valid()) in.push_back(recurrent_scale);
  const auto out = g.add_multi("gru", in, with_reset_after(recurrent_detail::attrs(attrs), reset_after));
  return {out[0], out[1]};
}

}  // namespace tandem::ops
