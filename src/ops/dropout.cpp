// Inverted dropout. The keep/drop decision for element (row, column) is a hash of (seed, step,
// global row index, column): no mask is stored, the gradient recomputes it, and splitting a batch
// across devices (each with its row_offset) cannot change which elements drop.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// Each device's rows keep their global indices, so the masks are the single-device ones.
void local_row_offset(Attrs& attrs, const graph::Signature& sig, int position) {
  if (sig.in[0].is_split()) attrs.set("row_offset", attrs.i("row_offset") + sig.in[0].offset(position));
}
}  // namespace

REGISTER_OP(
    .name = "dropout",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const double rate = a.f("rate");
      if (!(rate >= 0.0 && rate < 1.0)) throw ShapeError("dropout: rate must be in [0, 1), got " + std::to_string(rate));
      if (!is_float(in[0].dtype) || in[0].shape.rank() < 1) throw ShapeError("dropout: expected a float tensor with a batch axis");
      if (in[1].dtype != DType::I64 || in[1].shape.rank() != 0) throw ShapeError("dropout: the step input must be an int64 scalar");
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      // The same mask and scale applied to dy is exactly the gradient.
      c.set(0, c.g.add("dropout", {c.dy(), c.input(1)}, c.attrs()));
    }, .layout = rows({.batch_inputs = {0}, .linear = {{0}}}), .localize = local_row_offset);

Value dropout(Graph& g, Value x, Value step, double rate, uint64_t seed) {
  const int64_t rows = g.type(x).shape.rank() ? g.type(x).shape[0] : 1;
  return g.add("dropout", {x, step},
               {{"rate", rate}, {"seed", static_cast<int64_t>(seed)}, {"row_offset", int64_t{0}}, {"micro_rows", rows}});
}

}  // namespace tandem::ops
