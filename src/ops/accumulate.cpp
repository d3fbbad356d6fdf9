// micro_sum(v): the sum of v over the micro-batches of a step. A step of m micro-batches runs
// the forward and backward blocks once per micro-batch; micro_sum copies v on the first and adds
// it on the others, so the update (and the fetched loss) sees the whole batch's value. Its
// output lives for the step, not for one micro-batch (compile/plan.h says how it is placed).
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "micro_sum",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      if (!is_float(in[0].dtype)) throw ShapeError(std::string("micro_sum: expected a float tensor, got ") + dtype_name(in[0].dtype));
      return one(in[0]);
    },
    .layout = elementwise({{0}}));

Value micro_sum(Graph& g, Value v) { return g.add("micro_sum", {v}); }

}  // namespace tandem::ops
