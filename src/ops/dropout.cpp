// Inverted dropout. The keep/drop decision for element (row, column) is a hash of (seed, step,
// global row index, column): no mask is stored, the gradient recomputes it, and splitting a batch
// across devices (each with its row_offset) cannot change which elements drop. With the attribute
// "mask_period" p > 0 the hash takes column mod p instead, so the columns p apart share a
// decision: spatial dropout of channels-last images with p = channels drops whole channels.
#include "ops/conv.h"
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

namespace {
Attrs dropout_attrs(Graph& g, Value x, double rate, uint64_t seed) {
  const int64_t rows = g.type(x).shape.rank() ? g.type(x).shape[0] : 1;
  return {{"rate", rate}, {"seed", static_cast<int64_t>(seed)}, {"row_offset", int64_t{0}}, {"micro_rows", rows}};
}
}  // namespace

Value dropout(Graph& g, Value x, Value step, double rate, uint64_t seed) {
  return g.add("dropout", {x, step}, dropout_attrs(g, x, rate, seed));
}

Value spatial_dropout(Graph& g, Value x, Value step, double rate, uint64_t seed) {
  const Shape& s = g.type(x).shape;
  if (s.rank() < 2) throw ShapeError("spatial_dropout: expected a tensor (batch, ..., channels), got " + s.str());
  Attrs a = dropout_attrs(g, x, rate, seed);
  a.set("mask_period", s[s.rank() - 1]);
  return g.add("dropout", {x, step}, std::move(a));
}

}  // namespace tandem::ops
