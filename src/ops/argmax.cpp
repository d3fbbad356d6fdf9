// argmax and equal: the integer-valued ops behind accuracy metrics. No gradient flows through them.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "argmax",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const int axis = normalize_axis(a.i("axis"), in[0].shape.rank(), "argmax");
      std::vector<int64_t> out = in[0].shape.dims();
      out.erase(out.begin() + axis);
      return one({Shape(out), DType::I64});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0}, .axis_attr = "axis"}));

REGISTER_OP(
    .name = "equal",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0].dtype != in[1].dtype || in[0].shape != in[1].shape)
        throw ShapeError("equal: operands must match, got " + std::string(dtype_name(in[0].dtype)) + " " +
                         in[0].shape.str() + " and " + dtype_name(in[1].dtype) + " " + in[1].shape.str());
      return one({in[0].shape, static_cast<DType>(a.i("dtype"))});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0, 1}}));

// binary_accuracy(pred, target): per row, the fraction of positions where (pred > threshold)
// agrees with the 0/1 target — Keras's binary_accuracy.
REGISTER_OP(
    .name = "binary_accuracy",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[0].shape != in[1].shape || in[0].shape.rank() < 1)
        throw ShapeError("binary_accuracy: targets " + in[1].shape.str() + " must match predictions " + in[0].shape.str());
      return one({Shape(std::vector<int64_t>(in[0].shape.dims().begin(), in[0].shape.dims().end() - 1)), DType::F32});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0, 1}}));

Value argmax(Graph& g, Value x, int axis) { return g.add("argmax", {x}, {{"axis", int64_t{axis}}}); }
Value equal(Graph& g, Value a, Value b) {
  return g.add("equal", {a, b}, {{"dtype", static_cast<int64_t>(DType::F32)}});
}

}  // namespace tandem::ops
