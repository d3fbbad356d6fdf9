// one_hot: integer class ids to rows of 0s with a 1 at the id (keras.ops.one_hot). An id outside
// [0, depth) gives a row of zeros, as in Keras and PyTorch's scatter-free variants.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "one_hot",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0].dtype != DType::I32 && in[0].dtype != DType::I64)
        throw ShapeError(std::string("one_hot: expected integer class ids (int32 or int64), got ") + dtype_name(in[0].dtype));
      const DType out = static_cast<DType>(a.i("dtype"));
      if (!is_float(out)) throw ShapeError(std::string("one_hot: the result dtype must be a float, got ") + dtype_name(out));
      std::vector<int64_t> dims = in[0].shape.dims();
      dims.push_back(a.i("depth"));
      return one({Shape(dims), out});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0}}));

Value one_hot(Graph& g, Value ids, int64_t depth, DType dtype) {
  if (depth <= 0) throw ValueError("one_hot: depth must be positive, got " + std::to_string(depth));
  return g.add("one_hot", {ids}, {{"depth", depth}, {"dtype", static_cast<int64_t>(dtype)}});
}

}  // namespace tandem::ops
