// What the recurrent ops (ops/lstm.cpp, gru.cpp, simple_rnn.cpp) share: their input checks.
#include "ops/recurrent.h"

#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops::recurrent_detail {

namespace {
void check_activation(const Attrs& a, const char* key, const char* op) {
  const std::string& name = a.s(key);
  if (name != "tanh" && name != "sigmoid" && name != "relu" && name != "linear")
    throw ShapeError(std::string(op) + ": " + key + " must be \"tanh\", \"sigmoid\", \"relu\" or \"linear\", got \"" + name + "\"");
}

void expect(const TensorType& t, const Shape& want, DType dtype, const char* what, const char* op) {
  if (t.shape != want) throw ShapeError(std::string(op) + ": expected " + what + " of shape " + want.str() + ", got " + t.shape.str());
  if (t.dtype != dtype)
    throw ShapeError(std::string(op) + ": expected " + what + " of dtype " + dtype_name(dtype) + ", got " + dtype_name(t.dtype));
}
}  // namespace

Sizes check(const Attrs& a, const std::vector<TensorType>& in, int gates, int mask_input, const TensorType* recurrent_scale,
            const char* op) {
  const TensorType& xw = in[0];
  if (!is_float(xw.dtype)) throw ShapeError(std::string(op) + ": expected a float input, got " + dtype_name(xw.dtype));
  if (xw.shape.rank() != 3 || xw.shape[2] % gates != 0)
    throw ShapeError(std::string(op) + ": expected the projected input (batch, steps, " + std::to_string(gates) +
                     "·units), got " + xw.shape.str());
  const Sizes s{xw.shape[0], xw.shape[1], xw.shape[2] / gates};
  check_activation(a, "activation", op);
  if (gates > 1) check_activation(a, "recurrent_activation", op);
  expect(in[1], Shape{s.batch, s.units}, xw.dtype, "the initial state", op);
  expect(in[static_cast<std::size_t>(mask_input)], Shape{s.batch, s.steps}, xw.dtype, "the mask", op);
  if (recurrent_scale) expect(*recurrent_scale, Shape{s.batch, gates, s.units}, xw.dtype, "the recurrent dropout scale", op);
  return s;
}

Attrs attrs(const RecurrentAttrs& a) {
  return {{"activation", a.activation},
          {"recurrent_activation", a.recurrent_activation},
          {"go_backwards", a.go_backwards},
          {"zero_output_for_mask", a.zero_output_for_mask}};
}

Value dy_or_zeros(GradContext& c, int i) {
  const Value dy = c.dy(i);
  return dy.valid() ? dy : fill(c.g, c.g.type(c.output(i)), 0.0);
}

}  // namespace tandem::ops::recurrent_detail
