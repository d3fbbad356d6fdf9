// In-place helpers for gradient accumulation: accumulate(acc, g) adds g into a variable;
// assign_zero(acc) clears it after the update that consumed it.
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "accumulate",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (in[0] != in[1]) throw ShapeError("accumulate: value " + in[1].shape.str() + " does not match accumulator " + in[0].shape.str());
      return std::vector<TensorType>{};
    },
    .writes_inputs = {0}, .has_side_effects = true);

REGISTER_OP(
    .name = "assign_zero", .infer = [](const Attrs&, const std::vector<TensorType>&) { return std::vector<TensorType>{}; },
    .writes_inputs = {0}, .has_side_effects = true);

}  // namespace tandem::ops
