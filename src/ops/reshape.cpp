// reshape (a view: the CPU kernel is a copy only when buffers differ) and broadcast_to.
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "reshape",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      Shape s(a.ints("shape"));
      if (s.num_elements() != in[0].shape.num_elements())
        throw ShapeError("reshape: cannot reshape " + in[0].shape.str() + " (" + std::to_string(in[0].shape.num_elements()) +
                         " values) to " + s.str() + " (" + std::to_string(s.num_elements()) + " values)");
      return one({s, in[0].dtype});
    },
    .grad = [](GradContext& c) { c.set(0, reshape(c.g, c.dy(), c.input_type(0).shape)); },
    .outputs_alias_inputs = true);

REGISTER_OP(
    .name = "broadcast_to",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      Shape s(a.ints("shape"));
      if (broadcast_shapes(in[0].shape, s, "broadcast_to") != s)
        throw ShapeError("broadcast_to: cannot broadcast " + in[0].shape.str() + " to " + s.str());
      return one({s, in[0].dtype});
    },
    .grad = [](GradContext& c) { c.set(0, sum_to(c.g, c.dy(), c.input_type(0).shape)); });

Value reshape(Graph& g, Value x, Shape shape) {
  if (g.type(x).shape == shape) return x;
  return g.add("reshape", {x}, {{"shape", shape.dims()}});
}

Value broadcast_to(Graph& g, Value x, Shape shape) {
  if (g.type(x).shape == shape) return x;
  return g.add("broadcast_to", {x}, {{"shape", shape.dims()}});
}

}  // namespace tandem::ops
