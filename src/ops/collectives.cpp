// Communication nodes that strategies insert. A gradient bucket's all-reduce is split in two:
// all_reduce_start runs as soon as the bucket's gradients exist (eager) and hands them to the
// device's communication thread; all_reduce_wait, placed just before the updates, waits for it
// and yields the reduced gradients in the same buffers.
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> check_float_inputs(const std::vector<TensorType>& in) {
  for (const TensorType& t : in)
    if (!is_float(t.dtype)) throw ShapeError(std::string("all_reduce: expected float tensors, got ") + dtype_name(t.dtype));
  return in;
}
}  // namespace

// Attrs: bucket (index in the program), mean (bool), bf16 (bool).
REGISTER_OP(
    .name = "all_reduce_start",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      check_float_inputs(in);
      return std::vector<TensorType>{};
    },
    .has_side_effects = true, .eager = true, .contiguous_inputs = true);

REGISTER_OP(
    .name = "all_reduce_wait",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) { return check_float_inputs(in); },
    .outputs_alias_inputs = true);

}  // namespace tandem::ops
