// Keras's weight constraints (MaxNorm, NonNeg, UnitNorm, MinMaxNorm) applied in place, written once
// for the CPU and CUDA kernels. The weight is cut into groups: one per index of the axes the norm
// does not run over; each group's L2 norm over the other axes rescales it. One thread (or loop
// iteration) owns a group, so each group is summed in one fixed order: bitwise-equal results on
// any number of threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.h"
#include "ops/constraint.h"
#include "tandem/errors.h"
#include "tandem/tensor.h"

namespace tandem::backend {

using ops::ConstraintKind;
using ops::kConstraintEpsilon;

struct ConstraintGeometry {
  static constexpr int kMaxRank = 8;
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};      // element strides
  int64_t reduced_dims[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  int64_t groups = 1, per_group = 1;
};

// The groups of `shape` when the norm runs over `axes` (already in [0, rank)).
inline ConstraintGeometry constraint_geometry(const Shape& shape, const std::vector<int64_t>& axes) {
  ConstraintGeometry g;
  if (shape.rank() > ConstraintGeometry::kMaxRank)
    throw ShapeError("apply_constraint: weights of rank up to 8 are supported, got " + shape.str());
  int64_t stride = 1;
  for (int a = shape.rank() - 1; a >= 0; --a) {
    bool reduced = false;
    for (int64_t r : axes) reduced = reduced || r == a;
    if (reduced) {
      g.reduced_dims[g.reduced_rank] = shape[a], g.reduced_strides[g.reduced_rank++] = stride, g.per_group *= shape[a];
    } else {
      g.kept_dims[g.kept_rank] = shape[a], g.kept_strides[g.kept_rank++] = stride, g.groups *= shape[a];
    }
    stride *= shape[a];
  }
  return g;
}

// The flat index of element r of group `group` (both counted innermost axis first).
TANDEM_HD int64_t constraint_element(const ConstraintGeometry& g, int64_t group, int64_t r) {
  int64_t at = 0;
  for (int i = 0; i < g.kept_rank; ++i) at += (group % g.kept_dims[i]) * g.kept_strides[i], group /= g.kept_dims[i];
  for (int i = 0; i < g.reduced_rank; ++i) at += (r % g.reduced_dims[i]) * g.reduced_strides[i], r /= g.reduced_dims[i];
  return at;
}

// Keras's formulas, in the weight's dtype: norms = sqrt(Σ w²); desired = rate·clip(norms, min, max)
// + (1 − rate)·norms (UnitNorm: 1); w·desired/(ε + norms). NonNeg: max(w, 0) (NaN stays NaN).
template <class T>
TANDEM_HD void constrain_group(T* w, const ConstraintGeometry& g, int64_t group, ConstraintKind kind, T min_value, T max_value,
                               T rate) {
  if (kind == ConstraintKind::NonNeg) {
    for (int64_t r = 0; r < g.per_group; ++r) {
      T& x = w[constraint_element(g, group, r)];
      x = x < T(0) ? T(0) : x;
    }
    return;
  }
  T sum = T(0);
  for (int64_t r = 0; r < g.per_group; ++r) {
    const T x = w[constraint_element(g, group, r)];
    sum += x * x;
  }
  const T norm = std::sqrt(sum);
  T desired = T(1);
  if (kind == ConstraintKind::MinMaxNorm) {
    const T clipped = norm < min_value ? min_value : (norm > max_value ? max_value : norm);
    desired = rate * clipped + (T(1) - rate) * norm;
  }
  const T factor = desired / (T(kConstraintEpsilon) + norm);
  for (int64_t r = 0; r < g.per_group; ++r) w[constraint_element(g, group, r)] *= factor;
}

}  // namespace tandem::backend
