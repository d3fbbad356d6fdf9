// Keras's regularizer and constraint classes: names, factories, checks, and their graph form.
#include "layer_base/penalties.h"

#include <cmath>
#include <numeric>

#include "ops/constraint.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
graph::Value sum_all(graph::Graph& g, graph::Value x) {
  std::vector<int64_t> axes(static_cast<std::size_t>(g.type(x).shape.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return ops::reduce_sum(g, x, axes);
}

// Keras's OrthogonalRegularizer: rows (or columns) L2-normalised (norm at least ε, as
// ops.normalize), their pairwise products P, factor·0.5·Σ_{i≠j}|P_ij| / (n(n−1)/2). The diagonal
// of P is each normalised row's Σx², so Σ_{i≠j}|P_ij| = Σ|P| − Σx̂².
graph::Value orthogonal_penalty(graph::Graph& g, graph::Value x, const Regularizer& r, const std::string& owner) {
  const TensorType t = g.type(x);
  if (t.shape.rank() != 2)
    throw ValueError(owner + ": OrthogonalRegularizer needs a 2-D value (Keras's rank-2 inputs), got shape " + t.shape.str());
  const bool rows = r.mode == "rows";
  const int64_t axis = rows ? 1 : 0, size = t.shape[rows ? 0 : 1];
  const graph::Value norms = ops::sqrt(g, ops::reduce_sum(g, ops::square(g, x), {axis}, true));
  const graph::Value xn = ops::div(g, x, ops::maximum(g, norms, ops::fill(g, {Shape{}, t.dtype}, ops::kConstraintEpsilon)));
  const graph::Value p = rows ? ops::matmul(g, xn, xn, false, true) : ops::matmul(g, xn, xn, true, false);
  const graph::Value off = ops::sub(g, sum_all(g, ops::abs(g, p)), sum_all(g, ops::square(g, xn)));
  const double pairs = double(size) * (double(size) - 1.0) / 2.0;
  return ops::scale(g, off, r.factor * 0.5 / pairs);  // Keras divides by 0 pairs too (one row: NaN)
}

}  // namespace

graph::Value regularization_penalty(graph::Graph& g, graph::Value x, const Regularizer& r, const std::string& owner) {
  check_regularizer(r, owner);
  const DType dtype = g.type(x).dtype;
  if (r.class_name == "OrthogonalRegularizer") return orthogonal_penalty(g, x, r, owner);
  // L1: l1·Σ|x|; L2: l2·Σx²; L1L2 adds the terms whose factor is not 0 (0 when both are), as Keras.
  graph::Value out;
  auto add = [&](graph::Value term) { out = out.valid() ? ops::add(g, out, term) : term; };
  const bool l1 = r.class_name == "L1" || (r.class_name == "L1L2" && r.l1 != 0.0);
  const bool l2 = r.class_name == "L2" || (r.class_name == "L1L2" && r.l2 != 0.0);
  if (l1) add(ops::scale(g, sum_all(g, ops::abs(g, x)), r.l1));
  if (l2) add(ops::scale(g, sum_all(g, ops::square(g, x)), r.l2));
  return out.valid() ? out : ops::fill(g, {Shape{}, dtype}, 0.0);
}

void emit_constraint(graph::Graph& g, graph::Value variable, const Constraint& c, std::vector<int> after, const std::string& owner) {
  check_constraint(c, owner);
  const int rank = g.type(variable).shape.rank();
  std::vector<int64_t> axes;
  if (c.class_name != "NonNeg")
    for (int64_t a : c.axis) {
      const int64_t at = a < 0 ? a + rank : a;
      if (at < 0 || at >= rank)
        throw ValueError(owner + ": constraint " + c.class_name + " axis " + std::to_string(a) + " is outside a weight of shape " +
                         g.type(variable).shape.str());
      axes.push_back(at);
    }
  const auto kind = c.class_name == "NonNeg" ? ops::ConstraintKind::NonNeg
                    : c.class_name == "UnitNorm" ? ops::ConstraintKind::UnitNorm
                                                 : ops::ConstraintKind::MinMaxNorm;
  const double min_value = c.class_name == "MaxNorm" ? 0.0 : c.min_value, rate = c.class_name == "MaxNorm" ? 1.0 : c.rate;
  graph::ScopeGuard phase(g, graph::Phase::Update);
  graph::ScopeGuard scope(g, g.node(variable.node).scope);
  g.add_multi("apply_constraint", {variable},
              {{"kind", static_cast<int64_t>(kind)}, {"axes", axes}, {"min_value", min_value}, {"max_value", c.max_value}, {"rate", rate}});
  g.node(g.size() - 1).after = std::move(after);
}

}  // namespace tandem
