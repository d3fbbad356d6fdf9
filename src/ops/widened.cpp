// Weight gradients of mixed precision: a float32 weight's 16-bit copy gets its gradient in
// float32, with as little rounding to 16 bits on the way as the graph allows. A gradient rounded
// per device or per micro-batch and summed afterwards differs from one rounded once, so without
// this every strategy would differ from Default by about bfloat16's unit.
#include "ops/widened.h"

#include "graph/autocast.h"
#include "tandem/errors.h"

namespace tandem::ops {

DType output_dtype(const Attrs& a, DType in, const char* op) {
  const DType out = a.has("output_dtype") ? static_cast<DType>(a.i("output_dtype")) : in;
  if (out != in && !(out == DType::F32 && graph::is_16bit(in)))
    throw ShapeError(std::string(op) + ": output_dtype " + dtype_name(out) + " is only for bfloat16 or float16 inputs (float32), got " +
                     dtype_name(in));
  return out;
}

Value widened(Graph& g, Value x, DType to) {
  const graph::Node& made = g.node(x.node);
  if (to != DType::F32 || !graph::is_16bit(g.type(x).dtype)) return cast(g, x, to);
  if (made.op == "matmul" || made.op == "conv2d_backprop_filter") {
    graph::Attrs attrs = made.attrs;
    attrs.set("output_dtype", static_cast<int64_t>(DType::F32));
    return g.add(made.op, made.inputs, attrs);
  }
  return cast(g, x, to);
}

}  // namespace tandem::ops
