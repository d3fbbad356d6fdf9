// simple_rnn and simple_rnn_grad: a whole sequence through Keras's SimpleRNN cell (ops/recurrent.h
// defines them).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "ops/recurrent.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
using recurrent_detail::Sizes;

constexpr int kReserve = 2;

// Inputs (xw, h0, recurrent_kernel, mask [, recurrent_scale]).
Sizes check_simple_rnn(const Attrs& a, const std::vector<TensorType>& in, const char* op) {
  const bool scaled = in.size() == 5;
  if (in.size() != 4 && !scaled) throw ShapeError(std::string(op) + ": expected 4 or 5 inputs, got " + std::to_string(in.size()));
  const Sizes s = recurrent_detail::check(a, in, 1, 3, scaled ? &in[4] : nullptr, op);
  if (in[2] != TensorType{Shape{s.units, s.units}, in[0].dtype})
    throw ShapeError(std::string(op) + ": expected recurrent_kernel of shape " + Shape{s.units, s.units}.str() + ", got " + in[2].shape.str());
  return s;
}
}  // namespace

REGISTER_OP(
    .name = "simple_rnn",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const Sizes s = check_simple_rnn(a, in, "simple_rnn");
      const DType t = in[0].dtype;
      return std::vector<TensorType>{{Shape{s.batch, s.steps, s.units}, t}, in[1], {Shape{s.batch, s.steps, kReserve * s.units}, t}};
    },
    .grad = [](GradContext& c) {
      std::vector<Value> in{recurrent_detail::dy_or_zeros(c, 0), recurrent_detail::dy_or_zeros(c, 1), c.input(1), c.input(2), c.input(3),
                            c.output(2)};
      if (c.node().inputs.size() == 5) in.push_back(c.input(4));
      const auto d = c.g.add_multi("simple_rnn_grad", in, c.attrs());
      for (int i = 0; i < 3; ++i) c.set(i, d[static_cast<std::size_t>(i)]);
    },
    .layout = rows({.batch_inputs = {0, 1, 3, 4}}));

// (dy, dh, h0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, drecurrent_kernel)
REGISTER_OP(
    .name = "simple_rnn_grad",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in.size() != 6 && in.size() != 7) throw ShapeError("simple_rnn_grad: expected 6 or 7 inputs, got " + std::to_string(in.size()));
      const TensorType& reserve = in[5];
      if (reserve.shape.rank() != 3 || reserve.shape[2] % kReserve != 0)
        throw ShapeError("simple_rnn_grad: bad reserve " + reserve.shape.str());
      const Sizes s{reserve.shape[0], reserve.shape[1], reserve.shape[2] / kReserve};
      const TensorType xw{Shape{s.batch, s.steps, s.units}, reserve.dtype};
      std::vector<TensorType> forward{xw, in[2], in[3], in[4]};
      if (in.size() == 7) forward.push_back(in[6]);
      check_simple_rnn(a, forward, "simple_rnn_grad");
      if (in[0] != xw || in[1] != in[2]) throw ShapeError("simple_rnn_grad: the output gradients do not match the outputs");
      return std::vector<TensorType>{xw, in[2], in[3]};
    },
    .layout = rows({.batch_inputs = {0, 1, 2, 4, 5, 6}, .partial_outputs = {2}}));

SimpleRnnResult simple_rnn(Graph& g, Value xw, Value h0, Value recurrent_kernel, Value mask, Value recurrent_scale,
                           const RecurrentAttrs& attrs) {
  std::vector<Value> in{xw, h0, recurrent_kernel, mask};
  if (recurrent_scale.valid()) in.push_back(recurrent_scale);
  const auto out = g.add_multi("simple_rnn", in, recurrent_detail::attrs(attrs));
  return {out[0], out[1]};
}

}  // namespace tandem::ops
