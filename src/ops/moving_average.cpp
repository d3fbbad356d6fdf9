// assign_moving_average: the in-place update of BatchNormalization's moving statistics.
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

// (variable, value): variable = variable·momentum + value·(1 − momentum); attr momentum.
REGISTER_OP(
    .name = "assign_moving_average",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0] != in[1])
        throw ShapeError("assign_moving_average: value " + std::string(dtype_name(in[1].dtype)) + " " + in[1].shape.str() +
                         " does not match variable " + dtype_name(in[0].dtype) + " " + in[0].shape.str());
      if (!is_float(in[0].dtype)) throw ShapeError("assign_moving_average: expected a float variable");
      const double m = a.f("momentum");
      if (!(m >= 0.0 && m <= 1.0)) throw ShapeError("assign_moving_average: momentum must be in [0, 1], got " + std::to_string(m));
      return std::vector<TensorType>{};
    },
    .writes_inputs = {0}, .has_side_effects = true);

void assign_moving_average(Graph& g, Value variable, Value value, double momentum) {
  graph::ScopeGuard phase(g, graph::Phase::Update);
  g.add_multi("assign_moving_average", {variable, value}, {{"momentum", momentum}});
}

}  // namespace tandem::ops
