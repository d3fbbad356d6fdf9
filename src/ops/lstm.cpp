// lstm and lstm_grad: a whole sequence through an LSTM cell (ops/recurrent.h defines them).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/recurrent.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
using recurrent_detail::Sizes;

constexpr int kGates = 4;
constexpr int kReserve = 6;

// Inputs (xw, h0, c0, recurrent_kernel, mask [, recurrent_scale]).
Sizes check_lstm(const Attrs& a, const std::vector<TensorType>& in, const char* op) {
  const bool scaled = in.size() == 6;
  if (in.size() != 5 && !scaled) throw ShapeError(std::string(op) + ": expected 5 or 6 inputs, got " + std::to_string(in.size()));
  const Sizes s = recurrent_detail::check(a, in, kGates, 4, scaled ? &in[5] : nullptr, op);
  if (in[2] != in[1]) throw ShapeError(std::string(op) + ": the initial cell state " + in[2].shape.str() + " does not match h0 " + in[1].shape.str());
  if (in[3] != TensorType{Shape{s.units, kGates * s.units}, in[0].dtype})
    throw ShapeError(std::string(op) + ": expected recurrent_kernel of shape " + Shape{s.units, kGates * s.units}.str() + ", got " +
                     in[3].shape.str());
  return s;
}
}  // namespace

REGISTER_OP(
    .name = "lstm",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const Sizes s = check_lstm(a, in, "lstm");
      const DType t = in[0].dtype;
      return std::vector<TensorType>{{Shape{s.batch, s.steps, s.units}, t}, in[1], in[1], {Shape{s.batch, s.steps, kReserve * s.units}, t}};
    },
    .grad = [](GradContext& c) {
      const bool scaled = c.node().inputs.size() == 6;
      std::vector<Value> in{recurrent_detail::dy_or_zeros(c, 0), recurrent_detail::dy_or_zeros(c, 1), recurrent_detail::dy_or_zeros(c, 2),
                            c.input(1), c.input(2), c.input(3), c.input(4), c.output(3)};
      if (scaled) in.push_back(c.input(5));
      const auto d = c.g.add_multi("lstm_grad", in, c.attrs());
      for (int i = 0; i < 4; ++i) c.set(i, d[static_cast<std::size_t>(i)]);
    },
    .layout = rows({.batch_inputs = {0, 1, 2, 4, 5}}));

// (dy, dh, dc, h0, c0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, dc0, drecurrent_kernel)
REGISTER_OP(
    .name = "lstm_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in.size() != 8 && in.size() != 9) throw ShapeError("lstm_grad: expected 8 or 9 inputs, got " + std::to_string(in.size()));
      const TensorType& reserve = in[7];
      if (reserve.shape.rank() != 3 || reserve.shape[2] % kReserve != 0) throw ShapeError("lstm_grad: bad reserve " + reserve.shape.str());
      const Sizes s{reserve.shape[0], reserve.shape[1], reserve.shape[2] / kReserve};
      const TensorType xw{Shape{s.batch, s.steps, kGates * s.units}, reserve.dtype};
      std::vector<TensorType> forward{xw, in[3], in[4], in[5], in[6]};
      if (in.size() == 9) forward.push_back(in[8]);
      check_lstm(a, forward, "lstm_grad");
      if (in[0] != TensorType{Shape{s.batch, s.steps, s.units}, xw.dtype} || in[1] != in[3] || in[2] != in[4])
        throw ShapeError("lstm_grad: the output gradients do not match the outputs");
      return std::vector<TensorType>{xw, in[3], in[4], in[5]};
    },
    .layout = rows({.batch_inputs = {0, 1, 2, 3, 4, 6, 7, 8}, .partial_outputs = {3}}));

LstmResult lstm(Graph& g, Value xw, Value h0, Value c0, Value recurrent_kernel, Value mask, Value recurrent_scale,
                const RecurrentAttrs& attrs) {
  std::vector<Value> in{xw, h0, c0, recurrent_kernel, mask};
  if (recurrent_scale.valid()) in.push_back(recurrent_scale);
  const auto out = g.add_multi("lstm", in, recurrent_detail::attrs(attrs));
  return {out[0], out[1], out[2]};
}

}  // namespace tandem::ops
